"""Advisory-lock shapes seen in published services (OG101-OG106) that the rule docs do not spell out."""
from __future__ import annotations

import os
import textwrap

from onceguard.config import from_mapping
from onceguard.engine.check import check_source


def findings(tmp_path, source: str, path: str = "app/jobs.py", prefix: str = "OG1"):
    source = textwrap.dedent(source)
    full = os.path.join(str(tmp_path), path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as handle:
        handle.write(source)
    found = check_source(source.encode(), full, from_mapping({}, root=str(tmp_path)))
    return sorted((d.line, d.code) for d in found if d.code.startswith(prefix))


def diagnostics(tmp_path, source: str, path: str = "app/jobs.py"):
    source = textwrap.dedent(source)
    full = os.path.join(str(tmp_path), path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as handle:
        handle.write(source)
    return check_source(source.encode(), full, from_mapping({}, root=str(tmp_path)))


HELPERS = """
    from sqlmodel import Session
    from sqlalchemy import text


    async def _lock(db: Session, key: int) -> None:
        while True:
            conn = await db.connection()
            got = (await conn.execute(text(f"SELECT pg_try_advisory_lock({key})"))).scalar()
            if got:
                return


    async def _unlock(db: Session, key: int) -> None:
        conn = await db.connection()
        await conn.execute(text(f"SELECT pg_advisory_unlock({key})"))


    async def acquire(db: Session, key: int) -> int:
        await _lock(db, key)
        return key


    async def release(db: Session, key: int) -> None:
        await _unlock(db, key)


    async def advance(db: Session) -> None:
        await db.execute(text("UPDATE cursors SET at = now()"))
        await db.commit()
"""


def test_helper_lock_leaks_when_a_caller_commits_through_another_helper(tmp_path):
    source = HELPERS + """

    async def ingest(session_scope, key):
        async with session_scope() as db:
            await acquire(db, key)
            try:
                await db.execute(text("INSERT INTO docs SELECT * FROM staged"))
                await advance(db)
            finally:
                await release(db, key)
    """
    found = diagnostics(tmp_path, source)
    og101 = [d for d in found if d.code == "OG101"]
    assert [d.line for d in og101] == [9], found
    assert "`ingest`" in og101[0].message and "ends the transaction" in og101[0].message
    assert not [d for d in found if d.code in ("OG105", "OG106")]


def test_helper_lock_is_clean_when_every_caller_unlocks_before_committing(tmp_path):
    source = HELPERS + """

    async def ingest(session_scope, key):
        async with session_scope() as db:
            await acquire(db, key)
            try:
                await db.execute(text("INSERT INTO docs SELECT * FROM staged"))
            finally:
                await release(db, key)
            await db.commit()
    """
    assert findings(tmp_path, source) == []


def test_one_leaking_caller_among_clean_ones_is_enough(tmp_path):
    source = HELPERS + """

    async def careful(db: Session, key):
        await acquire(db, key)
        await release(db, key)
        await db.commit()


    async def careless(db: Session, key):
        await acquire(db, key)
        await db.commit()
        await release(db, key)
    """
    found = diagnostics(tmp_path, source)
    assert [(d.line, d.code) for d in found if d.code.startswith("OG1")] == [(9, "OG101")]
    assert "`careless`" in found[0].message


def test_helper_without_callers_in_view_is_still_a_session_lock(tmp_path):
    source = HELPERS
    assert findings(tmp_path, source) == [(9, "OG101")]


def test_unlock_on_second_pool_connection_block_is_og101_not_og105(tmp_path):
    source = """
        from psycopg_pool import ConnectionPool

        pool = ConnectionPool("postgresql://app@db/app")


        def rotate(key: int) -> None:
            with pool.connection() as conn:
                if not conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
                    return
            try:
                with pool.connection() as conn:
                    conn.execute("UPDATE signing_keys SET active = false")
            finally:
                with pool.connection() as conn:
                    conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
    """
    found = diagnostics(tmp_path, source)
    assert [(d.line, d.code) for d in found if d.code.startswith("OG1")] == [(16, "OG101")]
    assert "checked out at line 15" in found[0].message and "(line 8)" in found[0].message


def test_ignored_try_lock_never_released_through_a_pool_is_also_og105(tmp_path):
    source = """
        from sqlalchemy import create_engine, text

        engine = create_engine("postgresql+psycopg2://app@db/app")


        def prune() -> None:
            engine.execute(text("SELECT pg_try_advisory_lock(6)"))
            engine.execute(text("DELETE FROM logs WHERE at < now() - interval '30 days'"))
    """
    assert findings(tmp_path, source) == [(8, "OG101"), (8, "OG105"), (8, "OG106")]


def test_ignored_try_lock_on_a_pool_connection_block_is_og105_and_og106(tmp_path):
    source = """
        from psycopg_pool import ConnectionPool

        pool = ConnectionPool("postgresql://app@db/app")


        def prune() -> None:
            with pool.connection() as conn:
                conn.execute("SELECT pg_try_advisory_lock(6)")
                conn.execute("DELETE FROM logs WHERE at < now() - interval '30 days'")


        def release_all() -> None:
            with pool.connection() as conn:
                conn.execute("SELECT pg_advisory_lock(7)")
                try:
                    conn.execute("VACUUM logs")
                finally:
                    conn.execute("SELECT pg_advisory_unlock(7)")
    """
    # the second function locks and unlocks for itself: it is no release helper for the first
    assert (9, "OG105") in findings(tmp_path, source)
    assert (9, "OG106") in findings(tmp_path, source)


def test_blocking_xact_lock_in_a_contextmanager_helper_is_a_critical_section(tmp_path):
    source = """
        from contextlib import asynccontextmanager

        from sqlalchemy import text

        from .db import get_async_db

        TREE_LOCK = 731


        @asynccontextmanager
        async def tree_transaction():
            async with get_async_db() as db:
                await db.execute(text(f"SELECT pg_advisory_xact_lock({TREE_LOCK})"))
                yield db
                await db.commit()
    """
    assert findings(tmp_path, source, "app/models/groups.py") == []


def test_blocking_lock_around_django_migrate_is_a_runner(tmp_path):
    source = """
        from django.core.management import call_command
        from django.db import connection


        def boot() -> None:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_lock(7)")
                try:
                    call_command("migrate", interactive=False)
                finally:
                    cursor.execute("SELECT pg_advisory_unlock(7)")
    """
    assert findings(tmp_path, source, "app/boot.py") == []


def test_help_texts_start_with_a_capital(tmp_path):
    source = """
        import asyncpg
        from sqlalchemy import create_engine, text

        engine = create_engine("postgresql+psycopg2://app@db/app")


        async def job(pool: asyncpg.Pool) -> None:
            await pool.execute("SELECT pg_try_advisory_lock($1)", hash("job"))


        def other() -> None:
            with engine.connect() as conn:
                conn.execute(text("SELECT pg_advisory_lock(1)"))
                conn.execute(text("DELETE FROM t"))
                conn.execute(text("SELECT pg_advisory_unlock(1)"))
    """
    found = [d for d in diagnostics(tmp_path, source) if d.code.startswith("OG1")]
    assert {d.code for d in found} >= {"OG101", "OG103", "OG104", "OG105", "OG106"}
    for d in found:
        assert d.suggestion[:1].isupper(), (d.code, d.suggestion)


def test_null_pool_checkout_ends_the_session_and_its_lock(tmp_path):
    source = """
        from sqlalchemy import create_engine, text
        from sqlalchemy.pool import NullPool

        engine = create_engine("postgresql+psycopg://app@db/app", poolclass=NullPool)


        def purge() -> None:
            with engine.connect() as conn:
                if not conn.execute(text("SELECT pg_try_advisory_lock(17)")).scalar():
                    return
                conn.execute(text("DELETE FROM sessions WHERE expires_at < now()"))
                conn.commit()


        def purge_twice() -> None:
            with engine.connect() as conn:
                conn.execute(text("SELECT pg_advisory_lock(18)"))
                conn.execute(text("DELETE FROM sessions"))
            with engine.connect() as other:
                other.execute(text("SELECT pg_advisory_unlock(18)"))


        def legacy() -> None:
            if not engine.execute(text("SELECT pg_try_advisory_lock(19)")).scalar():
                return
            engine.execute(text("DELETE FROM sessions"))
    """
    found = diagnostics(tmp_path, source)
    # only the lock run on the engine itself: its connection is closed as soon as the call returns
    assert [(d.line, d.code) for d in found if d.code in ("OG101", "OG105")] == [(25, "OG101")]
    assert "NullPool" in [d for d in found if d.code == "OG101"][0].message
