"""A lock a method of a project class hands back, made on first use and kept per key in the instance's
container (``self._held.get(key)``), is one lock per key and process; a row added to the session of a
``sessions.begin()`` block is written when the block ends.  Held around a read and that write, the lock
excludes nothing in the other replicas (OG606); reading the row with ``with_for_update`` serialises it."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LATCHES = """
    import asyncio


    class Latches:
        def __init__(self):
            self._held = {}

        def get(self, key: str) -> asyncio.Lock:
            latch = self._held.get(key)
            if latch is None:
                latch = asyncio.Lock()
                self._held[key] = latch
            return latch
    """

BOOKINGS = """
    from sqlalchemy import func, select

    from .latches import Latches
    from .models import Booking, Room


    class Bookings:
        def __init__(self, sessions, latches: Latches):
            self.sessions = sessions
            self.latches = latches

        async def book(self, room_id: int, nights: int):
            async with self.latches.get(f"room:{room_id}"):
                async with self.sessions.begin() as session:
                    room = await session.get(Room, room_id{lock})
                    taken = await session.scalar(select(func.count(Booking.id)).where(Booking.room_id == room_id))
                    if taken >= room.beds:
                        raise ValueError("full")
                    session.add(Booking(room_id=room_id, nights=nights))
    """

MODELS = """
    from sqlalchemy import Column, ForeignKey, Integer
    from sqlalchemy.orm import declarative_base

    Base = declarative_base()


    class Room(Base):
        __tablename__ = "rooms"
        id = Column(Integer, primary_key=True)
        beds = Column(Integer)


    class Booking(Base):
        __tablename__ = "bookings"
        id = Column(Integer, primary_key=True)
        room_id = Column(Integer, ForeignKey("rooms.id"))
        nights = Column(Integer)
    """


@pytest.mark.parametrize("lock, expected", [("", [(14, "OG606")]), (", with_for_update=True", [])])
def test_a_lock_a_registry_method_hands_back_around_a_session_block(tmp_path, lock, expected):
    write(tmp_path, {"inn/__init__.py": "", "inn/latches.py": LATCHES, "inn/models.py": MODELS,
                     "inn/bookings.py": BOOKINGS.replace("{lock}", lock)})
    assert findings(tmp_path, "inn/bookings.py", codes=("OG606",)) == expected
