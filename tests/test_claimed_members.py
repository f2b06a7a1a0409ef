"""Work claimed one item at a time, and work one scheduling process runs.

- OG201: a worker's pass walks the members of a shared Redis set, takes a lease per member, and takes the
  member out of the set once its work is done: the lease is given back after the work, but what was done has
  left the set, so a later pass (on any replica) finds nothing left of it.  The same loop that leaves the
  member in the set repeats its work on the next replica whose pass comes after the release.
- OG302: rows picked by state and handed one by one to a helper that moves each row with a conditional update
  and answers whether its row count was 1 (``if not await take(session, row.id): continue``): a row another
  replica took is skipped, not written twice.  The same loop without the helper's test is a pickup without a
  claim, reported once (the awaited call and the chain inside it are one pickup).
- OG302: a Celery task that picks rows by state, put on a beat schedule that one beat process runs (no worker
  embeds beat): each tick runs it once, on one worker.  With ``worker -B`` in the image every replica's beat
  sends it.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LEASES = """\
    import uuid

    import redis


    class Lease:
        def __init__(self, client: redis.Redis, name: str, seconds: int) -> None:
            self.client = client
            self.key = f"lease:{name}"
            self.token = uuid.uuid4().hex
            self.seconds = seconds

        def take(self) -> bool:
            return bool(self.client.set(self.key, self.token, nx=True, ex=self.seconds))

        def give_back(self) -> None:
            if self.client.get(self.key) == self.token:
                self.client.delete(self.key)
"""

SYNC = """\
    import time

    import redis
    import requests

    from mirror.leases import Lease

    WAITING = "mirror:waiting"


    def publish(client: redis.Redis, feed: str) -> None:
        requests.post("https://cdn.example.com/purge", json={"feed": feed}, timeout=10)
        client.srem(WAITING, feed)


    def sweep(client: redis.Redis) -> None:
        for feed in client.smembers(WAITING):
            lease = Lease(client, f"feed:{feed}", 120)
            if not lease.take():
                continue
            try:
                if client.sismember(WAITING, feed):
                    publish(client, feed)
            finally:
                lease.give_back()


    def main() -> None:
        client = redis.Redis.from_url("redis://cache:6379/0", decode_responses=True)
        while True:
            sweep(client)
            time.sleep(15)


    if __name__ == "__main__":
        main()
"""


def _mirror(tmp_path, sync: str) -> None:
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'mirror'\n", "Procfile": "worker: python -m mirror.sync\n",
                     "mirror/__init__.py": "", "mirror/leases.py": LEASES, "mirror/sync.py": sync})


@pytest.mark.parametrize("sync", [
    SYNC,
    # the removal in the loop itself, not in the function it calls
    SYNC.replace("        client.srem(WAITING, feed)\n", "").replace(
        "                    publish(client, feed)", "                    publish(client, feed)\n                    client.srem(WAITING, feed)"),
], ids=["removed-by-the-callee", "removed-in-the-loop"])
def test_a_pass_that_takes_each_done_member_out_of_the_walked_set_is_claimed_work(tmp_path, sync):
    _mirror(tmp_path, sync)
    assert findings(tmp_path, "mirror/sync.py", codes=("OG201",)) == []


def test_a_pass_that_leaves_the_done_member_in_the_set_repeats_it_after_the_release(tmp_path):
    _mirror(tmp_path, SYNC.replace("        client.srem(WAITING, feed)\n", ""))
    assert findings(tmp_path, "mirror/sync.py", codes=("OG201",)) == [(15, "OG201")]


SCANS = """\
    import httpx
    from sqlalchemy import select, update
    from sqlalchemy.ext.asyncio import AsyncSession

    from scans.models import Scan, Session


    async def take(session: AsyncSession, scan_id: int) -> bool:
        moved = await session.execute(
            update(Scan).where(Scan.id == scan_id, Scan.state == "queued").values(state="running"))
        await session.commit()
        return moved.rowcount == 1


    async def run_queued(client: httpx.AsyncClient) -> None:
        async with Session() as session:
            scans = (
                await session.scalars(select(Scan).where(Scan.state == "queued").limit(20))
            ).all()
            for scan in scans:
                if not await take(session, scan.id):
                    continue
                report = await client.post("https://scanner.example.com/run", json={"target": scan.target})
                scan.report = report.text
                scan.state = "finished"
                await session.commit()
"""

SCAN_MODELS = """\
    from sqlalchemy import String
    from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

    engine = create_async_engine("postgresql+asyncpg://scans@db/scans")
    Session = async_sessionmaker(engine)


    class Base(DeclarativeBase):
        pass


    class Scan(Base):
        __tablename__ = "scans"
        id: Mapped[int] = mapped_column(primary_key=True)
        target: Mapped[str] = mapped_column(String(200))
        state: Mapped[str] = mapped_column(String(20))
        report: Mapped[str] = mapped_column(String, default="")
"""


@pytest.mark.parametrize("scans", [
    SCANS,
    SCANS.replace("return moved.rowcount == 1", "return bool(moved.rowcount)"),
    SCANS.replace("if not await take(session, scan.id):", "if await take(session, scan.id) is False:"),
], ids=["rowcount-is-one", "bool-of-rowcount", "is-false"])
def test_rows_each_moved_by_a_helper_that_answers_the_conditional_update_are_claimed(tmp_path, scans):
    write(tmp_path, {"scans/__init__.py": "", "scans/models.py": SCAN_MODELS, "scans/worker.py": scans})
    assert findings(tmp_path, "scans/worker.py", codes=("OG302",)) == []


def test_the_same_rows_without_the_helpers_answer_are_one_unclaimed_pickup(tmp_path):
    unclaimed = SCANS.replace("                if not await take(session, scan.id):\n                    continue\n", "")
    write(tmp_path, {"scans/__init__.py": "", "scans/models.py": SCAN_MODELS, "scans/worker.py": unclaimed})
    assert findings(tmp_path, "scans/worker.py", codes=("OG302",)) == [(17, "OG302")]


BILLING_TASKS = """\
    from sqlalchemy import text

    from billing.app import celery_app
    from billing.db import engine


    @celery_app.task(name="billing.renew")
    def renew() -> None:
        with engine.connect() as conn:
            due = conn.execute(text("SELECT id, plan FROM subscriptions WHERE state = 'due'")).all()
        for row in due:
            with engine.begin() as conn:
                conn.execute(text("UPDATE subscriptions SET state = 'renewed' WHERE id = :id"), {"id": row.id})
"""

BILLING_APP = """\
    from celery import Celery
    from celery.schedules import crontab

    celery_app = Celery("billing", broker="redis://queue:6379/0", include=["billing.tasks"])
    celery_app.conf.beat_schedule = {
        "renew-nightly": {"task": "billing.renew", "schedule": crontab(hour=2, minute=0)},
    }
"""


@pytest.mark.parametrize("command, expected", [
    ('["celery", "-A", "billing.app", "worker"]', []),
    ('["celery", "-A", "billing.app", "worker", "-B"]', [(10, "OG302")]),
], ids=["beat-in-its-own-process", "beat-in-every-worker"])
def test_a_task_one_beat_process_schedules_picks_its_rows_alone(tmp_path, command, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'billing'\n", "Dockerfile": f"FROM python:3.12\nCMD {command}\n",
                     "billing/__init__.py": "", "billing/app.py": BILLING_APP, "billing/tasks.py": BILLING_TASKS,
                     "billing/db.py": "from sqlalchemy import create_engine\n\nengine = create_engine('postgresql://db/billing')\n"})
    assert findings(tmp_path, "billing/tasks.py", codes=("OG302",)) == expected


# -- a keyed store read by its bare noun and written by its setter ------------------------------------------------
LEDGER = """\
    from redis.asyncio import Redis


    class Ledger:
        def __init__(self, redis: Redis) -> None:
            self.redis = redis

        async def seats(self, show: int, day: str) -> int:
            raw = await self.redis.get(f"seats:{show}:{day}")
            return int(raw or 0)

        async def set_seats(self, show: int, day: str, seats: int) -> None:
            await self.redis.set(f"seats:{show}:{day}", seats)
"""

BOOKING = """\
    from box.ledger import Ledger


    async def book(ledger: Ledger, show: int, day: str, count: int) -> int:
        left = await ledger.seats(show, day)
        if left < count:
            raise ValueError("sold out")
        await ledger.set_seats(show, day, left - count)
        return left - count
"""


def test_a_store_read_by_its_noun_and_written_back_by_its_setter_loses_updates(tmp_path):
    write(tmp_path, {"box/__init__.py": "", "box/ledger.py": LEDGER, "box/booking.py": BOOKING})
    assert findings(tmp_path, "box/booking.py", codes=("OG301",)) == [(8, "OG301")]


def test_the_same_setter_handed_a_value_not_computed_from_the_read_is_fine(tmp_path):
    reset = BOOKING.replace("await ledger.set_seats(show, day, left - count)", "await ledger.set_seats(show, day, 0)")
    write(tmp_path, {"box/__init__.py": "", "box/ledger.py": LEDGER, "box/booking.py": reset})
    assert findings(tmp_path, "box/booking.py", codes=("OG301",)) == []


# -- rows a repository made on the spot picks, moved inside a block that commits on exit ---------------------------
REPO = """\
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from tolls.models import Pass


    class PassRepo:
        def __init__(self, db: Session) -> None:
            self.db = db

        def expired(self, limit: int = 100):
            query = select(Pass).where(Pass.state == "expired").limit(limit)
            return self.db.scalars(query).all()
"""

SWEEP = """\
    import requests
    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker

    from tolls.repo import PassRepo

    factory = sessionmaker(create_engine("postgresql://tolls@db/tolls"))


    def refund_expired() -> None:
        with factory.begin() as db:
            for toll_pass in PassRepo(db).expired(limit=20):
                requests.post("https://pay.example.com/refunds", json={"pass": toll_pass.id}, timeout=10)
                toll_pass.state = "refunded"
"""

PASS_MODEL = """\
    from sqlalchemy import String
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class Pass(Base):
        __tablename__ = "passes"
        id: Mapped[int] = mapped_column(primary_key=True)
        state: Mapped[str] = mapped_column(String(20))
"""


def test_rows_a_repository_picks_moved_in_a_block_that_commits_on_exit_are_an_unclaimed_pickup(tmp_path):
    write(tmp_path, {"tolls/__init__.py": "", "tolls/models.py": PASS_MODEL, "tolls/repo.py": REPO,
                     "tolls/sweep.py": SWEEP})
    assert findings(tmp_path, "tolls/sweep.py", codes=("OG302",)) == [(12, "OG302")]


def test_the_same_rows_locked_with_skip_locked_are_claimed(tmp_path):
    locked = REPO.replace('.limit(limit)', '.limit(limit).with_for_update(skip_locked=True)')
    write(tmp_path, {"tolls/__init__.py": "", "tolls/models.py": PASS_MODEL, "tolls/repo.py": locked,
                     "tolls/sweep.py": SWEEP})
    assert findings(tmp_path, "tolls/sweep.py", codes=("OG302",)) == []
