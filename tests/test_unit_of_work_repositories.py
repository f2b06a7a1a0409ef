"""Rows loaded through a repository a unit of work makes with the session it holds, where the repository is a
generic base (``Repository[Venue]`` with ``model = Venue``: its ``__init__`` and loaders are the base's) and the
unit of work comes from a factory an object keeps (``Callable[[], Work]``): OG301 when a column is changed from
its own value and the unit of work commits, OG302 when rows picked by their state are moved on and committed."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class Venue(Base):
        __tablename__ = "venues"
        id: Mapped[int] = mapped_column(primary_key=True)
        free_seats: Mapped[int] = mapped_column()


    class Ticket(Base):
        __tablename__ = "tickets"
        id: Mapped[int] = mapped_column(primary_key=True)
        state: Mapped[str] = mapped_column()
        body: Mapped[str] = mapped_column()
    """

REPOS = """
    from typing import Generic, TypeVar

    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from .models import Base, Ticket, Venue

    T = TypeVar("T", bound=Base)


    class Repository(Generic[T]):
        model: type[T]

        def __init__(self, session: Session) -> None:
            self._session = session

        def by_id(self, key: int) -> T | None:
            return self._session.get(self.model, key)

        def by_id_locked(self, key: int) -> T | None:
            return self._session.get(self.model, key, with_for_update=True)


    class VenueRepository(Repository[Venue]):
        model = Venue


    class TicketRepository(Repository[Ticket]):
        model = Ticket

        def waiting(self, limit: int) -> list[Ticket]:
            stmt = select(Ticket).where(Ticket.state == "waiting").limit(limit){lock}
            return list(self._session.scalars(stmt))
    """

WORK = """
    from sqlalchemy.orm import Session, sessionmaker

    from .repos import TicketRepository, VenueRepository


    class Work:
        venues: VenueRepository

        def __init__(self, make_session: sessionmaker[Session]) -> None:
            self._make = make_session

        def __enter__(self) -> "Work":
            self._session = self._make()
            self.venues = VenueRepository(self._session)
            self.tickets = TicketRepository(self._session)
            return self

        def __exit__(self, *exc) -> None:
            self._session.close()

        def commit(self) -> None:
            self._session.commit()
    """

BOOKING = """
    from typing import Callable

    from .work import Work


    class Booking:
        def __init__(self, work_factory: Callable[[], Work]) -> None:
            self._work = work_factory

        def reserve(self, venue_id: int, count: int) -> int:
            with {opened} as work:
                venue = work.venues.{load}(venue_id)
                venue.free_seats = venue.free_seats - count
                work.commit()
                return venue.free_seats
    """

PRINTER = """
    from .work import Work


    def print_batch(make_session, printer) -> int:
        with Work(make_session) as work:
            tickets = work.tickets.waiting(20)
            for ticket in tickets:
                printer.send(ticket.body)
                ticket.state = "printed"
            work.commit()
            return len(tickets)
    """


def _project(tmp_path, lock: str = "", **booking) -> None:
    write(tmp_path, {"venues/__init__.py": "", "venues/models.py": MODELS,
                     "venues/repos.py": REPOS.replace("{lock}", lock), "venues/work.py": WORK,
                     "venues/booking.py": BOOKING.format(**booking), "venues/printer.py": PRINTER})


@pytest.mark.parametrize("opened", ["self._work()", "Work(self._work)"])
def test_a_column_changed_from_a_row_the_generic_repository_loads(tmp_path, opened):
    _project(tmp_path, opened=opened, load="by_id")
    assert findings(tmp_path, "venues/booking.py", codes=("OG301",)) == [(14, "OG301")]


def test_the_row_loaded_under_a_lock_by_the_generic_repository(tmp_path):
    _project(tmp_path, opened="self._work()", load="by_id_locked")
    assert findings(tmp_path, "venues/booking.py", codes=("OG301",)) == []


def test_a_subclass_loader_of_its_own_model(tmp_path):
    _project(tmp_path, opened="self._work()", load="by_id")
    repos = (tmp_path / "venues/repos.py").read_text().replace(
        "        model = Venue\n",
        "        model = Venue\n\n        def by_id(self, key: int) -> Venue | None:\n"
        "            return self._session.get(Venue, key)\n")
    (tmp_path / "venues/repos.py").write_text(repos)
    assert findings(tmp_path, "venues/booking.py", codes=("OG301",)) == [(14, "OG301")]


def test_rows_picked_by_a_repository_of_the_unit_of_work(tmp_path):
    _project(tmp_path, opened="self._work()", load="by_id_locked")
    assert findings(tmp_path, "venues/printer.py", codes=("OG302",)) == [(7, "OG302")]


def test_rows_picked_and_locked_by_a_repository_of_the_unit_of_work(tmp_path):
    _project(tmp_path, lock=".with_for_update(skip_locked=True)", opened="self._work()", load="by_id_locked")
    assert findings(tmp_path, "venues/printer.py", codes=("OG302",)) == []
