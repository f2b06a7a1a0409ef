"""OG106: a try-lock run on a cursor whose answer the next statement on that cursor replaces.

``cur.execute("SELECT pg_try_advisory_xact_lock(%s)", ...)`` then ``cur.execute(ORDERS)`` then
``cur.fetchall()``: the fetch reads the orders, and the lock's answer was never read.  Fetched before the next
statement, it was.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

ASYNC = """\
    from psycopg_pool import AsyncConnectionPool

    ROUTING_LOCK = 7_301


    async def route_orders(pool: AsyncConnectionPool, add_stop) -> None:
        async with pool.connection() as conn:
            async with conn.transaction():
                async with conn.cursor() as cur:
                    await cur.execute("SELECT pg_try_advisory_xact_lock(%s)", (ROUTING_LOCK,))
                    await cur.execute("SELECT id, address FROM standing_orders WHERE active")
                    for order in await cur.fetchall():
                        await add_stop(order)
"""

SYNC = (ASYNC.replace("AsyncConnectionPool", "ConnectionPool").replace("async def", "def").replace("async with", "with")
        .replace("await ", "").replace("from psycopg_pool import", "from psycopg_pool import"))


@pytest.mark.parametrize("source", [ASYNC, SYNC], ids=["async", "sync"])
def test_an_answer_replaced_by_the_next_statement_is_ignored(tmp_path, source):
    write(tmp_path, {"bakery/__init__.py": "", "bakery/routing.py": source})
    assert findings(tmp_path, "bakery/routing.py", codes=("OG106",)) == [(10, "OG106")]


@pytest.mark.parametrize("source", [ASYNC, SYNC], ids=["async", "sync"])
def test_an_answer_fetched_before_the_next_statement_is_read(tmp_path, source):
    awaited = "await " if "async def" in source else ""
    read = source.replace(
        'cur.execute("SELECT id, address',
        f'cur.fetchone()\n                    {awaited}cur.execute("SELECT id, address', 1)
    write(tmp_path, {"bakery/__init__.py": "", "bakery/routing.py": read})
    assert findings(tmp_path, "bakery/routing.py", codes=("OG106",)) == []


SET_NX = """\
    from redis.asyncio import Redis

    redis = Redis(host="redis")


    async def place_orders(week: str, place) -> int:
        await redis.set(f"orders:{week}", "worker-1", nx=True, ex=6 * 86400)
        return await place(week)
"""


def test_a_dropped_set_nx_answer_claims_nothing(tmp_path):
    write(tmp_path, {"veg/__init__.py": "", "veg/orders.py": SET_NX})
    assert findings(tmp_path, "veg/orders.py", codes=("OG106",)) == [(7, "OG106")]


def test_a_tested_set_nx_answer_is_a_claim(tmp_path):
    tested = SET_NX.replace('        await redis.set(f"orders:{week}", "worker-1", nx=True, ex=6 * 86400)',
                            '        if not await redis.set(f"orders:{week}", "worker-1", nx=True, ex=6 * 86400):\n'
                            '            return 0')
    write(tmp_path, {"veg/__init__.py": "", "veg/orders.py": tested})
    assert findings(tmp_path, "veg/orders.py", codes=("OG106",)) == []


def test_a_value_cached_once_and_read_back_is_no_claim(tmp_path):
    cached = """\
    from redis import Redis

    redis = Redis(host="redis")


    def token(fetch) -> str:
        found = redis.get("partner:token")
        if found:
            return found.decode()
        fresh = fetch()
        redis.set("partner:token", fresh, ex=3300, nx=True)
        return fresh
"""
    write(tmp_path, {"veg/__init__.py": "", "veg/orders.py": cached})
    assert findings(tmp_path, "veg/orders.py", codes=("OG106",)) == []


def test_a_value_stored_under_a_key_the_call_mints_is_no_claim(tmp_path):
    minted = """\
    import secrets

    from redis.asyncio import Redis

    redis = Redis(host="redis")


    async def issue(member_id: int) -> str:
        token = secrets.token_urlsafe(32)
        await redis.set(f"magic:{token}", member_id, ex=900, nx=True)
        return token
"""
    write(tmp_path, {"veg/__init__.py": "", "veg/orders.py": minted})
    assert findings(tmp_path, "veg/orders.py", codes=("OG106",)) == []
