"""A pickup run only in the branch a won claim takes, and a Redis ``SETNX`` as a claim.

The function that selects rows by their state and moves them is called only where its caller has won a lease
(``if await lease.try_acquire(): await push_pending(...)``): one replica at a time runs it, like a caller that
leaves when the lease is lost.  A lease taken with ``setnx`` is won by one replica too; that it never expires
is OG501's finding, not a missing claim.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LEASE = """\
    import secrets


    class Lease:
        def __init__(self, redis, name, ttl_s):
            self.redis = redis
            self.key = f"lease:{name}"
            self.ttl_s = ttl_s
            self.token = secrets.token_hex(16)

        async def try_acquire(self) -> bool:
            return bool(await self.redis.set(self.key, self.token, nx=True, ex=self.ttl_s))
"""

PUSH = """\
    import asyncio

    import httpx

    from feed.lease import Lease


    async def push_pending(pool) -> None:
        rows = await pool.fetch("SELECT id, body FROM outgoing WHERE sent_at IS NULL LIMIT 50")
        for row in rows:
            await httpx.AsyncClient().post("https://partner.example.org/in", content=row["body"])
            await pool.execute("UPDATE outgoing SET sent_at = now() WHERE id = $1", row["id"])


    async def push_loop(pool, lease: Lease) -> None:
        while True:
            if await lease.try_acquire():
                await push_pending(pool)
            await asyncio.sleep(30)
"""

GUARD_CLAUSE = PUSH.replace("""            if await lease.try_acquire():
                await push_pending(pool)
            await asyncio.sleep(30)""", """            await asyncio.sleep(30)
            if not await lease.try_acquire():
                continue
            await push_pending(pool)""")

UNGUARDED = PUSH.replace("""            if await lease.try_acquire():
                await push_pending(pool)""", """            await push_pending(pool)""")


def _project(tmp_path, push: str, lease: str = LEASE) -> None:
    write(tmp_path, {"feed/__init__.py": "", "feed/lease.py": lease, "feed/push.py": push})


@pytest.mark.parametrize("push", [PUSH, GUARD_CLAUSE], ids=["won-branch", "guard-clause"])
def test_a_pickup_called_only_under_a_won_lease_is_claimed(tmp_path, push):
    _project(tmp_path, push)
    assert findings(tmp_path, "feed/push.py", codes=("OG302",)) == []


def test_the_same_pickup_called_without_the_lease_is_reported(tmp_path):
    _project(tmp_path, UNGUARDED)
    assert findings(tmp_path, "feed/push.py", codes=("OG302",)) == [(9, "OG302")]


@pytest.mark.parametrize("acquire", [
    "return bool(await self.redis.setnx(self.key, self.token))",
    "return bool(await self.redis.set(self.key, self.token, nx=True))",
], ids=["setnx", "set-nx-without-expiry"])
def test_a_lease_without_expiry_is_still_a_claim_and_its_expiry_is_reported(tmp_path, acquire):
    lease = LEASE.replace("return bool(await self.redis.set(self.key, self.token, nx=True, ex=self.ttl_s))", acquire)
    lease = "    from redis.asyncio import Redis\n" + lease.replace("def __init__(self, redis,", "def __init__(self, redis: Redis,")
    _project(tmp_path, PUSH, lease=lease)
    assert findings(tmp_path, "feed/push.py", codes=("OG302", "OG201")) == []
    assert [code for _, code in findings(tmp_path, "feed/lease.py", codes=("OG501",))] == ["OG501"]


JOB_LOCK = """\
    from contextlib import asynccontextmanager


    @asynccontextmanager
    async def job_lock(pool, key: int):
        async with pool.acquire() as conn:
            async with conn.transaction():
                acquired = bool(await conn.fetchval("SELECT pg_try_advisory_xact_lock($1)", key))
                yield conn, acquired
"""

DISPATCH = """\
    import httpx

    from feed.locks import job_lock


    async def dispatch(pool) -> int:
        async with job_lock(pool, 7001) as (conn, acquired):
            if not acquired:
                return 0
            rows = await conn.fetch("SELECT id, body FROM outgoing WHERE sent_at IS NULL LIMIT 50")
            for row in rows:
                await httpx.AsyncClient().post("https://partner.example.org/in", content=row["body"])
                await conn.execute("UPDATE outgoing SET sent_at = now() WHERE id = $1", row["id"])
        return len(rows)
"""


def test_a_claim_yielded_with_its_connection_claims_the_pickup_after_its_test(tmp_path):
    write(tmp_path, {"feed/__init__.py": "", "feed/locks.py": JOB_LOCK, "feed/dispatch.py": DISPATCH})
    assert findings(tmp_path, "feed/dispatch.py", codes=("OG302",)) == []


def test_the_same_pickup_without_the_test_is_reported(tmp_path):
    untested = DISPATCH.replace("""            if not acquired:
                return 0
""", "")
    write(tmp_path, {"feed/__init__.py": "", "feed/locks.py": JOB_LOCK, "feed/dispatch.py": untested})
    assert findings(tmp_path, "feed/dispatch.py", codes=("OG302",)) == [(8, "OG302")]


def test_a_tuple_whose_element_is_not_the_answer_claims_nothing(tmp_path):
    other = JOB_LOCK.replace("yield conn, acquired", "yield conn, key")
    write(tmp_path, {"feed/__init__.py": "", "feed/locks.py": other, "feed/dispatch.py": DISPATCH})
    assert findings(tmp_path, "feed/dispatch.py", codes=("OG302",)) == [(10, "OG302")]


NOTICES = """\
    from psycopg_pool import ConnectionPool

    pool = ConnectionPool("postgresql://db/library")


    def raise_notice_levels(send) -> None:
        with pool.connection() as conn, conn.transaction():
            (acquired,) = conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (4242,)).fetchone()
            if not acquired:
                return
            loans = conn.execute("SELECT id, notice_level FROM loans WHERE returned_at IS NULL").fetchall()
            for loan_id, notice_level in loans:
                send(loan_id)
                conn.execute("UPDATE loans SET notice_level = %s WHERE id = %s", (notice_level + 1, loan_id))
"""


def test_a_read_and_write_back_only_a_claim_winner_reaches_is_no_lost_update(tmp_path):
    write(tmp_path, {"library/__init__.py": "", "library/notices.py": NOTICES})
    assert findings(tmp_path, "library/notices.py", codes=("OG301",)) == []


def test_the_same_read_and_write_back_without_the_claim_is_reported(tmp_path):
    unclaimed = NOTICES.replace("""            if not acquired:
                return
""", "")
    write(tmp_path, {"library/__init__.py": "", "library/notices.py": unclaimed})
    assert findings(tmp_path, "library/notices.py", codes=("OG301",)) == [(12, "OG301")]


def test_a_conditional_update_owns_its_rows_not_the_row_changed_after_it(tmp_path):
    source = """\
    from forum.models import Notification


    def read_notifications(user, post) -> None:
        marked = Notification.objects.filter(user=user, post=post, is_read=False).update(is_read=True)
        if marked:
            user.unread_notifications = max(0, user.unread_notifications - marked)
            user.save(update_fields=["unread_notifications"])
"""
    write(tmp_path, {"forum/__init__.py": "", "forum/models.py": "from django.db import models\n",
                     "forum/reads.py": source})
    assert findings(tmp_path, "forum/reads.py", codes=("OG301",)) == [(7, "OG301")]


CONNECTION_OR_NONE = """\
    from contextlib import contextmanager

    from sqlalchemy import create_engine, func, select, text

    engine = create_engine("postgresql+psycopg://db/shop")


    @contextmanager
    def session_lock(key: int):
        with engine.connect() as conn:
            granted = conn.execute(select(func.pg_try_advisory_lock(key))).scalar_one()
            if not granted:
                yield None
                return
            try:
                yield conn
            finally:
                conn.execute(select(func.pg_advisory_unlock(key)))


    def bump_counts(key: int) -> None:
        with session_lock(key) as conn:
            if conn is None:
                return
            rows = conn.execute(text("SELECT id, sent FROM tallies WHERE active")).all()
            for row_id, sent in rows:
                conn.execute(text("UPDATE tallies SET sent = :n WHERE id = :id"), {"n": sent + 1, "id": row_id})
"""


def test_a_context_manager_yielding_its_connection_when_won_and_none_when_lost_is_a_claim(tmp_path):
    write(tmp_path, {"shop/__init__.py": "", "shop/tallies.py": CONNECTION_OR_NONE})
    assert findings(tmp_path, "shop/tallies.py", codes=("OG301",)) == []


def test_one_yielding_its_connection_either_way_claims_nothing(tmp_path):
    either = CONNECTION_OR_NONE.replace("""            if not granted:
                yield None
                return
""", "")
    write(tmp_path, {"shop/__init__.py": "", "shop/tallies.py": either})
    assert findings(tmp_path, "shop/tallies.py", codes=("OG301",)) == [(24, "OG301")]
