"""OG301 through a unit of work: ``async with self._uow as uow`` binds what its ``__aenter__`` returns (itself),
``uow.wallets`` is the repository it made with the session it holds, the repository's ``get`` loads the row
through that session, and ``uow.commit()`` commits it: a balance changed in Python between them is a lost
update unless the load locks the row."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """\
    from sqlalchemy import Integer
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class Wallet(Base):
        __tablename__ = "wallets"
        id: Mapped[int] = mapped_column(primary_key=True)
        points: Mapped[int] = mapped_column(Integer, default=0)
"""

REPOSITORY = """\
    from sqlalchemy.ext.asyncio import AsyncSession

    from loyal.models import Wallet


    class WalletRepository:
        def __init__(self, session: AsyncSession) -> None:
            self.session = session

        async def get(self, wallet_id: int):
            return await self.session.get(Wallet, wallet_id{lock})
"""

UOW = """\
    from loyal.repository import WalletRepository


    class UnitOfWork:
        def __init__(self, factory) -> None:
            self._factory = factory

        async def __aenter__(self):
            self._session = self._factory()
            self.wallets = WalletRepository(self._session)
            return self

        async def __aexit__(self, *exc) -> None:
            await self._session.close()

        async def commit(self) -> None:
            await self._session.commit()
"""

SERVICE = """\
    from loyal.uow import UnitOfWork


    class Redeemer:
        def __init__(self, uow: UnitOfWork) -> None:
            self._uow = uow

        async def redeem(self, wallet_id: int, cost: int) -> int:
            async with self._uow as uow:
                wallet = await uow.wallets.get(wallet_id)
                if wallet.points < cost:
                    raise ValueError("not enough points")
                wallet.points = wallet.points - cost
                await uow.commit()
                return wallet.points
"""


@pytest.mark.parametrize("lock, expected", [("", [(13, "OG301")]), (", with_for_update=True", [])])
def test_a_balance_changed_between_a_unit_of_works_load_and_its_commit(tmp_path, lock, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'loyal'\n", "loyal/__init__.py": "",
                     "loyal/models.py": MODELS, "loyal/repository.py": REPOSITORY.format(lock=lock),
                     "loyal/uow.py": UOW, "loyal/service.py": SERVICE})
    assert findings(tmp_path, "loyal/service.py", codes=("OG301",)) == expected
