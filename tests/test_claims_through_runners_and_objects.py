"""Claims the reasoning must see where the claim and the work are apart.

- OG302: a pickup handed by name to a runner of the project (``run_exclusive("charge", _charge)``) that takes a
  try-lock and calls what it was handed only when it won: one replica at a time picks.
- OG302: the winner's side of a conditional expression (``sent = settle() if locked else 0``) inside ``with
  exclusive(...) as locked:``.
- OG302: a Celery task that beat enqueues, beat running as a service of its own (not inside the workers): one run
  per tick, as a claimed run is.
- OG201: ``async with Lease(...) as lease: if not lease.held: return``, where ``__aenter__`` calls
  ``self.acquire()`` and returns the lease, ``acquire`` setting ``self._token`` only when ``SET NX PX`` won, and
  ``held`` a property reading it.

Beside each, the spelling that is not claimed (the runner that does not test its lock, the other side of the
expression, beat inside every worker, a property that reads no won state) stays reported.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

RUNNER_JOBS = """\
    import httpx
    from sqlalchemy import text

    from ledger.db import SessionLocal


    def run_exclusive(name, body):
        with SessionLocal() as session, session.begin():
            won = session.execute(text("SELECT pg_try_advisory_xact_lock(hashtext(:n))"), {"n": name}).scalar_one()
            {test}
            body(session)


    def _close_out(session):
        rows = session.execute(text("SELECT id FROM periods WHERE state = 'open'")).all()
        for row in rows:
            httpx.post("https://books.example.org/close", json={"id": row.id})
            session.execute(text("UPDATE periods SET state = 'closed' WHERE id = :id"), {"id": row.id})


    def close_out():
        run_exclusive("close_out", _close_out)
"""

DB = """\
    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker

    SessionLocal = sessionmaker(create_engine("postgresql://ledger@db/ledger"))
"""


@pytest.mark.parametrize("test, expected", [("if not won:\n                return", []), ("pass", [(15, "OG302")])])
def test_a_pickup_handed_to_a_claiming_runner(tmp_path, test, expected):
    write(tmp_path, {"ledger/__init__.py": "", "ledger/db.py": DB,
                     "ledger/jobs.py": RUNNER_JOBS.replace("{test}", test)})
    assert findings(tmp_path, "ledger/jobs.py", codes=("OG302",)) == expected


LOCKING = """\
    from contextlib import contextmanager

    from django.db import connection, transaction


    @contextmanager
    def exclusive(key: int):
        with transaction.atomic():
            with connection.cursor() as cur:
                cur.execute("SELECT pg_try_advisory_xact_lock(%s)", [key])
                (got,) = cur.fetchone()
            yield got
"""

SERVICES = """\
    import requests

    from payouts.models import Payout


    def send_due() -> int:
        sent = 0
        for payout in Payout.objects.filter(status="pending")[:50]:
            requests.post("https://bank.example.org/transfers", json={"id": payout.pk}, timeout=10)
            payout.status = "sent"
            payout.save(update_fields=["status"])
            sent += 1
        return sent
"""

WORKER = """\
    import time

    from payouts.locking import exclusive
    from payouts.services import send_due


    def main() -> None:
        while True:
            with exclusive(41) as locked:
                count = {expression}
            print(count)
            time.sleep(60)


    if __name__ == "__main__":
        main()
"""


@pytest.mark.parametrize("expression, expected", [
    ("send_due() if locked else 0", []),
    ("0 if locked else send_due()", [(8, "OG302")]),
])
def test_the_won_side_of_a_conditional_expression(tmp_path, expression, expected):
    write(tmp_path, {"payouts/__init__.py": "", "payouts/locking.py": LOCKING, "payouts/services.py": SERVICES,
                     "payouts/worker.py": WORKER.replace("{expression}", expression),
                     "Dockerfile": 'FROM python:3.11\nCMD ["python", "-m", "payouts.worker"]\n',
                     "docker-compose.yml": "services:\n  worker:\n    build: .\n    deploy:\n      replicas: 2\n"})
    assert findings(tmp_path, "payouts/services.py", codes=("OG302",)) == expected


CELERY_APP = """\
    from celery import Celery
    from celery.schedules import crontab

    app = Celery("dues", include=["dues.tasks"])


    @app.on_after_finalize.connect
    def schedule(sender, **kwargs):
        from dues.tasks import remind

        sender.add_periodic_task(crontab(hour=5, minute=0), remind.s(), name="remind")
"""

TASKS = """\
    import psycopg2
    import requests

    from dues.celery_app import app


    @app.task
    def remind() -> None:
        conn = psycopg2.connect("dbname=dues")
        with conn, conn.cursor() as cur:
            cur.execute("SELECT id, email FROM members WHERE reminded = false")
            for member_id, email in cur.fetchall():
                requests.post("https://mail.example.org/send", json={"to": email}, timeout=10)
                cur.execute("UPDATE members SET reminded = true WHERE id = %s", (member_id,))
"""

COMPOSE = """\
    services:
      worker:
        build: .
        command: celery -A dues.celery_app worker {beat}
        deploy:
          replicas: 3
{beat_service}"""

BEAT_SERVICE = """\
      beat:
        build: .
        command: celery -A dues.celery_app beat
"""


@pytest.mark.parametrize("beat, beat_service, expected", [
    ("", BEAT_SERVICE, []),
    ("-B", "", [(11, "OG302")]),
])
def test_a_task_one_beat_process_enqueues(tmp_path, beat, beat_service, expected):
    write(tmp_path, {"dues/__init__.py": "", "dues/celery_app.py": CELERY_APP, "dues/tasks.py": TASKS,
                     "docker-compose.yml": COMPOSE.replace("{beat}", beat).replace("{beat_service}", beat_service)})
    assert findings(tmp_path, "dues/tasks.py", codes=("OG302",)) == expected


LEASE = """\
    import secrets

    from redis.asyncio import Redis


    class Lease:
        def __init__(self, redis: Redis, key: str, ttl_ms: int) -> None:
            self._redis, self._key, self._ttl_ms = redis, key, ttl_ms
            self._token = None
            self._opened = False

        @property
        def held(self) -> bool:
            return {state}

        async def acquire(self) -> bool:
            token = secrets.token_hex(16)
            self._opened = True
            if await self._redis.set(self._key, token, nx=True, px=self._ttl_ms):
                self._token = token
            return self._token is not None

        async def __aenter__(self) -> "Lease":
            await self.acquire()
            return self

        async def __aexit__(self, *exc) -> None:
            self._token = None
"""

TICKER = """\
    import asyncio

    import httpx
    from redis.asyncio import Redis

    from rates.lease import Lease


    async def refresh(redis: Redis) -> None:
        async with Lease(redis, "lease:rates", 30_000) as lease:
            if not lease.held:
                return
            await httpx.AsyncClient().post("https://rates.example.org/publish", json={})


    async def main() -> None:
        redis = Redis()
        while True:
            await refresh(redis)
            await asyncio.sleep(60)


    if __name__ == "__main__":
        asyncio.run(main())
"""


@pytest.mark.parametrize("state, expected", [("self._token is not None", []), ("self._opened", [(9, "OG201")])])
def test_a_lease_object_whose_enter_claims_and_whose_property_reads_the_win(tmp_path, state, expected):
    write(tmp_path, {"rates/__init__.py": "", "rates/lease.py": LEASE.replace("{state}", state),
                     "rates/ticker.py": TICKER, "Dockerfile": 'FROM python:3.11\nCMD ["python", "-m", "rates.ticker"]\n',
                     "docker-compose.yml": "services:\n  ticker:\n    build: .\n    deploy:\n      replicas: 2\n"})
    assert findings(tmp_path, "rates/ticker.py", codes=("OG201",)) == expected


RAISING_LOCK = """\
    import uuid


    class NotAcquired(RuntimeError):
        pass


    class RedisLock:
        def __init__(self, client, name: str, ttl: int = 600) -> None:
            self.client, self.key, self.ttl = client, f"lock:{name}", ttl
            self.token = uuid.uuid4().hex

        def __enter__(self) -> "RedisLock":
            if not self.client.set(self.key, self.token, {nx}ex=self.ttl):
                raise NotAcquired(self.key)
            return self

        def __exit__(self, *exc) -> bool:
            return False
"""

HUEY_TASKS = """\
    import httpx
    import redis
    from huey import RedisHuey, crontab

    from feeds.locking import NotAcquired, RedisLock

    huey = RedisHuey("feeds")
    store = redis.Redis()


    @huey.periodic_task(crontab(minute="*/5"))
    def push_prices() -> None:
        try:
            with RedisLock(store, "prices", ttl=300):
                httpx.post("https://partner.example.org/prices", json={})
        except NotAcquired:
            pass
"""


@pytest.mark.parametrize("nx, expected", [("nx=True, ", []), ("", [(12, "OG201")])])
def test_a_lock_object_whose_enter_raises_unless_it_won(tmp_path, nx, expected):
    write(tmp_path, {"feeds/__init__.py": "", "feeds/locking.py": RAISING_LOCK.replace("{nx}", nx),
                     "feeds/tasks.py": HUEY_TASKS,
                     "Dockerfile": 'FROM python:3.11\nCMD ["huey_consumer", "feeds.tasks.huey"]\n'})
    assert findings(tmp_path, "feeds/tasks.py", codes=("OG201",)) == expected
