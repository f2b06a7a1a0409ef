"""Who runs a registration, and what a pass takes.

- OG201: a ``schedule`` clock in a program that the deployment runs as one replica (its own Deployment with
  ``replicas: 1``) is registered once; the same program with two replicas registers it in each.
- OG201: a sweep that every replica runs but that takes its rows with one statement moving them out of the state
  it picks them by, and returning them (``update(...).where(status == "pending").values(status="expired")
  .returning(...)``, or the SQL), works on other rows in each replica.
- OG201: rq-scheduler's ``cron`` called by every replica's start-up without an ``id`` adds another copy of the
  job each start, although one scheduler process fires them.
- OG502: a lease renewed with a plain ``EXPIRE`` of its key extends another holder's lock after an expiry.
- OG301: a row a repository held on ``self`` loads and returns (``self._repo.get(uid)``), merged and committed
  through the session the service keeps.
"""
from __future__ import annotations

import textwrap

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

CLOCK = """\
    import time

    import schedule

    from shelf.actors import sync_stock


    def _enqueue() -> None:
        sync_stock.send()


    def run() -> None:
        schedule.every(10).minutes.do(_enqueue)
        while True:
            schedule.run_pending()
            time.sleep(1)
"""

MAIN = """\
    from shelf.clock import run

    if __name__ == "__main__":
        run()
"""

ACTORS = """\
    import dramatiq
    import httpx


    @dramatiq.actor
    def sync_stock() -> None:
        httpx.post("https://erp.example/sync")
"""

CLOCK_DEPLOYMENT = """\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: shelf-clock
    spec:
      replicas: {replicas}
      template:
        spec:
          containers:
            - name: clock
              image: shelf:1
              command: ["python", "-m", "shelf.clockmain"]
"""


@pytest.mark.parametrize("replicas, expected", [(1, []), (2, ["OG201"])])
def test_a_clock_program_the_deployment_runs_once_registers_its_jobs_once(tmp_path, replicas, expected):
    write(tmp_path, {"shelf/__init__.py": "", "shelf/clock.py": CLOCK, "shelf/clockmain.py": MAIN,
                     "shelf/actors.py": ACTORS, "k8s/clock.yaml": CLOCK_DEPLOYMENT.format(replicas=replicas)})
    assert [code for _, code in findings(tmp_path, "shelf/clock.py")] == expected


SWEEP = """\
    import asyncio

    import httpx
    from sqlalchemy import select, update
    from sqlalchemy.ext.asyncio import async_sessionmaker

    from shop.models import Order


    async def sweep(sessions: async_sessionmaker) -> None:
        while True:
            async with sessions() as session:
{take}
                await session.commit()
            for email in emails:
                await httpx.AsyncClient().post("https://mail.example/send", json={{"to": email}})
            await asyncio.sleep(300)
"""

MOVED = """\
                rows = await session.execute(
                    update(Order).where(Order.status == "pending").values(status="expired").returning(Order.email))
                emails = [row.email for row in rows]"""

MOVED_SQL = """\
                rows = await session.execute(text(
                    "UPDATE orders SET status = 'expired' WHERE status = 'pending' RETURNING email"))
                emails = [row.email for row in rows]"""

READ = """\
                orders = (await session.scalars(select(Order).where(Order.status == "pending"))).all()
                emails = [order.email for order in orders]"""

APP = """\
    import asyncio
    from contextlib import asynccontextmanager

    from fastapi import FastAPI

    from shop.sweeper import sweep


    @asynccontextmanager
    async def lifespan(app: FastAPI):
        asyncio.create_task(sweep(app.state.sessions))
        yield


    app = FastAPI(lifespan=lifespan)
"""


@pytest.mark.parametrize("take, expected", [(MOVED, []), (MOVED_SQL, []), (READ, ["OG201"])],
                         ids=["update-returning", "sql-update-returning", "plain-select"])
def test_a_sweep_that_moves_the_rows_it_returns_works_on_other_rows_in_each_replica(tmp_path, take, expected):
    sweeper = SWEEP.format(take=take)
    if take is MOVED_SQL:
        sweeper = sweeper.replace("from sqlalchemy import select, update", "from sqlalchemy import text")
    write(tmp_path, {"shop/__init__.py": "", "shop/models.py": "class Order:\n    pass\n",
                     "shop/sweeper.py": sweeper, "shop/app.py": APP})
    assert [code for _, code in findings(tmp_path, "shop/app.py")] == expected


REGISTER = """\
    from rq_scheduler import Scheduler

    from ledger.jobs import send_statements


    def register(scheduler: Scheduler) -> None:
        scheduler.cron("0 6 * * *", func=send_statements{extra})
"""

FACTORY = """\
    from flask import Flask
    from redis import Redis
    from rq_scheduler import Scheduler

    from ledger.scheduling import register


    def create_app() -> Flask:
        app = Flask(__name__)
        register(Scheduler(connection=Redis()))
        return app
"""

JOBS = """\
    import smtplib


    def send_statements() -> None:
        with smtplib.SMTP("mail") as smtp:
            smtp.sendmail("a@example.com", ["b@example.com"], "statement")
"""


@pytest.mark.parametrize("extra, expected", [("", ["OG201"]), (', id="daily-statements"', [])],
                         ids=["no-id", "stable-id"])
def test_a_cron_entry_every_replica_start_adds_again(tmp_path, extra, expected):
    write(tmp_path, {"ledger/__init__.py": "", "ledger/scheduling.py": REGISTER.format(extra=extra),
                     "ledger/app.py": FACTORY, "ledger/jobs.py": JOBS})
    assert [code for _, code in findings(tmp_path, "ledger/scheduling.py")] == expected


LEASE = """\
    import threading
    import uuid

    import redis

    _RENEW = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"


    class Lease:
        def __init__(self, client: redis.Redis, key: str) -> None:
            self.client = client
            self.key = key
            self.token = uuid.uuid4().hex
            self._renew = client.register_script(_RENEW)

        def take(self) -> bool:
            return bool(self.client.set(self.key, self.token, nx=True, ex=30))

        def keep_alive(self, stop: threading.Event) -> None:
            while not stop.wait(10):
{renew}
"""

PLAIN = """\
                self.client.expire(self.key, 30)"""

CHECKED = """\
                self._renew(keys=[self.key], args=[self.token, 30000])"""


@pytest.mark.parametrize("renew, expected", [(PLAIN, ["OG502"]), (CHECKED, [])], ids=["plain-expire", "checked"])
def test_a_lease_renewed_with_a_plain_expire_extends_another_holder(tmp_path, renew, expected):
    write(tmp_path, {"feed/__init__.py": "", "feed/lease.py": LEASE.format(renew=renew)})
    assert [code for _, code in findings(tmp_path, "feed/lease.py", codes=("OG502",))] == expected


REPOSITORY = """\
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from learn.models import Profile


    class Profiles:
        def __init__(self, session: Session) -> None:
            self._session = session

        def get(self, user_id: int):
            return self._session.scalar(select(Profile).where(Profile.user_id == user_id))
"""

SERVICE = """\
    from sqlalchemy.orm import Session

    from learn.repositories import Profiles


    class Preferences:
        def __init__(self, session: Session) -> None:
            self._session = session
            self._repo = Profiles(session)

        def set(self, user_id: int, key: str, value) -> None:
            profile = self._repo.get(user_id)
            profile.preferences = {**profile.preferences, key: value}
            self._session.commit()
"""

MODELS = """\
    from sqlalchemy import JSON
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class Profile(Base):
        __tablename__ = "profiles"
        user_id: Mapped[int] = mapped_column(primary_key=True)
        preferences: Mapped[dict] = mapped_column(JSON, default=dict)
"""


def test_a_row_a_repository_on_self_returns_merged_and_committed(tmp_path):
    write(tmp_path, {"learn/__init__.py": "", "learn/models.py": MODELS, "learn/repositories.py": REPOSITORY,
                     "learn/services.py": SERVICE})
    line = next(i for i, text in enumerate(textwrap.dedent(SERVICE).splitlines(), 1) if "{**profile" in text)
    assert findings(tmp_path, "learn/services.py", codes=("OG301",)) == [(line, "OG301")]
