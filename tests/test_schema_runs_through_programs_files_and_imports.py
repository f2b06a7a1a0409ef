"""Schema and migrations at start-up, seen through one more step.

- OG401: ``alembic upgrade head`` run as a program from the lifespan applies migrations: when the env.py it runs
  takes a transaction-level advisory lock, the run is serialised (not reported); without it, it is.
- OG401/OG103: Peewee's ``create_tables`` inside ``db.atomic()`` after ``pg_advisory_xact_lock`` on the same
  database is serialised, and that blocking lock is a migration's (no OG103).
- OG401: a ``schema.sql`` read through ``with open(SCHEMA) as fh`` (``SCHEMA`` a module constant made with
  ``Path(__file__).with_name(...)``) and sent at start-up; a transaction-level lock taken first in the same
  ``with psycopg.connect(...)`` block serialises it.
- OG402: env.py connecting with a URL imported from the settings module, read from a variable the deployment
  sets to PgBouncer's port.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

BOOTSTRAP = """\
    import subprocess


    def upgrade() -> None:
        subprocess.run(["alembic", "upgrade", "head"], check=True)
"""

MAIN = """\
    from contextlib import asynccontextmanager

    from fastapi import FastAPI

    from desk.bootstrap import upgrade


    @asynccontextmanager
    async def lifespan(app: FastAPI):
        upgrade()
        yield


    app = FastAPI(lifespan=lifespan)
"""

ENV = """\
    from alembic import context
    from sqlalchemy import create_engine, pool, text

    config = context.config


    def run_migrations_online() -> None:
        engine = create_engine(config.get_main_option("sqlalchemy.url"), poolclass=pool.NullPool)
        with engine.connect() as connection:
            context.configure(connection=connection)
            with context.begin_transaction():
                {lock}
                context.run_migrations()


    run_migrations_online()
"""


@pytest.mark.parametrize("lock, expected", [
    ('connection.execute(text("SELECT pg_advisory_xact_lock(7021)"))', []),
    ("pass", [(5, "OG401")]),
])
def test_alembic_run_as_a_program_is_judged_by_its_env(tmp_path, lock, expected):
    write(tmp_path, {"desk/__init__.py": "", "desk/bootstrap.py": BOOTSTRAP, "desk/main.py": MAIN,
                     "alembic.ini": "[alembic]\nscript_location = migrations\n",
                     "migrations/env.py": ENV.replace("{lock}", lock)})
    assert findings(tmp_path, "desk/bootstrap.py", codes=("OG401",)) == expected


PEEWEE_APP = """\
    import falcon
    from peewee import CharField, Model, PostgresqlDatabase

    db = PostgresqlDatabase("orders")


    class Customer(Model):
        name = CharField()

        class Meta:
            database = db


    db.connect()
    with db.atomic():
        {lock}
        db.create_tables([Customer], safe=True)
    db.close()


    class Health:
        def on_get(self, req, resp):
            resp.media = {"ok": True}


    app = falcon.App()
    app.add_route("/health", Health())
"""


@pytest.mark.parametrize("lock, expected", [
    ('db.execute_sql("SELECT pg_advisory_xact_lock(%s)", (5310,))', []),
    ("pass", [(17, "OG401")]),
])
def test_peewee_tables_created_under_a_transaction_lock(tmp_path, lock, expected):
    write(tmp_path, {"orders/__init__.py": "", "orders/app.py": PEEWEE_APP.replace("{lock}", lock),
                     "Dockerfile": 'FROM python:3.11\nCMD ["gunicorn", "orders.app:app"]\n'})
    assert findings(tmp_path, "orders/app.py", codes=("OG401", "OG103")) == expected


SCHEMA_PY = """\
    from pathlib import Path

    import psycopg

    SCHEMA = Path(__file__).with_name("schema.sql")


    def ensure_schema(dsn: str) -> None:
        with psycopg.connect(dsn) as conn:
            {lock}
            with open(SCHEMA, encoding="utf-8") as fh:
                conn.execute(fh.read())
"""

AIOHTTP_APP = """\
    import asyncio

    from aiohttp import web

    from tracker.schema import ensure_schema


    async def prepare(app: web.Application) -> None:
        await asyncio.to_thread(ensure_schema, "postgresql://tracker@db/tracker")


    def create_app() -> web.Application:
        app = web.Application()
        app.on_startup.append(prepare)
        return app
"""


@pytest.mark.parametrize("lock, expected", [
    ('conn.execute("SELECT pg_advisory_xact_lock(%s)", (8021,))', []),
    ("pass", [(12, "OG401")]),
])
def test_a_schema_file_opened_by_a_module_constant(tmp_path, lock, expected):
    write(tmp_path, {"tracker/__init__.py": "", "tracker/schema.py": SCHEMA_PY.replace("{lock}", lock),
                     "tracker/schema.sql": "CREATE TABLE page_events (id bigserial PRIMARY KEY, path text);\n",
                     "tracker/app.py": AIOHTTP_APP})
    assert findings(tmp_path, "tracker/schema.py", codes=("OG401",)) == expected


SETTINGS = """\
    import os

    DATABASE_URL = os.environ.get("DATABASE_URL", "postgresql://ship@localhost:5432/ship")
"""

POOLED_ENV = """\
    from alembic import context
    from sqlalchemy import create_engine, pool

    from ship.settings import DATABASE_URL


    def run_migrations_online() -> None:
        engine = create_engine(DATABASE_URL, poolclass=pool.NullPool)
        with engine.connect() as connection:
            context.configure(connection=connection)
            with context.begin_transaction():
                context.run_migrations()


    run_migrations_online()
"""

JOB = """\
    apiVersion: batch/v1
    kind: Job
    metadata:
      name: migrate
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
            - name: alembic
              image: ship:1
              command: ["alembic", "upgrade", "head"]
              env:
                - name: DATABASE_URL
                  value: postgresql://ship@{host}/ship
"""


@pytest.mark.parametrize("host, expected", [("pgbouncer:6432", [(8, "OG402")]), ("postgres:5432", [])])
def test_env_py_reads_an_imported_url_the_deployment_points_at_the_pooler(tmp_path, host, expected):
    write(tmp_path, {"ship/__init__.py": "", "ship/settings.py": SETTINGS, "migrations/env.py": POOLED_ENV,
                     "k8s/migrate.yaml": JOB.replace("{host}", host)})
    assert findings(tmp_path, "migrations/env.py", codes=("OG402",)) == expected


ASYNC_SCHEMA = """\
    from pathlib import Path

    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine
    from starlette.applications import Starlette

    SCHEMA = Path(__file__).with_name("schema.sql")
    engine = create_async_engine("postgresql+asyncpg://app@db/app")


    async def create_schema() -> None:
        async with engine.begin() as conn:
            {lock}
            await conn.execute(text(open(SCHEMA, encoding="utf-8").read()))


    app = Starlette(routes=[], on_startup=[create_schema])
"""


@pytest.mark.parametrize("lock, expected", [
    ('await conn.execute(text("SELECT pg_advisory_xact_lock(77)"))', []),
    ("pass", [(14, "OG401")]),
])
def test_a_schema_file_wrapped_in_text_through_an_async_engine(tmp_path, lock, expected):
    write(tmp_path, {"bookings/__init__.py": "", "bookings/app.py": ASYNC_SCHEMA.replace("{lock}", lock),
                     "bookings/schema.sql": "CREATE TABLE rooms (id bigserial PRIMARY KEY);\n"})
    assert findings(tmp_path, "bookings/app.py", codes=("OG401",)) == expected
