"""Source texts several test modules check: one hazard every surface must report, and its clean twin."""

# OG101 (a lock on an asyncpg pool is reset at once) and OG103 (a blocking lock on a fixed key).
HAZARD = """\
import asyncpg
async def nightly(dsn):
    pool = await asyncpg.create_pool(dsn)
    await pool.execute("SELECT pg_advisory_lock(42)")
"""

CLEAN = """\
import asyncpg


async def nightly(dsn):
    pool = await asyncpg.create_pool(dsn)
    async with pool.acquire() as conn:
        async with conn.transaction():
            acquired = await conn.fetchval("SELECT pg_try_advisory_xact_lock(42)")
            if not acquired:
                return
            await conn.execute("DELETE FROM sessions WHERE expires_at < now()")
"""

# OG104: an advisory lock key from hash(); the finding carries an (unsafe) fix.
UNSTABLE_KEY = """\
import psycopg

NIGHTLY_KEY = hash("nightly-report")


def nightly_report(conn: psycopg.Connection) -> None:
    with conn.transaction():
        got = conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (NIGHTLY_KEY,)).fetchone()[0]
        if not got:
            return
        conn.execute("INSERT INTO reports (day) VALUES (current_date)")
"""


# A module of lock helpers: a lazily made Redis client, and a helper that returns the lock it makes.
REDIS_LOCK_HELPERS = """\
import os

import redis as redis_lib

_client = None


def get_client() -> redis_lib.Redis:
    global _client
    if _client is None:
        _client = redis_lib.Redis.from_url(os.environ["REDIS_URL"])
    return _client


def named_lock(name: str, ttl: int = 300):
    return get_client().lock(f"lock:{name}", timeout=ttl)
"""
