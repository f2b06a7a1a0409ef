"""OG301: a row loaded by another method of the same object, through the session the object keeps.

``card = self._card(code)`` where ``_card`` returns ``self._session.scalar(select(Card)...)``, then
``card.balance -= amount`` and ``self._session.commit()``: the caller changes the row the helper loaded through
the very session it commits, from the value loaded.  Loaded with ``with_for_update()`` the row is locked until
the commit.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LEDGER = """\
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from .models import Voucher


    class VoucherBook:
        def __init__(self, session: Session) -> None:
            self._session = session

        def _voucher(self, code: str) -> Voucher:
            found = self._session.scalar(select(Voucher).where(Voucher.code == code){lock})
            if found is None:
                raise LookupError(code)
            return found

        def spend(self, code: str, amount: int) -> int:
            voucher = self._voucher(code)
            if voucher.remaining < amount:
                raise ValueError("not enough left")
            voucher.remaining -= amount
            self._session.commit()
            return voucher.remaining
"""

MODELS = """\
    from sqlalchemy import Integer, String
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class Voucher(Base):
        __tablename__ = "vouchers"
        id: Mapped[int] = mapped_column(Integer, primary_key=True)
        code: Mapped[str] = mapped_column(String, unique=True)
        remaining: Mapped[int] = mapped_column(Integer)
"""


@pytest.mark.parametrize("lock, reported", [("", [(21, "OG301")]), (".with_for_update()", [])])
def test_a_row_another_method_of_the_object_loads(tmp_path, lock, reported):
    write(tmp_path, {"shop/__init__.py": "", "shop/models.py": MODELS,
                     "shop/book.py": LEDGER.replace("{lock}", lock)})
    assert findings(tmp_path, "shop/book.py", codes=("OG301",)) == reported


BEGIN_BLOCK = """\
    from sqlalchemy import select
    from sqlalchemy.ext.asyncio import AsyncSession

    from .models import Voucher


    class VoucherBook:
        def __init__(self, session: AsyncSession) -> None:
            self.session = session

        async def spend(self, code: str, amount: int) -> int:
            async with self.session.begin():
                voucher = await self.session.scalar(select(Voucher).where(Voucher.code == code){lock})
                voucher.remaining -= amount
            return voucher.remaining
"""


@pytest.mark.parametrize("lock, reported", [("", [(14, "OG301")]), (".with_for_update()", [])])
def test_a_row_changed_inside_the_sessions_begin_block_is_committed_by_its_end(tmp_path, lock, reported):
    write(tmp_path, {"shop/__init__.py": "", "shop/models.py": MODELS,
                     "shop/book.py": BEGIN_BLOCK.replace("{lock}", lock)})
    assert findings(tmp_path, "shop/book.py", codes=("OG301",)) == reported
