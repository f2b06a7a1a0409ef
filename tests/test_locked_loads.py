"""OG301 in ORMs without a Django manager: a load whose chain takes a row lock is no lost update, whatever the
ORM (Tortoise's ``select_for_update()``, peewee's ``for_update()``); an unlocked Tortoise load changed and saved
is one, and its help speaks Tortoise (no ``.objects``, ``F`` from ``tortoise.expressions``, ``in_transaction``)."""
from __future__ import annotations

import ast
import os
import textwrap

from onceguard.config import from_mapping
from onceguard.engine.check import check_source
from test_job_discovery import fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """\
    from tortoise import fields
    from tortoise.models import Model


    class Voyage(Model):
        id = fields.IntField(primary_key=True)
        berths = fields.IntField()
        taken = fields.IntField(default=0)
"""

UNLOCKED = """\
    from harbour.models import Voyage


    async def hold_berths(voyage_id: int, count: int) -> None:
        trip = await Voyage.get(id=voyage_id)
        trip.taken += count
        await trip.save(update_fields=["taken"])
"""

LOCKED = """\
    from tortoise.transactions import in_transaction

    from harbour.models import Voyage


    async def hold_berths(voyage_id: int, count: int) -> None:
        async with in_transaction() as conn:
            trip = await Voyage.filter(id=voyage_id).select_for_update().using_db(conn).first()
            trip.taken += count
            await trip.save(using_db=conn, update_fields=["taken"])
"""

PEEWEE_LOCKED = """\
    from peewee import IntegerField, Model, PostgresqlDatabase

    db = PostgresqlDatabase("harbour")


    class Voyage(Model):
        taken = IntegerField(default=0)

        class Meta:
            database = db


    def hold_berths(voyage_id: int, count: int) -> None:
        with db.atomic():
            trip = Voyage.select().where(Voyage.id == voyage_id).for_update().get()
            trip.taken += count
            trip.save()
"""


def _findings(root, files, path="harbour/booking.py"):
    for text in files.values():
        ast.parse(textwrap.dedent(text))
    write(root, {"harbour/__init__.py": "", **files})
    full = os.path.join(str(root), path)
    with open(full, "rb") as handle:
        source = handle.read()
    config = from_mapping({}, root=str(root))
    return [d for d in check_source(source, full, config, cross_file=True) if d.code == "OG301"]


def test_an_unlocked_tortoise_load_changed_and_saved_is_reported_in_tortoise_terms(tmp_path):
    found = _findings(tmp_path, {"harbour/models.py": MODELS, "harbour/booking.py": UNLOCKED})
    assert [d.line for d in found] == [6]
    assert "tortoise.expressions" in found[0].suggestion and ".objects" not in found[0].suggestion
    assert found[0].fix is None  # the Django rewrite would write a manager Tortoise does not have


def test_a_tortoise_load_under_select_for_update_is_not_reported(tmp_path):
    assert _findings(tmp_path, {"harbour/models.py": MODELS, "harbour/booking.py": LOCKED}) == []


def test_a_peewee_load_under_for_update_is_not_reported(tmp_path):
    assert _findings(tmp_path, {"harbour/booking.py": PEEWEE_LOCKED}) == []
    unlocked = PEEWEE_LOCKED.replace(".for_update()", "")
    assert [d.line for d in _findings(tmp_path, {"harbour/booking.py": unlocked})] == [16]


# -- raw SQL read and written back after waiting for an advisory lock on the same connection ------------------
TOPUP = """\
    import asyncpg


    async def spend(pool: asyncpg.Pool, card: int, fare: int) -> None:
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", card)
            balance = await conn.fetchval("SELECT balance FROM cards WHERE id = $1", card)
            await conn.execute("UPDATE cards SET balance = $2 WHERE id = $1", card, balance - fare)
"""


def _raw_findings(tmp_path, text: str):
    write(tmp_path, {"fares/__init__.py": "", "fares/cards.py": text})
    path = os.path.join(str(tmp_path), "fares/cards.py")
    with open(path, "rb") as handle:
        source = handle.read()
    found = check_source(source, path, from_mapping({}, root=str(tmp_path)), cross_file=True)
    return [(d.line, d.code) for d in found if d.code == "OG301"]


def test_a_read_written_back_after_waiting_for_a_lock_on_its_connection_is_serialised(tmp_path):
    assert _raw_findings(tmp_path, TOPUP) == []
    assert _raw_findings(tmp_path, TOPUP.replace("pg_advisory_xact_lock", "pg_advisory_lock")) == []


def test_the_same_read_without_the_lock_or_after_its_unlock_loses_updates(tmp_path):
    assert _raw_findings(tmp_path, TOPUP.replace(
        '            await conn.execute("SELECT pg_advisory_xact_lock($1)", card)\n', "")) == [(7, "OG301")]
    unlocked = TOPUP.replace('SELECT pg_advisory_xact_lock($1)", card)',
                             'SELECT pg_advisory_lock($1)", card)\n'
                             '            await conn.execute("SELECT pg_advisory_unlock($1)", card)')
    assert _raw_findings(tmp_path, unlocked) == [(9, "OG301")]
