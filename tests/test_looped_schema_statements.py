"""DDL kept as a tuple or list of strings and sent one by one in a loop (``for ddl in TABLES: await
conn.execute(ddl)``) is the schema those strings write, and a Sanic listener registered by a call
(``app.register_listener(fn, "before_server_start")``, ``app.before_server_start(fn)``) is start-up code every
worker of every replica runs.  Taking ``pg_advisory_xact_lock`` first in the same transaction makes the start-ups
take turns."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SERVER = """
    import asyncpg
    from sanic import Sanic

    from inventory.tables import prepare

    app = Sanic("inventory")


    async def connect(app: Sanic) -> None:
        app.ctx.db = await asyncpg.create_pool("postgresql://inventory@db/inventory")
        async with app.ctx.db.acquire() as conn:
            await prepare(conn)


    {registration}
    """

TABLES = """
    {source}


    async def prepare(conn) -> None:
        for ddl in {walked}:
            await conn.execute(ddl)
    """

LOCKED = """
    {source}


    async def prepare(conn) -> None:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(4411)")
            for ddl in {walked}:
                await conn.execute(ddl)
    """

DDL = ('DDL = [\n        "CREATE TABLE IF NOT EXISTS items (sku text PRIMARY KEY, qty int NOT NULL)",\n'
       '        "CREATE INDEX IF NOT EXISTS items_qty ON items (qty)",\n    ]')

REGISTRATIONS = ['app.register_listener(connect, "before_server_start")', "app.before_server_start(connect)",
                 'app.listener(connect, "after_server_start")']


def _project(tmp_path, registration, tables, source=DDL, walked="DDL"):
    files = {"inventory/__init__.py": "", "inventory/server.py": SERVER.format(registration=registration),
             "inventory/tables.py": tables.format(source=source, walked=walked) if "{" in tables else tables}
    write(tmp_path, files)
    return findings(tmp_path, "inventory/tables.py", codes=("OG401", "OG103"))


@pytest.mark.parametrize("registration", REGISTRATIONS)
def test_ddl_sent_in_a_loop_at_every_start(tmp_path, registration):
    assert _project(tmp_path, registration, TABLES) == [(10, "OG401")]


INLINE = """
    async def prepare(conn) -> None:
        steps = (
            "CREATE TABLE IF NOT EXISTS items (sku text PRIMARY KEY, qty int NOT NULL)",
            "ALTER TABLE items ADD COLUMN IF NOT EXISTS bin text",
        )
        for step in steps:
            await conn.execute(step)
    """


def test_ddl_bound_in_the_function_that_walks_it(tmp_path):
    assert _project(tmp_path, REGISTRATIONS[0], INLINE) == [(8, "OG401")]


@pytest.mark.parametrize("registration", REGISTRATIONS[:2])
def test_start_ups_that_take_turns_under_a_transaction_lock(tmp_path, registration):
    assert _project(tmp_path, registration, LOCKED) == []


def test_a_loop_over_queries_writes_no_schema(tmp_path):
    source = 'CHECKS = ("SELECT 1", "SELECT count(*) FROM pg_stat_activity")'
    assert _project(tmp_path, REGISTRATIONS[0], TABLES, source, "CHECKS") == []
