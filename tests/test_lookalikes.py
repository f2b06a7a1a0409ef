"""Code that looks like a multi-replica hazard and is not, next to the hazard it resembles.

- OG201: django-pglocks ``with advisory_lock(key, wait=False) as acquired: if not acquired: return`` claims.
- OG201: ``schedule``'s ``.do(wrapper, app, job)`` runs the job the wrapper is handed: judged as that job (an
  idempotent DELETE of expired rows is left alone, an e-mail run is reported at the registration).
- OG401: ``create_all`` on an engine another module makes for a local SQLite file.
- OG603: start-up seeding written in SQL: a SELECT of the table, then an INSERT INTO it (not ``ON CONFLICT``).
- OG502: a client wrapper's ``set``/``expire`` forwarding whatever key it is given is no lease renewal.
"""
from __future__ import annotations

import textwrap

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

PGLOCK_JOB = """\
    import httpx
    from apscheduler.schedulers.background import BackgroundScheduler
    from django_pglocks import advisory_lock

    sched = BackgroundScheduler(timezone="UTC")


    def charge_overdue() -> None:
        with advisory_lock("charge-overdue", wait={wait}) as acquired:
            if not acquired:
                return
            httpx.post("https://payments.example/charge", json={{"batch": "overdue"}})


    sched.add_job(charge_overdue, "cron", hour=3)
    sched.start()
"""


@pytest.mark.parametrize("wait, expected", [("False", []), ("True", ["OG201"])], ids=["tries", "waits"])
def test_a_django_pglocks_lock_told_not_to_wait_claims_the_job(tmp_path, wait, expected):
    write(tmp_path, {"billing/__init__.py": "", "billing/jobs.py": PGLOCK_JOB.format(wait=wait)})
    assert [code for _, code in findings(tmp_path, "billing/jobs.py")] == expected


SCHEDULER = """\
    import threading
    import time
    from typing import Callable

    import schedule
    from flask import Flask

    from crumbs import jobs


    def _in_context(app: Flask, fn: Callable[[], object]) -> None:
        with app.app_context():
            fn()


    def _run(runner: schedule.Scheduler) -> None:
        while True:
            runner.run_pending()
            time.sleep(30)


    def start(app: Flask) -> None:
        runner = schedule.Scheduler()
        runner.every(15).minutes.do(_in_context, app, jobs.{job})
        threading.Thread(target=_run, args=(runner,), daemon=True).start()
"""

JOBS = """\
    import smtplib

    from sqlalchemy import create_engine, text

    engine = create_engine("postgresql://db/crumbs")


    def purge_sessions() -> None:
        with engine.begin() as conn:
            conn.execute(text("DELETE FROM sessions WHERE expires_at < now()"))


    def mail_trials() -> None:
        with smtplib.SMTP("mail") as smtp:
            smtp.sendmail("a@example.com", ["b@example.com"], "your trial ends tomorrow")
"""


@pytest.mark.parametrize("job, expected", [("purge_sessions", []), ("mail_trials", ["OG201"])])
def test_a_job_handed_to_a_wrapper_the_scheduler_runs_is_judged_as_itself(tmp_path, job, expected):
    write(tmp_path, {"crumbs/__init__.py": "", "crumbs/scheduler.py": SCHEDULER.format(job=job),
                     "crumbs/jobs.py": JOBS})
    found = findings(tmp_path, "crumbs/scheduler.py")
    assert [code for _, code in found] == expected
    if expected:
        line = next(i for i, text in enumerate(textwrap.dedent(SCHEDULER).splitlines(), 1) if ".do(" in text)
        assert found[0][0] == line


CACHE = """\
    from sqlalchemy.ext.asyncio import create_async_engine
    from sqlalchemy.orm import DeclarativeBase

    CACHE_URL = "{url}"
    engine = create_async_engine(CACHE_URL)


    class Base(DeclarativeBase):
        pass
"""

BOOT = """\
    from contextlib import asynccontextmanager

    from fastapi import FastAPI

    from geo.cache import Base, engine


    @asynccontextmanager
    async def lifespan(app: FastAPI):
        async with engine.begin() as conn:
            await conn.run_sync(Base.metadata.create_all)
        yield


    app = FastAPI(lifespan=lifespan)
"""


@pytest.mark.parametrize("url, expected", [("sqlite+aiosqlite:///./cache.db", []),
                                           ("postgresql+asyncpg://db/geo", ["OG401"])], ids=["local-file", "shared"])
def test_create_all_on_an_engine_another_module_makes(tmp_path, url, expected):
    write(tmp_path, {"geo/__init__.py": "", "geo/cache.py": CACHE.format(url=url), "geo/main.py": BOOT})
    assert [code for _, code in findings(tmp_path, "geo/main.py", codes=("OG401",))] == expected


SEED = """\
    import psycopg

    from flask import Flask

    ROLES = ("admin", "viewer")


    def seed(conn: psycopg.Connection) -> None:
        for name in ROLES:
            found = conn.execute("SELECT id FROM roles WHERE name = %s", (name,)).fetchone()
            if found is None:
                conn.execute("{insert}", (name,))


    def create_app() -> Flask:
        app = Flask(__name__)
        with psycopg.connect("postgresql://db/lab") as conn:
            seed(conn)
        return app
"""


@pytest.mark.parametrize("insert, expected", [
    ("INSERT INTO roles (name) VALUES (%s)", ["OG603"]),
    ("INSERT INTO roles (name) VALUES (%s) ON CONFLICT (name) DO NOTHING", []),
], ids=["plain", "on-conflict"])
def test_start_up_seeding_written_in_sql(tmp_path, insert, expected):
    write(tmp_path, {"lab/__init__.py": SEED.format(insert=insert)})
    assert [code for _, code in findings(tmp_path, "lab/__init__.py", codes=("OG603",))] == expected


WRAPPER = """\
    import redis


    class TenantRedis:
        def __init__(self, client: redis.Redis, tenant: str) -> None:
            self.client = client
            self.tenant = tenant

        def key(self, name: str) -> str:
            return f"{self.tenant}:{name}"

        def set(self, name, value, ex=None, nx: bool = False):
            return self.client.set(self.key(name), value, ex=ex, nx=nx)

        def expire(self, name, seconds: int):
            return self.client.expire(self.key(name), seconds)
"""


def test_a_client_wrapper_forwarding_its_key_is_no_lease(tmp_path):
    write(tmp_path, {"store/__init__.py": "", "store/client.py": WRAPPER})
    assert findings(tmp_path, "store/client.py", codes=("OG502",)) == []
