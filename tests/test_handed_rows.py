"""OG302: rows an ORM pickup hands one by one to code that moves them out of their state.

``batch = await repo.next_batch(session, 20)`` then ``tg.create_task(send_packet(packet))`` for each row, where
``send_packet`` calls ``repo.mark_sent(session, packet.id, ...)`` running ``update(Packet)...values(status=
"sent")``: the mark is the pickup's write, made by the code the row was handed to.  Reported at the call that
picks.  A pickup that claims its rows (``with_for_update(skip_locked=True)``) is not.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """\
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class Packet(Base):
        __tablename__ = "packets"
        id: Mapped[int] = mapped_column(primary_key=True)
        status: Mapped[str]
"""

REPO = """\
    from sqlalchemy import select, update
    from sqlalchemy.ext.asyncio import AsyncSession

    from notary.models import Packet


    async def next_batch(session: AsyncSession, limit: int) -> list[Packet]:
        result = await session.scalars(select(Packet).where(Packet.status == "queued").limit(limit))
        return list(result.all())


    async def mark_sent(session: AsyncSession, packet_id: int) -> None:
        await session.execute(update(Packet).where(Packet.id == packet_id).values(status="sent"))
"""

WORKER = """\
    import asyncio

    import httpx

    from notary import repo
    from notary.db import Session


    async def send_packet(packet) -> None:
        await httpx.AsyncClient().post("https://esign.example.org/envelopes", json={"id": packet.id})
        async with Session.begin() as session:
            await repo.mark_sent(session, packet.id)


    async def poll_once() -> int:
        async with Session() as session:
            batch = await repo.next_batch(session, 20)
        async with asyncio.TaskGroup() as tg:
            for packet in batch:
                tg.create_task(send_packet(packet))
        return len(batch)
"""

DB = """\
    from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

    Session = async_sessionmaker(create_async_engine("postgresql+asyncpg://db/notary"))
"""


def _project(tmp_path, repo: str = REPO, worker: str = WORKER) -> None:
    write(tmp_path, {"notary/__init__.py": "", "notary/models.py": MODELS, "notary/repo.py": repo,
                     "notary/worker.py": worker, "notary/db.py": DB})


@pytest.mark.parametrize("worker", [
    WORKER,
    WORKER.replace("""        async with asyncio.TaskGroup() as tg:
            for packet in batch:
                tg.create_task(send_packet(packet))""", """        for packet in batch:
            await send_packet(packet)"""),
], ids=["as-tasks", "awaited-in-turn"])
def test_rows_handed_to_code_that_marks_them_are_picked_where_they_are_loaded(tmp_path, worker):
    _project(tmp_path, worker=worker)
    assert findings(tmp_path, "notary/worker.py", codes=("OG302",)) == [(17, "OG302")]


def test_a_pickup_that_claims_its_rows_is_not_reported(tmp_path):
    claimed = REPO.replace('.where(Packet.status == "queued").limit(limit)',
                           '.where(Packet.status == "queued").limit(limit).with_for_update(skip_locked=True)')
    _project(tmp_path, repo=claimed)
    assert findings(tmp_path, "notary/worker.py", codes=("OG302",)) == []


def test_rows_handed_to_code_that_does_not_move_them_are_not_a_pickup(tmp_path):
    _project(tmp_path, worker=WORKER.replace("            await repo.mark_sent(session, packet.id)\n",
                                              "            pass\n"))
    assert findings(tmp_path, "notary/worker.py", codes=("OG302",)) == []


def test_rows_handed_to_code_that_only_persists_their_new_state_are_no_duplicate_work(tmp_path):
    only_state = WORKER.replace(
        """        await httpx.AsyncClient().post("https://esign.example.org/envelopes", json={"id": packet.id})
""", "")
    _project(tmp_path, worker=only_state)
    assert findings(tmp_path, "notary/worker.py", codes=("OG302",)) == []
