"""Start-up reached through another module, spelled the way teams write it.

- OG401: the lifespan is defined in one module and handed to ``FastAPI(lifespan=lifespan)`` in another; it hands
  ``asyncio.to_thread`` a bound method of an object a classmethod factory makes (``Migrator.from_env().upgrade``).
- OG403: env.py runs the migrations in one helper that both of its branches call, one with the connection a
  runner hands it in ``config.attributes["connection"]``: that runner's lock is what counts.
- OG201: a ticker started by a function of its own module (``start_background(...)``) that another module's
  lifespan calls runs in every replica; a loop that only sends and then empties the buffer its process filled
  (``await self.send(batch)`` ... ``self.pending.clear()``) is each replica's own flush, not a job.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MIGRATOR = """\
    import alembic.command as alembic_command
    from alembic.config import Config


    class Migrator:
        def __init__(self, ini: str) -> None:
            self.ini = ini

        @classmethod
        def from_env(cls) -> "Migrator":
            return cls("alembic.ini")

        def upgrade(self) -> None:
            alembic_command.upgrade(Config(self.ini), "head")
"""

LIFESPAN = """\
    import asyncio
    from contextlib import asynccontextmanager

    from fastapi import FastAPI

    from rota.schema import Migrator


    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await asyncio.to_thread(Migrator.from_env().upgrade)
        yield
"""

API = """\
    from fastapi import FastAPI

    from rota.boot import lifespan

    app = FastAPI(lifespan=lifespan)
"""


@pytest.mark.parametrize("api", [
    API,
    API.replace("from rota.boot import lifespan", "from rota import boot").replace("lifespan=lifespan", "lifespan=boot.lifespan"),
], ids=["from-import", "module-import"])
def test_a_migration_method_handed_to_a_thread_from_an_imported_lifespan_runs_in_every_replica(tmp_path, api):
    write(tmp_path, {"rota/__init__.py": "", "rota/schema.py": MIGRATOR, "rota/boot.py": LIFESPAN, "rota/api.py": api})
    assert findings(tmp_path, "rota/schema.py", codes=("OG401",)) == [(14, "OG401")]


def test_the_same_lifespan_handed_to_no_app_is_not_start_up(tmp_path):
    write(tmp_path, {"rota/__init__.py": "", "rota/schema.py": MIGRATOR, "rota/boot.py": LIFESPAN})
    assert findings(tmp_path, "rota/schema.py", codes=("OG401",)) == []


ENV = """\
    from alembic import context
    from sqlalchemy import engine_from_config, pool

    config = context.config


    def _apply(connection) -> None:
        context.configure(connection=connection, target_metadata=None)
        with context.begin_transaction():
            context.run_migrations()


    def run_migrations_online() -> None:
        handed = config.attributes.get("connection")
        if handed is not None:
            _apply(handed)
            return
        engine = engine_from_config(config.get_section(config.config_ini_section, {}), prefix="sqlalchemy.",
                                    poolclass=pool.NullPool)
        with engine.connect() as connection:
            _apply(connection)


    run_migrations_online()
"""

LOCKED_MIGRATOR = """\
    import alembic.command as alembic_command
    from alembic.config import Config
    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    KEY = 81234


    class Migrator:
        @classmethod
        def from_env(cls) -> "Migrator":
            return cls()

        def upgrade(self) -> None:
            engine = create_engine("postgresql://rota@db/rota", poolclass=NullPool)
            with engine.connect() as conn:
                conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": KEY})
                try:
                    config = Config("alembic.ini")
                    config.attributes["connection"] = conn
                    alembic_command.upgrade(config, "head")
                finally:
                    conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": KEY})
"""


def test_env_helper_called_with_the_runners_connection_leaves_the_lock_to_the_runner(tmp_path):
    write(tmp_path, {"alembic.ini": "[alembic]\nscript_location = migrations\n", "migrations/env.py": ENV,
                     "rota/__init__.py": "", "rota/schema.py": LOCKED_MIGRATOR, "rota/boot.py": LIFESPAN,
                     "rota/api.py": API})
    assert findings(tmp_path, "migrations/env.py", codes=("OG403",)) == []
    assert findings(tmp_path, "rota/schema.py", codes=("OG401", "OG403")) == []


TICKERS = """\
    import asyncio

    import httpx


    async def hourly_report(client: httpx.AsyncClient) -> None:
        while True:
            await client.post("https://partner.example.com/reports", json={"kind": "hourly"})
            await asyncio.sleep(3600)


    def start_background(client: httpx.AsyncClient) -> list:
        return [asyncio.create_task(hourly_report(client))]
"""

APP = """\
    from contextlib import asynccontextmanager

    import httpx
    from starlette.applications import Starlette

    import relay.tickers as tk


    def create_app() -> Starlette:
        @asynccontextmanager
        async def lifespan(app):
            async with httpx.AsyncClient() as client:
                tasks = tk.start_background(client)
                yield
                for task in tasks:
                    task.cancel()

        return Starlette(lifespan=lifespan)
"""


def test_a_ticker_started_by_a_function_another_modules_lifespan_calls_runs_in_every_replica(tmp_path):
    write(tmp_path, {"relay/__init__.py": "", "relay/tickers.py": TICKERS, "relay/app.py": APP})
    assert findings(tmp_path, "relay/tickers.py", codes=("OG201",)) == [(6, "OG201")]


def test_a_start_function_nothing_at_start_up_calls_is_no_ticker(tmp_path):
    write(tmp_path, {"relay/__init__.py": "", "relay/tickers.py": TICKERS})
    assert findings(tmp_path, "relay/tickers.py", codes=("OG201",)) == []


FLUSHER = """\
    import asyncio

    import httpx


    class Shipper:
        def __init__(self) -> None:
            self.pending: list = []
            self.client = httpx.AsyncClient()

        def record(self, event: dict) -> None:
            self.pending.append(event)

        async def flush(self) -> None:
            if self.pending:
                await self.client.post("https://logs.example.com/bulk", json=list(self.pending))
                self.pending.clear()

        async def run(self) -> None:
            while True:
                await asyncio.sleep(5)
                await self.flush()


    SHIPPER = Shipper()


    def start_background(client=None) -> list:
        return [asyncio.create_task(SHIPPER.run())]
"""


def test_a_loop_that_sends_and_empties_its_own_buffer_is_each_replicas_flush(tmp_path):
    write(tmp_path, {"relay/__init__.py": "", "relay/tickers.py": FLUSHER, "relay/app.py": APP})
    assert findings(tmp_path, "relay/tickers.py", codes=("OG201",)) == []
