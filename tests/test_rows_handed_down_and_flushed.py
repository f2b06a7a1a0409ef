"""A row loaded without a lock by one function and handed down (directly, or through a function that only passes
it on) to a helper that changes a column from its own value and flushes or commits the session itself: two
workers start from the same value and one change is lost.  A helper that lets the database add, or a row loaded
with a lock, is safe."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """
    from sqlalchemy import Integer
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class Wallet(Base):
        __tablename__ = "wallets"
        id: Mapped[int] = mapped_column(Integer, primary_key=True)
        credits: Mapped[int] = mapped_column(Integer, default=0)
    """

HELPERS = """
    from sqlalchemy import update
    from sqlalchemy.orm import Session

    from shop.models import Wallet


    def top_up(db: Session, wallet: Wallet, amount: int) -> int:
        {change}
        db.{send}()
        return wallet.credits
    """

SERVICE = """
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from shop.helpers import top_up
    from shop.models import Wallet


    def _pass_on(db: Session, wallet: Wallet, amount: int) -> int:
        return top_up(db, wallet, amount)


    def credit(db: Session, wallet_id: int, amount: int) -> int:
        wallet = {load}
        return {through}(db, wallet, amount)
    """

ARITHMETIC = "wallet.credits = wallet.credits + amount"
IN_SQL = ("db.execute(update(Wallet).where(Wallet.id == wallet.id)"
          ".values(credits=Wallet.credits + amount))")
PLAIN = "db.get(Wallet, wallet_id)"
LOCKED = "db.scalars(select(Wallet).where(Wallet.id == wallet_id).with_for_update()).one()"


def _project(tmp_path, change, load, through="_pass_on", send="flush"):
    write(tmp_path, {"shop/__init__.py": "", "shop/models.py": MODELS,
                     "shop/helpers.py": HELPERS.format(change=change, send=send),
                     "shop/service.py": SERVICE.format(load=load, through=through)})
    return findings(tmp_path, "shop/helpers.py", codes=("OG301",))


@pytest.mark.parametrize("through", ["_pass_on", "top_up"])
@pytest.mark.parametrize("send", ["flush", "commit"])
def test_a_row_handed_down_and_flushed_by_the_helper(tmp_path, through, send):
    assert _project(tmp_path, ARITHMETIC, PLAIN, through, send) == [(9, "OG301")]


def test_the_database_adds(tmp_path):
    assert _project(tmp_path, IN_SQL, PLAIN) == []


def test_a_row_loaded_with_a_lock(tmp_path):
    assert _project(tmp_path, ARITHMETIC, LOCKED) == []
