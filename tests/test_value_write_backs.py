"""OG301: a value read from a shared store, changed in Python and written back, in more of the stores' own
spellings.

- Redis: a JSON document read with GET, changed in place and SET back whole.
- SQLAlchemy Core: a column selected through the table's ``.c`` and written with ``update(table).values(...)``.
- Django: ``.update(col=...)`` / ``update_or_create(defaults={...})`` of a value computed from an earlier read of
  the same row (not of another row, a parent's depth read to set a child's).
- MongoDB: a field read with ``find_one`` and written back with ``$set`` (``$inc`` is the store's own change).
"""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

WISHLIST = """\
    import json

    from redis import Redis

    r = Redis.from_url("redis://cache:6379/0")


    def add_wish(user_id: str, item: str) -> None:
        key = f"wishes:{{user_id}}"
        raw = r.get(key)
        wishes = json.loads(raw) if raw else []
        {change}
        r.set(key, json.dumps(wishes))
"""


@pytest.mark.parametrize("change, expected", [
    ("wishes.append(item)", [(13, "OG301")]),
    ("wishes = [item]", []),  # a new value, not the one read
])
def test_a_json_document_changed_in_place_and_set_back(tmp_path, change, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'wish'\n", "wish/__init__.py": "",
                     "wish/lists.py": WISHLIST.format(change=change)})
    assert findings(tmp_path, "wish/lists.py", codes=("OG301",)) == expected


VOUCHERS = """\
    from sqlalchemy import Column, Integer, MetaData, String, Table, select, update

    meta = MetaData()
    vouchers = Table("vouchers", meta, Column("id", Integer, primary_key=True), Column("code", String),
                     Column("credit", Integer))


    async def spend(conn, code: str, amount: int) -> int:
        row = (await conn.execute(select(vouchers.c.id, vouchers.c.credit).where(vouchers.c.code == code))).one()
        await conn.execute(update(vouchers).where(vouchers.c.id == row.id).values(credit={written}))
        return row.credit - amount
"""


@pytest.mark.parametrize("written, expected", [
    ("row.credit - amount", [(10, "OG301")]),
    ("vouchers.c.credit - amount", []),  # changed in the statement
])
def test_a_core_table_column_written_back(tmp_path, written, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'shop'\n", "shop/__init__.py": "",
                     "shop/vouchers.py": VOUCHERS.format(written=written)})
    assert findings(tmp_path, "shop/vouchers.py", codes=("OG301",)) == expected


VISITS = """\
    from django.db.models import F

    from .models import Visit


    def count_visit(page: str) -> None:
        row = Visit.objects.filter(page=page).first()
        seen = (row.seen if row else 0) + 1
        {write}
"""


@pytest.mark.parametrize("write_back, expected", [
    ('Visit.objects.update_or_create(page=page, defaults={"seen": seen})', [(9, "OG301")]),
    ("Visit.objects.filter(page=page).update(seen=seen)", [(9, "OG301")]),
    ("Visit.objects.filter(page=page).update(seen=F('seen') + 1)", []),
    ("Visit.objects.filter(page=page + '/child').update(seen=seen)", []),  # another row: no lost update
    ("Visit.objects.filter(page=page).update(title=row.page + ' (archived)')", []),  # built from another field
])
def test_a_django_queryset_write_of_a_value_read_before(tmp_path, write_back, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'site'\n", "site/__init__.py": "",
                     "site/models.py": "from django.db import models\n\n\nclass Visit(models.Model):\n"
                                       "    page = models.CharField(max_length=200)\n"
                                       "    seen = models.IntegerField(default=0)\n",
                     "site/counting.py": VISITS.format(write=write_back)})
    assert findings(tmp_path, "site/counting.py", codes=("OG301",)) == expected


SEATS = """\
    class Rooms:
        def __init__(self, db) -> None:
            self.rooms = db.rooms

        async def load(self, room_id):
            return await self.rooms.find_one({{"_id": room_id}})

        async def book(self, room_id, seats: int) -> None:
            room = await self.load(room_id)
            {write}
"""


@pytest.mark.parametrize("write_back, expected", [
    ('await self.rooms.update_one({"_id": room_id}, {"$set": {"free": room["free"] - seats}})', [(10, "OG301")]),
    ('await self.rooms.update_one({"_id": room_id, "free": room["free"]}, {"$set": {"free": room["free"] - seats}})',
     []),  # compare-and-set on the value read
    ('await self.rooms.update_one({"_id": room_id}, {"$inc": {"free": -seats}})', []),
])
def test_a_document_field_set_back(tmp_path, write_back, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'hall'\n", "hall/__init__.py": "",
                     "hall/rooms.py": SEATS.format(write=write_back)})
    assert findings(tmp_path, "hall/rooms.py", codes=("OG301",)) == expected


BASKET = """\
    from redis import Redis

    r = Redis.from_url("redis://cache:6379/0")


    def add_line(basket: str, sku: str, qty: int) -> None:
        key = f"basket:{{basket}}"
        lines = r.hgetall(key)
        {change}
"""


@pytest.mark.parametrize("change, expected", [
    ("lines[sku] = int(lines.get(sku, 0)) + qty\n        r.hset(key, mapping=lines)", [(10, "OG301")]),
    ("r.hincrby(key, sku, qty)", []),  # the store changes the one field itself
])
def test_a_hash_read_whole_and_written_back_whole(tmp_path, change, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'shop'\n", "shop/__init__.py": "",
                     "shop/baskets.py": BASKET.format(change=change)})
    assert findings(tmp_path, "shop/baskets.py", codes=("OG301",)) == expected


SETTINGS = """\
    from sqlalchemy.orm import sessionmaker

    from .models import Account


    class AccountSettings:
        def __init__(self, factory: sessionmaker) -> None:
            self.factory = factory

        def put(self, account_id: int, key: str, value) -> None:
            with self.factory.begin() as session:
                account = session.get(Account, account_id{lock})
                account.prefs = {{**account.prefs, key: value}}
"""


@pytest.mark.parametrize("lock, expected", [
    ("", [(13, "OG301")]),
    (", with_for_update=True", []),
])
def test_a_merge_committed_by_the_begin_block(tmp_path, lock, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'acct'\n", "acct/__init__.py": "",
                     "acct/models.py": "Account = None\n", "acct/settings.py": SETTINGS.format(lock=lock)})
    assert findings(tmp_path, "acct/settings.py", codes=("OG301",)) == expected


TICKETS = """\
    async def open_ticket(pool, project_id: int, title: str) -> int:
        async with pool.connection() as conn, conn.transaction():
            {lock}
            cur = await conn.execute("SELECT max(number) AS last FROM tickets WHERE project_id = %s", (project_id,))
            last = (await cur.fetchone())[0] or 0
            await conn.execute("INSERT INTO tickets (project_id, number, title) VALUES (%s, %s, %s)",
                               (project_id, last + 1, title))
            return last + 1
"""


@pytest.mark.parametrize("lock, expected", [
    ("pass", [(6, "OG301")]),
    ('await conn.execute("SELECT id FROM projects WHERE id = %s FOR UPDATE", (project_id,))', []),
])
def test_a_next_number_read_and_stored_through_sql_text(tmp_path, lock, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'desk'\n", "desk/__init__.py": "",
                     "desk/tickets.py": TICKETS.format(lock=lock)})
    assert findings(tmp_path, "desk/tickets.py", codes=("OG301",)) == expected


LEDGER = """\
    from .models import Account


    def withdraw(account_id: int, amount: int) -> None:
        account = Account.get({read})
        Account.update(balance={written}).where(Account.id == account_id).execute()
"""


@pytest.mark.parametrize("read, written, expected", [
    ("Account.id == account_id", "account.balance - amount", [(6, "OG301")]),
    ("Account.id == account_id", "Account.balance - amount", []),  # changed in the statement
    ("Account.id == 1", "account.balance - amount", []),  # another row read: a template, not this row
])
def test_a_model_class_update_of_a_value_read(tmp_path, read, written, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'bank'\n", "bank/__init__.py": "",
                     "bank/models.py": "Account = None\n",
                     "bank/ledger.py": LEDGER.format(read=read, written=written)})
    assert findings(tmp_path, "bank/ledger.py", codes=("OG301",)) == expected


SNAPSHOTS = """\
    from django.db.models import Max

    from .models import Snapshot


    def build_snapshot(store_id: int):
        last = Snapshot.objects.filter(store_id=store_id).aggregate(top=Max("version"))["top"] or 0
        return Snapshot.objects.create(store_id=store_id, version=last + 1)
"""

PUBLISH = """\
    from django.db import transaction

    from . import snapshots
    from .locks import try_store_lock


    def publish(store_id: int):
        with transaction.atomic():
            {guard}
            return snapshots.build_snapshot(store_id)
"""


@pytest.mark.parametrize("guard, expected", [
    ("pass", [(8, "OG301")]),
    ('if not try_store_lock(store_id):\n                raise RuntimeError("busy")', []),
])
def test_a_next_number_every_project_caller_locks_first(tmp_path, guard, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'menus'\n", "menus/__init__.py": "",
                     "menus/models.py": "Snapshot = None\n", "menus/snapshots.py": SNAPSHOTS,
                     "menus/locks.py": "def try_store_lock(store_id):\n    return True\n",
                     "menus/publishing.py": PUBLISH.format(guard=guard)})
    assert findings(tmp_path, "menus/snapshots.py", codes=("OG301",)) == expected
