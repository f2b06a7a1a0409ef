"""Rows picked by their state in one session and each read again by its key in another (``row =
tx.get(Payout, payout.id)``), moved out of that state there and committed: the picked rows are moved, as when the
loop's own row is changed, and two replicas that pick the same rows both move them."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """
    from sqlalchemy import Integer, String, create_engine
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, sessionmaker


    class Base(DeclarativeBase):
        pass


    class Payout(Base):
        __tablename__ = "payouts"
        id: Mapped[int] = mapped_column(Integer, primary_key=True)
        status: Mapped[str] = mapped_column(String, default="pending")


    Session = sessionmaker(create_engine("postgresql://db/payouts"))
    """

SERVICE = """
    import httpx
    from sqlalchemy import select

    from .models import Payout, Session


    def settle_pending():
        with Session() as session:
            pending = session.scalars(select(Payout).where(Payout.status == "pending"){lock}).all()
        for payout in pending:
            httpx.post("https://bank.example.com/transfers", json={{"payout": payout.id}})
            {write}
    """

IN_BEGIN_BLOCK = """with Session.begin() as tx:
                row = tx.get(Payout, payout.id)
                row.status = "paid\""""
COMMITTED = """tx = Session()
            row = tx.get(Payout, payout.id)
            row.status = "paid"
            tx.commit()"""


@pytest.mark.parametrize("write_back", [IN_BEGIN_BLOCK, COMMITTED])
@pytest.mark.parametrize("lock, expected", [("", [(10, "OG302")]), (".with_for_update(skip_locked=True)", [])])
def test_picked_rows_moved_through_a_second_read(tmp_path, write_back, lock, expected):
    write(tmp_path, {"payouts/__init__.py": "", "payouts/models.py": MODELS,
                     "payouts/service.py": SERVICE.format(lock=lock, write=write_back)})
    assert findings(tmp_path, "payouts/service.py", codes=("OG302",)) == expected
