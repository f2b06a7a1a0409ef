"""OG301: two ways a row reaches a lost update that a one-expression loader does not show.

- ``result = await session.execute(select(Account)...)`` then ``account = result.scalar_one_or_none()``: one load
  written in two statements, in the function that changes the row or in a repository method that returns it.
- Flask-SQLAlchemy's ``Account.query.filter_by(...).first_or_404()`` in a helper that changes the row, where the
  view calling it commits the session the whole app shares (``db.session.commit()``); the helper's module need
  not import SQLAlchemy itself.

Beside each, the spelling that is safe: the row loaded ``with_for_update()``, the arithmetic done in SQL.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """\
    from decimal import Decimal

    from sqlalchemy import Numeric
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class Account(Base):
        __tablename__ = "accounts"
        id: Mapped[int] = mapped_column(primary_key=True)
        owner: Mapped[int]
        credit: Mapped[Decimal] = mapped_column(Numeric(12, 2))
"""

REPOSITORY = """\
    from sqlalchemy import select
    from sqlalchemy.ext.asyncio import AsyncSession

    from bank.models import Account


    class Accounts:
        def __init__(self, session: AsyncSession) -> None:
            self._session = session

        async def of_owner(self, owner: int) -> Account | None:
            found = await self._session.execute(select(Account).where(Account.owner == owner){lock})
            return found.scalar_one_or_none()
"""

SERVICE = """\
    from sqlalchemy.ext.asyncio import AsyncSession

    from bank.repository import Accounts


    class Spending:
        def __init__(self, session: AsyncSession) -> None:
            self._session = session
            self._accounts = Accounts(session)

        async def spend(self, owner: int, cost) -> None:
            account = await self._accounts.of_owner(owner)
            account.credit -= cost
            await self._session.commit()
"""


@pytest.mark.parametrize("lock, expected", [("", [(13, "OG301")]), (".with_for_update()", [])])
def test_a_repository_loading_through_a_result_name(tmp_path, lock, expected):
    write(tmp_path, {"bank/__init__.py": "", "bank/models.py": MODELS,
                     "bank/repository.py": REPOSITORY.replace("{lock}", lock), "bank/service.py": SERVICE})
    assert findings(tmp_path, "bank/service.py", codes=("OG301",)) == expected


INLINE = """\
    from sqlalchemy import select, update
    from sqlalchemy.orm import Session

    from bank.models import Account


    def top_up(session: Session, owner: int, amount) -> None:
        rows = session.execute(select(Account).where(Account.owner == owner))
        account = rows.scalar_one()
        {change}
        session.commit()
"""


@pytest.mark.parametrize("change, expected", [
    ("account.credit = account.credit + amount", [(10, "OG301")]),
    ("session.execute(update(Account).where(Account.id == account.id).values(credit=Account.credit + amount))", []),
])
def test_a_result_name_read_in_the_same_function(tmp_path, change, expected):
    write(tmp_path, {"bank/__init__.py": "", "bank/models.py": MODELS,
                     "bank/topups.py": INLINE.replace("{change}", change)})
    assert findings(tmp_path, "bank/topups.py", codes=("OG301",)) == expected


def test_a_result_name_bound_twice_is_not_read_as_one_load(tmp_path):
    twice = INLINE.replace("{change}", "account.credit += amount").replace(
        "        account = rows.scalar_one()\n",
        "        rows = session.execute(select(Account.id))\n        account = rows.scalar_one()\n")
    write(tmp_path, {"bank/__init__.py": "", "bank/models.py": MODELS, "bank/topups.py": twice})
    assert findings(tmp_path, "bank/topups.py", codes=("OG301",)) == []


EXTENSION = """\
    from flask_sqlalchemy import SQLAlchemy

    db = SQLAlchemy()
"""

VOUCHER = """\
    from perks.extensions import db


    class Voucher(db.Model):
        id = db.Column(db.Integer, primary_key=True)
        code = db.Column(db.String(20), unique=True)
        used = db.Column(db.Integer, default=0)
"""

LOGIC = """\
    from perks.models import Voucher


    def use_voucher(code: str) -> Voucher:
        voucher = Voucher.query.filter_by(code=code){lock}.first_or_404()
        voucher.used += 1
        return voucher
"""

VIEWS = """\
    from flask import Blueprint, jsonify

    from perks.extensions import db
    from perks.logic import use_voucher

    bp = Blueprint("perks", __name__)


    @bp.post("/vouchers/<code>/use")
    def use(code):
        voucher = use_voucher(code)
        db.session.commit()
        return jsonify(used=voucher.used)
"""


@pytest.mark.parametrize("lock, expected", [("", [(6, "OG301")]), (".with_for_update()", [])])
def test_a_flask_query_row_changed_in_a_helper_and_committed_by_the_view(tmp_path, lock, expected):
    write(tmp_path, {"perks/__init__.py": "", "perks/extensions.py": EXTENSION, "perks/models.py": VOUCHER,
                     "perks/logic.py": LOGIC.replace("{lock}", lock), "perks/views.py": VIEWS})
    assert findings(tmp_path, "perks/logic.py", codes=("OG301",)) == expected


def test_a_flask_query_row_no_caller_commits_is_not_reported(tmp_path):
    write(tmp_path, {"perks/__init__.py": "", "perks/extensions.py": EXTENSION, "perks/models.py": VOUCHER,
                     "perks/logic.py": LOGIC.replace("{lock}", ""),
                     "perks/views.py": VIEWS.replace("        db.session.commit()\n", "")})
    assert findings(tmp_path, "perks/logic.py", codes=("OG301",)) == []


HELD_REPOSITORY = """\
    from sqlalchemy.ext.asyncio import AsyncSession

    from bank.models import Account


    class Accounts:
        def __init__(self, session: AsyncSession) -> None:
            self.session = session

        async def spend(self, account_id: int, cost) -> None:
            account = await self.session.get(Account, account_id{lock})
            account.credit -= cost
"""

UNIT_OF_WORK = """\
    from sqlalchemy.ext.asyncio import AsyncSession

    from bank.repository import Accounts


    class Usage:
        def __init__(self, session: AsyncSession) -> None:
            self.session = session
            self.accounts = Accounts(session)

        async def charge(self, account_id: int, cost) -> None:
            await self.accounts.spend(account_id, cost)
            {commit}
"""


@pytest.mark.parametrize("lock, commit, expected", [
    ("", "await self.session.commit()", [(12, "OG301")]),
    (", with_for_update=True", "await self.session.commit()", []),
    ("", "pass", []),
])
def test_a_repository_session_committed_by_the_unit_of_work(tmp_path, lock, commit, expected):
    write(tmp_path, {"bank/__init__.py": "", "bank/models.py": MODELS,
                     "bank/repository.py": HELD_REPOSITORY.replace("{lock}", lock),
                     "bank/usage.py": UNIT_OF_WORK.replace("{commit}", commit)})
    assert findings(tmp_path, "bank/repository.py", codes=("OG301",)) == expected


GENERIC_REPOSITORY = """\
    from typing import Generic, TypeVar

    from sqlalchemy.orm import Session

    from bank.models import Account

    T = TypeVar("T")


    class Repository(Generic[T]):
        model: type

        def __init__(self, session: Session) -> None:
            self.session = session

        def get(self, id: int):
            return self.session.get(self.model, id)

        def save(self, obj):
            {store}
            return obj


    class Accounts(Repository[Account]):
        model = Account
"""

SERVICE_WITH_REPOSITORY = """\
    from bank.generic import Accounts


    class Credits:
        def __init__(self, accounts: Accounts) -> None:
            self.accounts = accounts

        def top_up(self, account_id: int, amount) -> None:
            account = self.accounts.get(account_id)
            account.credit += amount
            self.accounts.save(account)
"""


@pytest.mark.parametrize("store, expected", [
    ("self.session.add(obj)\n            self.session.commit()", [(10, "OG301")]),
    ("self.session.expunge(obj)", []),
])
def test_a_generic_repository_saving_what_it_is_handed(tmp_path, store, expected):
    write(tmp_path, {"bank/__init__.py": "", "bank/models.py": MODELS,
                     "bank/generic.py": GENERIC_REPOSITORY.replace("{store}", store),
                     "bank/credits.py": SERVICE_WITH_REPOSITORY})
    assert findings(tmp_path, "bank/credits.py", codes=("OG301",)) == expected
