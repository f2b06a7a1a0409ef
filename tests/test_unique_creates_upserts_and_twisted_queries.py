"""Three readings of what a job's statements do.

- OG201: ``try: with transaction.atomic(): Run.objects.create(week=...)`` ``except IntegrityError: return`` on a
  field the model declares unique is a claim: the replica whose row goes in goes on, the others leave.
- OG201: a ticker whose only writes are ``INSERT ... ON CONFLICT DO NOTHING`` (or an upsert that sets the values
  given) leaves the table as one run did, whichever replicas run it: no job to claim (OG204's, off by default).
  An upsert that adds (``n = t.n + 1``) is not.
- OG302: Twisted's ``adbapi.ConnectionPool.runQuery`` / ``runOperation`` send SQL: a pickup through them is one.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """\
    from django.db import models


    class ReportRun(models.Model):
        week = models.DateField({unique})
"""

JOBS = """\
    from django.core.mail import send_mail
    from django.db import IntegrityError, transaction

    from reports.models import ReportRun


    def send_weekly(week) -> None:
        try:
            with transaction.atomic():
                ReportRun.objects.create(week=week)
        except IntegrityError:
            return
        send_mail("Weekly report", "...", None, ["team@example.org"])
"""

SCHEDULER = """\
    from apscheduler.schedulers.background import BackgroundScheduler
    from django.apps import AppConfig

    from reports.jobs import send_weekly


    class ReportsConfig(AppConfig):
        name = "reports"

        def ready(self) -> None:
            scheduler = BackgroundScheduler(timezone="UTC")
            scheduler.add_job(send_weekly, "cron", day_of_week="mon", hour=7, args=[None])
            scheduler.start()
"""


@pytest.mark.parametrize("unique, expected", [("unique=True", []), ("", [(12, "OG201")])])
def test_a_unique_row_created_first_is_a_claim(tmp_path, unique, expected):
    write(tmp_path, {"reports/__init__.py": "", "reports/models.py": MODELS.replace("{unique}", unique),
                     "reports/jobs.py": JOBS, "reports/apps.py": SCHEDULER})
    assert findings(tmp_path, "reports/apps.py", codes=("OG201",)) == expected


TICKER = """\
    import asyncio
    from contextlib import asynccontextmanager

    import asyncpg
    from fastapi import FastAPI

    STATEMENT = \"\"\"INSERT INTO rate_history (pair, at, rate) VALUES ($1, $2, $3) {conflict}\"\"\"


    async def record(pool) -> None:
        while True:
            await pool.execute(STATEMENT, "EURUSD", "2026-01-01", 1.1)
            await asyncio.sleep(60)


    @asynccontextmanager
    async def lifespan(app: FastAPI):
        pool = await asyncpg.create_pool("postgresql://rates@db/rates")
        asyncio.create_task(record(pool))
        yield


    app = FastAPI(lifespan=lifespan)
"""


@pytest.mark.parametrize("conflict, expected", [
    ("ON CONFLICT (pair, at) DO NOTHING", []),
    ("ON CONFLICT (pair, at) DO UPDATE SET rate = EXCLUDED.rate", []),
    ("ON CONFLICT (pair, at) DO UPDATE SET hits = rate_history.hits + 1", [(10, "OG201")]),
    ("", [(10, "OG201")]),
])
def test_inserts_that_leave_the_table_as_one_run_did(tmp_path, conflict, expected):
    write(tmp_path, {"rates/__init__.py": "", "rates/main.py": TICKER.replace("{conflict}", conflict)})
    assert findings(tmp_path, "rates/main.py", codes=("OG201",)) == expected


STORE = """\
    from twisted.enterprise import adbapi


    class Outbox:
        def __init__(self, dsn: str) -> None:
            self._pool = adbapi.ConnectionPool("psycopg2", dsn)

        def due(self):
            return self._pool.runQuery("SELECT id, body FROM outbox WHERE state = 'queued' LIMIT 50{lock}")

        def mark_sent(self, message_id: int):
            return self._pool.runOperation("UPDATE outbox SET state = 'sent' WHERE id = %s", (message_id,))
"""

SENDER = """\
    import treq
    from twisted.internet.defer import inlineCallbacks

    from courier.store import Outbox


    @inlineCallbacks
    def deliver(store: Outbox):
        rows = yield store.due()
        for message_id, body in rows:
            yield treq.post("https://push.example.org/send", json={"body": body})
            yield store.mark_sent(message_id)
"""


@pytest.mark.parametrize("lock, expected", [("", [(9, "OG302")]), (" FOR UPDATE SKIP LOCKED", [])])
def test_a_pickup_through_twisted_adbapi(tmp_path, lock, expected):
    write(tmp_path, {"courier/__init__.py": "", "courier/store.py": STORE.replace("{lock}", lock),
                     "courier/sender.py": SENDER})
    assert findings(tmp_path, "courier/store.py", codes=("OG302",)) == expected


WORKER = """\
    import asyncio

    import asyncpg

    STATEMENT = \"\"\"{sql}\"\"\"


    async def run(pool) -> None:
        while True:
            await pool.fetchrow(STATEMENT)
            await asyncio.sleep(1)


    async def main() -> None:
        pool = await asyncpg.create_pool("postgresql://jobs@db/jobs")
        await run(pool)


    if __name__ == "__main__":
        asyncio.run(main())
"""

CLAIM_NEXT = ("UPDATE jobs SET state = 'running' WHERE id = (SELECT id FROM jobs WHERE state = 'new' "
              "ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id")


@pytest.mark.parametrize("sql, expected", [(CLAIM_NEXT, []), ("UPDATE jobs SET state = 'new' WHERE state = 'running'",
                                                              [(10, "OG610")])])
def test_a_bounded_claim_of_the_next_row_is_no_reset(tmp_path, sql, expected):
    write(tmp_path, {"worker/__init__.py": "", "worker/main.py": WORKER.replace("{sql}", sql),
                     "Dockerfile": 'FROM python:3.11\nCMD ["python", "-m", "worker.main"]\n'})
    assert findings(tmp_path, "worker/main.py", codes=("OG610",)) == expected


PROJECTOR = """\
    import asyncio
    from contextlib import asynccontextmanager

    import asyncpg
    import httpx
    from fastapi import FastAPI

    LEASE = \"\"\"INSERT INTO checkpoints (name, owner, until) VALUES ('feed', $1, now() + interval '15 seconds')
    ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, until = EXCLUDED.until
    {where}RETURNING owner\"\"\"


    async def tick(pool, me: str) -> None:
        if await pool.fetchval(LEASE, me) is None:
            return
        await httpx.AsyncClient().post("https://hooks.example.org/feed", json={})


    async def run(pool) -> None:
        while True:
            await tick(pool, "pod-a")
            await asyncio.sleep(1)


    @asynccontextmanager
    async def lifespan(app: FastAPI):
        asyncio.create_task(run(await asyncpg.create_pool("postgresql://app@db/app")))
        yield


    app = FastAPI(lifespan=lifespan)
"""


@pytest.mark.parametrize("where, expected", [
    ("WHERE checkpoints.owner = EXCLUDED.owner OR checkpoints.until < now()\n    ", []),
    ("", [(19, "OG201")]),
])
def test_a_lease_taken_with_a_conditional_upsert(tmp_path, where, expected):
    write(tmp_path, {"feed/__init__.py": "", "feed/main.py": PROJECTOR.replace("{where}", where)})
    assert findings(tmp_path, "feed/main.py", codes=("OG201",)) == expected


COUNTERS = """\
    import uuid

    import redis

    r = redis.Redis()


    def drain() -> dict:
        batch = {batch}
        try:
            r.rename("views:pending", batch)
        except redis.ResponseError:
            return {}
        counts = r.hgetall(batch)
        r.delete(batch)
        return counts
"""

DRAIN = """\
    from django.db.models import F
    from huey import RedisHuey, crontab

    from views.counters import drain
    from views.models import Post

    huey = RedisHuey("views")


    @huey.periodic_task(crontab(minute="*"))
    def flush_views() -> None:
        for post_id, count in drain().items():
            Post.objects.filter(pk=int(post_id)).update(views=F("views") + int(count))
"""


@pytest.mark.parametrize("batch, expected", [('f"views:batch:{uuid.uuid4().hex}"', []),
                                             ('"views:batch"', [(11, "OG201")])])
def test_a_shared_hash_taken_whole_by_a_rename_to_a_key_of_ones_own(tmp_path, batch, expected):
    write(tmp_path, {"views/__init__.py": "", "views/counters.py": COUNTERS.replace("{batch}", batch),
                     "views/tasks.py": DRAIN,
                     "Dockerfile": 'FROM python:3.11\nCMD ["huey_consumer", "views.tasks.huey"]\n'})
    assert findings(tmp_path, "views/tasks.py", codes=("OG201",)) == expected
