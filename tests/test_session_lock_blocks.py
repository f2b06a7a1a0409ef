"""OG101: a lock helper that hands its Session to the caller's block, where the caller commits.

``@asynccontextmanager async def job_lock(session, key)`` takes ``pg_try_advisory_lock`` on the Session, yields,
and unlocks after.  A caller that commits inside ``async with job_lock(session, KEY):`` hands the Session's
connection back to the pool while the lock is held; the unlock then runs on another connection.  A Session bound
to one connection it checked out keeps that connection across commits.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LOCKS = """\
    from contextlib import asynccontextmanager

    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import AsyncSession


    @asynccontextmanager
    async def job_lock(session: AsyncSession, key: int):
        acquired = bool(await session.scalar(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}))
        try:
            yield acquired
        finally:
            if acquired:
                await session.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
"""

DB = """\
    from contextlib import asynccontextmanager

    from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

    engine = create_async_engine("postgresql+asyncpg://db/camp")
    Session = async_sessionmaker(engine)


    @asynccontextmanager
    async def pinned_session():
        async with engine.connect() as conn:
            async with AsyncSession(bind=conn) as session:
                yield session
"""

JOB = """\
    from camp.db import Session
    from camp.locks import job_lock


    async def provision(bookings, push) -> None:
        async with Session() as session:
            async with job_lock(session, 4401) as acquired:
                if not acquired:
                    return
                for booking in bookings:
                    await push(booking)
                    await session.commit()
"""


def _project(tmp_path, job: str = JOB) -> None:
    write(tmp_path, {"camp/__init__.py": "", "camp/locks.py": LOCKS, "camp/db.py": DB, "camp/jobs.py": job})


@pytest.mark.parametrize("ender", ["commit", "rollback"])
def test_a_caller_ending_the_transaction_inside_the_block_leaks_the_lock(tmp_path, ender):
    _project(tmp_path, JOB.replace("session.commit()", f"session.{ender}()"))
    assert findings(tmp_path, "camp/locks.py", codes=("OG101",)) == [(9, "OG101")]


def test_a_caller_that_commits_after_the_block_keeps_one_connection(tmp_path):
    after = JOB.replace("""                for booking in bookings:
                    await push(booking)
                    await session.commit()""", """                for booking in bookings:
                    await push(booking)
            await session.commit()""")
    _project(tmp_path, after)
    assert findings(tmp_path, "camp/locks.py", codes=("OG101",)) == []


def test_a_session_bound_to_one_checked_out_connection_keeps_it_across_commits(tmp_path):
    _project(tmp_path, JOB.replace("from camp.db import Session", "from camp.db import pinned_session").replace(
        "async with Session() as session:", "async with pinned_session() as session:"))
    assert findings(tmp_path, "camp/locks.py", codes=("OG101",)) == []
