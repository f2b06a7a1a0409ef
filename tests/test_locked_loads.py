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
