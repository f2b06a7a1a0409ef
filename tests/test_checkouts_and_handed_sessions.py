"""OG101: where a session advisory lock's connection goes.

- ``conn = pool.getconn()`` … ``pool.putconn(conn)`` and a second ``getconn()`` for the unlock: each checkout in
  force at a call is the one bound last before it, so the unlock runs on another checkout than the lock.
- A lock helper that yields while holding the lock on the Session it is handed, whose caller's block hands the
  Session to a function that commits it batch by batch: the commit hands the connection back with the lock.
"""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

GETCONN = """\
    from contextlib import contextmanager

    from psycopg2.pool import ThreadedConnectionPool

    pool = ThreadedConnectionPool(1, 4, dsn="postgresql://db/app")


    @contextmanager
    def only_one(key: int):
        conn = pool.getconn()
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT pg_try_advisory_lock(%s)", (key,))
                won = cur.fetchone()[0]
            {between}
            yield won
        finally:
            if won:
                {unlock_checkout}
                with conn.cursor() as cur:
                    cur.execute("SELECT pg_advisory_unlock(%s)", (key,))
            pool.putconn(conn)
"""


@pytest.mark.parametrize("between, unlock_checkout, expected", [
    ("pool.putconn(conn)", "conn = pool.getconn()", [(21, "OG101")]),
    ("pass", "pass", []),  # one checkout from the lock to the unlock
])
def test_an_unlock_on_a_second_checkout(tmp_path, between, unlock_checkout, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'close'\n", "close/__init__.py": "",
                     "close/locks.py": GETCONN.format(between=between, unlock_checkout=unlock_checkout)})
    assert findings(tmp_path, "close/locks.py", codes=("OG101",)) == expected


LOCKING = """\
    from contextlib import contextmanager

    from sqlalchemy import func, select
    from sqlalchemy.orm import Session


    @contextmanager
    def tenant_lock(session: Session, key: int):
        got = session.execute(select(func.pg_try_advisory_lock(key))).scalar_one()
        try:
            yield got
        finally:
            if got:
                session.execute(select(func.pg_advisory_unlock(key)))
"""

TASKS = """\
    from .db import SessionLocal
    from .locking import tenant_lock
    from .rebuild import rebuild


    def reindex(tenant: int) -> None:
        with SessionLocal() as session:
            with tenant_lock(session, tenant) as got:
                if got:
                    rebuild(session, tenant)
"""

REBUILD = """\
    def rebuild(session, tenant: int) -> None:
        for batch in range(10):
            session.execute("SELECT 1")
            {end}
"""


@pytest.mark.parametrize("end, expected", [
    ("session.commit()", [(9, "OG101")]),
    ("session.flush()", []),  # the transaction, and the connection, stay
])
def test_a_callee_that_commits_the_locked_session(tmp_path, end, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'cat'\n", "cat/__init__.py": "",
                     "cat/db.py": "from sqlalchemy.orm import sessionmaker\n\nSessionLocal = sessionmaker()\n",
                     "cat/locking.py": LOCKING, "cat/tasks.py": TASKS, "cat/rebuild.py": REBUILD.format(end=end)})
    assert findings(tmp_path, "cat/locking.py", codes=("OG101",)) == expected


SESSION_FACTORY_HANDED = """\
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker


    async def run_alone(sessions: async_sessionmaker[AsyncSession], job) -> bool:
        async with sessions() as session:
            got = (await session.execute(text("SELECT pg_try_advisory_lock(42)"))).scalar_one()
            {between}
            if not got:
                return False
            try:
                await job()
            finally:
                await session.execute(text("SELECT pg_advisory_unlock(42)"))
        return True
"""


def test_a_session_factory_handed_in_opens_a_pooled_session(tmp_path):
    from test_job_discovery import findings as found_in, write as write_files

    write_files(tmp_path, {"app/__init__.py": "",
                           "app/alone.py": SESSION_FACTORY_HANDED.replace("{between}", "await session.commit()")})
    assert [code for _, code in found_in(tmp_path, "app/alone.py", codes=("OG101",))] == ["OG101"]
