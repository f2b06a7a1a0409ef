"""Shapes of real code that reach a hazard, or its guard, one step further away than the rule docs show.

- OG101: a Session bound to a connection the code checked out (``Session(bind=conn)`` inside ``with
  engine.connect() as conn``) keeps that connection through its commits: lock, work and unlock share it.
- OG402: env.py connects with what a settings loader of the app returns (``settings.load().database_url``,
  read from ``DATABASE_URL``), which the deployment sets to a PgBouncer URL.
- OG602: a Telegram bot built by a project function (``Application.builder()...build()``) and polled in a
  thread that the app factory of another module starts.
- OG201: a flusher that every replica runs but that takes its items out of a shared Redis list in one
  MULTI/EXEC (``LRANGE`` and ``DELETE`` on one pipeline) works on other items in each replica.
- OG302: a loader's rows, worked through by a caller that first waits for a blocking advisory lock on the same
  connection, are picked one run at a time.
"""
from __future__ import annotations

import textwrap

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

REBALANCE = """\
    from sqlalchemy import create_engine, text
    from sqlalchemy.orm import Session

    engine = create_engine("postgresql+psycopg://app@db/fleet", pool_size=5)


    def rebalance() -> None:
        with {opening}:
            got = session.execute(text("SELECT pg_try_advisory_lock(77)")).scalar()
            if not got:
                return
            try:
                session.execute(text("UPDATE depots SET balanced_at = now()"))
                session.commit()
            finally:
                session.execute(text("SELECT pg_advisory_unlock(77)"))
                session.commit()
"""


@pytest.mark.parametrize("opening, expected", [
    ("engine.connect() as conn, Session(bind=conn) as session", []),
    ("Session(engine) as session", ["OG101"]),
], ids=["bound-to-a-checkout", "own-checkouts"])
def test_a_session_bound_to_a_checked_out_connection_keeps_the_lock_there(tmp_path, opening, expected):
    write(tmp_path, {"fleet/__init__.py": "", "fleet/jobs.py": REBALANCE.format(opening=opening)})
    assert [code for _, code in findings(tmp_path, "fleet/jobs.py", codes=("OG101",))] == expected


SETTINGS = """\
    import os
    from dataclasses import dataclass


    @dataclass(frozen=True)
    class Settings:
        database_url: str


    def load() -> Settings:
        return Settings(database_url=os.environ["{variable}"])
"""

ENV = """\
    from alembic import context
    from sqlalchemy import create_engine, pool

    from billing import settings as app_settings


    def _url() -> str:
        return app_settings.load().database_url


    def run_migrations_online() -> None:
        engine = create_engine(_url(), poolclass=pool.NullPool)
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
          containers:
            - name: migrate
              image: billing:1
              command: ["alembic", "upgrade", "head"]
              env:
                - name: DATABASE_URL
                  value: postgresql://billing@pgbouncer:6432/billing
                - name: MIGRATIONS_DATABASE_URL
                  value: postgresql://billing@postgres:5432/billing
"""


@pytest.mark.parametrize("variable, expected", [("DATABASE_URL", ["OG402"]), ("MIGRATIONS_DATABASE_URL", [])])
def test_env_py_connecting_with_the_url_a_settings_loader_reads(tmp_path, variable, expected):
    write(tmp_path, {"billing/__init__.py": "", "billing/settings.py": SETTINGS.replace("{variable}", variable),
                     "alembic/env.py": ENV, "k8s/migrate.yaml": JOB})
    assert [code for _, code in findings(tmp_path, "alembic/env.py", codes=("OG402",))] == expected


BOT = """\
    import asyncio

    from telegram.ext import Application, CommandHandler


    async def start(update, context) -> None:
        await update.message.reply_text("hello")


    def build() -> Application:
        application = Application.builder().token("t").build()
        application.add_handler(CommandHandler("start", start))
        return application


    def poll_forever() -> None:
        asyncio.set_event_loop(asyncio.new_event_loop())
        bot = build()
        bot.run_polling(stop_signals=None)
"""

FACTORY = """\
    import threading

    from flask import Flask

    from concierge import bot as tg


    def create_app() -> Flask:
        app = Flask(__name__)
        threading.Thread(target=tg.poll_forever, daemon=True).start()
        return app
"""


def test_a_bot_built_by_a_helper_and_polled_in_a_thread_the_app_factory_starts(tmp_path):
    write(tmp_path, {"concierge/__init__.py": "", "concierge/bot.py": BOT, "concierge/app.py": FACTORY})
    line = next(i for i, text in enumerate(textwrap.dedent(BOT).splitlines(), 1) if "run_polling" in text)
    assert findings(tmp_path, "concierge/bot.py", codes=("OG602",)) == [(line, "OG602")]


FLUSHER = """\
    import json
    import threading

    import psycopg
    import redis

    r = redis.Redis(host="redis")


    def drain(key: str) -> list:
{drain}
        return [json.loads(item) for item in raw]


    def flush_forever(stop: threading.Event) -> None:
        while not stop.wait(10):
            events = drain("usage:outbox")
            with psycopg.connect("postgresql://db/usage") as conn:
                for event in events:
                    conn.execute("INSERT INTO usage (account, units) VALUES (%s, %s)", (event["a"], event["u"]))


    def start() -> None:
        threading.Thread(target=flush_forever, args=(threading.Event(),), daemon=True).start()
"""

ATOMIC = """\
        with r.pipeline() as pipe:
            pipe.lrange(key, 0, -1)
            pipe.delete(key)
            raw, _ = pipe.execute()"""

TWO_STEPS = """\
        raw = r.lrange(key, 0, -1)
        r.delete(key)"""

APP = """\
    from contextlib import asynccontextmanager

    from fastapi import FastAPI

    from usage import flusher


    @asynccontextmanager
    async def lifespan(app: FastAPI):
        flusher.start()
        yield


    app = FastAPI(lifespan=lifespan)
"""


@pytest.mark.parametrize("drain, expected", [(ATOMIC, []), (TWO_STEPS, ["OG201", "OG609"])],
                         ids=["one-transaction", "two-commands"])
def test_a_flusher_that_takes_its_items_in_one_step_works_on_other_items_in_each_replica(tmp_path, drain, expected):
    write(tmp_path, {"usage/__init__.py": "", "usage/flusher.py": FLUSHER.format(drain=drain), "usage/app.py": APP})
    assert sorted(code for _, code in findings(tmp_path, "usage/flusher.py", codes=("OG201", "OG609"))) == expected


PERIODS = """\
    import psycopg2


    def _due(conn) -> list:
        with conn.cursor() as cur:
            cur.execute("SELECT id FROM periods WHERE status = 'open' ORDER BY id")
            return [row[0] for row in cur.fetchall()]


    def close_due(conn) -> None:
{lock}
        try:
            for period_id in _due(conn):
                with conn.cursor() as cur:
                    cur.execute("INSERT INTO payslips (period_id) SELECT %s", (period_id,))
                    cur.execute("UPDATE periods SET status = 'closed' WHERE id = %s", (period_id,))
        finally:
            with conn.cursor() as cur:
                cur.execute("SELECT pg_advisory_unlock(42)")
"""

WAITS = """\
        with conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_lock(42)")"""


@pytest.mark.parametrize("lock, expected", [(WAITS, []), ("        pass", ["OG302"])], ids=["serialised", "open"])
def test_rows_a_loader_hands_back_to_a_caller_that_waits_for_a_lock_first(tmp_path, lock, expected):
    write(tmp_path, {"payrun/__init__.py": "", "payrun/periods.py": PERIODS.format(lock=lock)})
    assert [code for _, code in findings(tmp_path, "payrun/periods.py", codes=("OG302",))] == expected
