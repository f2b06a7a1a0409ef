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
