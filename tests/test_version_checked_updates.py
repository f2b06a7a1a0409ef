"""A SQLAlchemy Core UPDATE that writes a value computed in Python from an earlier SELECT, but only where a column
it also changes still holds what was read (``.where(Seat.rev == seat.rev).values(free=left, rev=seat.rev + 1)``):
a compare-and-set, whose loser changes nothing.  The same UPDATE keyed by the id alone overwrites (OG301)."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODEL = """
    from sqlalchemy import Integer
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class Seat(Base):
        __tablename__ = "seats"

        id: Mapped[int] = mapped_column(primary_key=True)
        free: Mapped[int] = mapped_column(Integer)
        rev: Mapped[int] = mapped_column(Integer, default=0)
    """

BOOKING = """
    {update_import}
    from sqlalchemy.orm import Session

    from halls.models import Seat


    def book(session: Session, seat_id: int, count: int) -> bool:
        seat = session.scalar(select(Seat).where(Seat.id == seat_id))
        left = seat.free - count
        result = session.execute(
            {update}(Seat)
            .where(Seat.id == seat.id{guard})
            .values(free=left{bump})
        )
        session.commit()
        return result.rowcount == 1
    """

VERSIONED = (", Seat.rev == seat.rev", ", rev=seat.rev + 1")
SPLIT = (").where(Seat.rev == seat.rev", ", rev=Seat.rev + 1")
UNGUARDED = ("", "")


def _check(tmp_path, guard, bump, update_import="from sqlalchemy import select, update", update="update"):
    write(tmp_path, {"halls/__init__.py": "", "halls/models.py": MODEL,
                     "halls/booking.py": BOOKING.format(guard=guard, bump=bump, update_import=update_import,
                                                        update=update)})
    return findings(tmp_path, "halls/booking.py", codes=("OG301",))


@pytest.mark.parametrize("guard, bump", [VERSIONED, SPLIT])
def test_an_update_checking_the_version_it_bumps(tmp_path, guard, bump):
    assert _check(tmp_path, guard, bump) == []


def test_the_update_imported_under_another_name(tmp_path):
    assert _check(tmp_path, *VERSIONED, update_import="import sqlalchemy as sa\n    from sqlalchemy import select",
                  update="sa.update") == []


def test_an_update_keyed_by_the_id_alone(tmp_path):
    assert _check(tmp_path, *UNGUARDED) == [(12, "OG301")]


def test_unguarded_under_another_name(tmp_path):
    assert _check(tmp_path, *UNGUARDED, update_import="import sqlalchemy as sa\n    from sqlalchemy import select",
                  update="sa.update") == [(13, "OG301")]
