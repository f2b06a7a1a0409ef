"""OG301: a row changed from its own value and written back by a method of the same class that commits the
session it was loaded through (``await self._save()`` whose body is ``await self.session.commit()``) is a
lost update, as a ``commit()`` written in place is; a helper committing another session writes nothing back,
and a row loaded ``with_for_update`` is serialised."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

REPOSITORY = """\
    from sqlalchemy.ext.asyncio import AsyncSession

    from till.models import Voucher


    class Vouchers:
        def __init__(self, session: AsyncSession) -> None:
            self.session = session

        async def find(self, code: str) -> Voucher | None:
            return await self.session.get(Voucher, code{lock})
"""

SERVICE = """\
    from sqlalchemy.ext.asyncio import AsyncSession

    from till.repository import Vouchers


    class Redemptions:
        def __init__(self, session: AsyncSession, audit: AsyncSession) -> None:
            self.session = session
            self.audit = audit
            self.vouchers = Vouchers(session)

        async def redeem(self, code: str, cents: int) -> int:
            voucher = await self.vouchers.find(code)
            if voucher is None or voucher.remaining < cents:
                raise ValueError(code)
            voucher.remaining -= cents
            await self.{helper}()
            return voucher.remaining

        async def _save(self) -> None:
            try:
                await self.session.commit()
            except Exception:
                await self.session.rollback()
                raise

        async def _save_audit(self) -> None:
            await self.audit.commit()
"""

MODELS = """\
    from sqlalchemy import Integer, String
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class Voucher(Base):
        __tablename__ = "vouchers"
        code: Mapped[str] = mapped_column(String, primary_key=True)
        remaining: Mapped[int] = mapped_column(Integer)
"""


@pytest.mark.parametrize("helper, lock, expected", [
    ("_save", "", [(16, "OG301")]),
    ("_save_audit", "", []),
    ("_save", ", with_for_update=True", []),
])
def test_a_commit_through_a_method_of_the_class(tmp_path, helper, lock, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'till'\n", "till/__init__.py": "",
                     "till/models.py": MODELS, "till/repository.py": REPOSITORY.format(lock=lock),
                     "till/service.py": SERVICE.format(helper=helper)})
    assert findings(tmp_path, "till/service.py", codes=("OG301",)) == expected
