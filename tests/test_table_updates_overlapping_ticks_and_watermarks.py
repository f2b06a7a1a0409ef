"""Three readings found on code written for the purpose.

- OG301: ``accounts.update().where(...).values(balance=new)``, a Core table's own UPDATE, writing back a value
  computed from ``select(accounts.c.balance)``, as ``update(accounts)`` does.
- OG302: an arq ``cron`` whose ticks come closer together than one run may last (its ``timeout``, else arq's
  300 s) runs overlapping passes on other workers: a pickup in it is no "one run at a time" pickup.
- OG201/OG302: rows picked by a watermark (``updated_at > coalesce(synced_at, 'epoch')``) and moved out of the
  selection (``SET synced_at = now()``) are marked as done: a lease released after the work does not let a later
  run redo them.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

WALLET = """\
    from sqlalchemy import Column, Integer, MetaData, Numeric, Table, select

    metadata = MetaData()
    accounts = Table("accounts", metadata, Column("id", Integer, primary_key=True), Column("balance", Numeric))


    def apply(engine, aid, delta):
        with engine.begin() as conn:
            balance = conn.execute(select(accounts.c.balance).where(accounts.c.id == aid){lock}).scalar_one()
            conn.execute(accounts.update().where(accounts.c.id == aid).values(balance=balance + delta))
"""


@pytest.mark.parametrize("lock, expected", [("", [(10, "OG301")]), (".with_for_update()", [])])
def test_a_core_tables_own_update(tmp_path, lock, expected):
    write(tmp_path, {"wallet/__init__.py": "", "wallet/service.py": WALLET.replace("{lock}", lock)})
    assert findings(tmp_path, "wallet/service.py", codes=("OG301",)) == expected


JOBS = """\
    async def render_queued(ctx):
        pool = ctx["pg"]
        rows = await pool.fetch("SELECT id, payload FROM jobs WHERE status = 'queued' ORDER BY id LIMIT 10")
        for row in rows:
            await pool.execute("UPDATE jobs SET status = 'running' WHERE id = $1", row["id"])
            await ctx["http"].post("https://render.internal/render", json={"payload": row["payload"]})
"""

WORKER = """\
    from arq import cron

    from renderq.jobs import render_queued


    class WorkerSettings:
        cron_jobs = [cron(render_queued, {timing})]
"""


@pytest.mark.parametrize("timing, expected", [
    ("second={0, 15, 30, 45}, timeout=600", [(3, "OG302")]),  # (a run may last 600 s, a tick comes every 15 s)
    ("second={0, 30}", [(3, "OG302")]),  # (arq's own 300 s against 30 s)
    ("minute={0}, timeout=120", []),  # (hourly, each run stopped after 120 s: one at a time)
])
def test_arq_cron_ticks_that_may_overlap(tmp_path, timing, expected):
    write(tmp_path, {"renderq/__init__.py": "", "renderq/jobs.py": JOBS,
                     "renderq/worker.py": WORKER.replace("{timing}", timing)})
    assert findings(tmp_path, "renderq/jobs.py", codes=("OG302",)) == expected


SYNC = """\
    import httpx
    from apscheduler.schedulers.asyncio import AsyncIOScheduler

    from crm.lease import Lease


    async def push_changed(db, http):
        rows = await db.fetch("SELECT id, email FROM contacts WHERE updated_at > coalesce(synced_at, 'epoch')")
        for row in rows:
            await http.post("https://crm.example/contacts", json={"id": row["id"], "email": row["email"]})
            await db.execute("UPDATE contacts SET {column} = now() WHERE id = $1", row["id"])


    async def sync_job(redis, db):
        lease = Lease(redis, "crm-sync")
        if not await lease.acquire():
            return
        try:
            await push_changed(db, httpx.AsyncClient())
        finally:
            await lease.release()


    scheduler = AsyncIOScheduler()
    scheduler.add_job(sync_job, "interval", minutes=5, args=[None, None])
"""

LEASE = """\
    import secrets


    class Lease:
        def __init__(self, redis, name):
            self.redis, self.key, self.token = redis, f"lease:{name}", secrets.token_hex(8)

        async def acquire(self) -> bool:
            return bool(await self.redis.set(self.key, self.token, nx=True, px=60000))

        async def release(self) -> None:
            await self.redis.eval("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) "
                                  "end return 0", 1, self.key, self.token)
"""


@pytest.mark.parametrize("column, expected", [("synced_at", []), ("seen_at", [(14, "OG201")])])
def test_rows_moved_past_their_watermark_are_marked_done(tmp_path, column, expected):
    write(tmp_path, {"crm/__init__.py": "", "crm/lease.py": LEASE, "crm/sync.py": SYNC.replace("{column}", column)})
    assert findings(tmp_path, "crm/sync.py", codes=("OG201",)) == expected
