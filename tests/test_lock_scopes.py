"""Connection scopes (analysis/handles.py) and OG101 on locks meant to outlive the block that checked the
connection out; factories and imports followed to where the engine, pool or session factory is made."""
from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from onceguard.analysis.context import FileContext
from onceguard.analysis.facts import ModuleFacts
from onceguard.analysis.handles import Handles
from onceguard.config import Config
from onceguard.engine.check import check_source
from onceguard.knowledge import databases as db
from onceguard.project import index


def codes(source: str, path: str = "app/jobs.py", cross_file: bool = False, config: Config = None):
    source = textwrap.dedent(source)
    found = check_source(source.encode(), path, config or Config(), cross_file=cross_file)
    return sorted((d.line, d.code) for d in found if d.code.startswith("OG10"))


def marked(source: str, code: str = "OG101"):
    return [(n, code) for n, line in enumerate(textwrap.dedent(source).splitlines(), 1) if "# here" in line]


def facts_of(source: str) -> ModuleFacts:
    source = textwrap.dedent(source)
    return ModuleFacts(ast.parse(source), FileContext("app/x.py", Config()), source.splitlines())


def test_scope_of_a_call_is_the_innermost_with_that_binds_its_connection():
    facts = facts_of("""
        from sqlalchemy import create_engine, text
        engine = create_engine("postgresql://db/app")
        def f():
            with engine.connect() as conn:
                with open("x") as fh:
                    conn.execute(text("SELECT 1"))
            conn.execute(text("SELECT 2"))
    """)
    calls = [n for n in ast.walk(facts.tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "execute"]
    inside, outside = sorted(calls, key=lambda c: c.lineno)
    handles = Handles.of_module(facts)
    scope = handles.scope_of(inside, inside.func.value)
    assert scope is not None and scope.line == 5 and scope.end_line == 7 and scope.handle.pinned
    assert scope.contains(inside) and not scope.contains(outside) and scope.after(outside)
    assert handles.scope_of(outside, outside.func.value) is None


def test_a_module_factory_returns_its_handle_but_a_yielding_dependency_does_not():
    facts = facts_of("""
        from sqlalchemy.orm import sessionmaker
        from sqlalchemy import create_engine
        SessionLocal = sessionmaker(create_engine("postgresql://db/app"))
        def new_session():
            return SessionLocal()
        def get_db():
            session = SessionLocal()
            try:
                yield session
            finally:
                session.close()
        a = new_session()
        b = get_db()
    """)
    handles = Handles.of_module(facts)
    by_name = {t.targets[0].id: t.value for t in facts.tree.body if isinstance(t, ast.Assign)}
    made = handles.of(by_name["a"])
    assert made is not None and made.kind == db.POOLED and made.how == "session"
    assert handles.of(by_name["b"]) is None


def test_try_lock_helper_that_returns_from_its_with_block_is_reported_at_the_lock():
    source = """
        from sqlalchemy import create_engine, text
        engine = create_engine("postgresql://db/app")
        def take(key):
            with engine.connect() as conn:
                return conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar()  # here
    """
    assert codes(source) == marked(source)


def test_lock_result_read_after_the_block_or_unlocked_after_it_is_reported():
    source = """
        import asyncpg
        async def job(pool: asyncpg.Pool, work):
            async with pool.acquire() as conn:
                got = await conn.fetchval("SELECT pg_try_advisory_lock(3)")  # here
            if got:
                await work()
    """
    assert codes(source) == marked(source)


def test_lock_result_handed_back_through_names_computed_from_it_is_reported():
    source = """
        from psycopg_pool import ConnectionPool
        pool = ConnectionPool("postgresql://db/app")
        def hold(key):
            with pool.connection() as conn:
                row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()  # here
                won = row[0]
                return bool(won)
        def give_back(key):
            with pool.connection() as conn:
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
    """
    assert codes(source) == marked(source)
    # Read inside the block only, to decide the work done there: the lock is not meant to outlive it.
    assert codes("""
        from psycopg_pool import ConnectionPool
        pool = ConnectionPool("postgresql://db/app")
        def once(key, work):
            with pool.connection() as conn:
                row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
                won = row[0]
                if not won:
                    return False
                try:
                    work(conn)
                finally:
                    conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
            return True
    """) == []


def test_lock_work_and_unlock_inside_one_block_is_silent():
    assert codes("""
        from sqlalchemy import create_engine, text
        engine = create_engine("postgresql://db/app")
        def job(work):
            with engine.connect() as conn:
                got = conn.execute(text("SELECT pg_try_advisory_lock(3)")).scalar()
                if not got:
                    return
                try:
                    work(conn)
                finally:
                    conn.execute(text("SELECT pg_advisory_unlock(3)"))
    """) == []


def test_closing_pool_whose_work_is_inside_the_block_is_silent_even_with_a_later_unlock():
    assert codes("""
        from sqlalchemy import create_engine, text
        from sqlalchemy.pool import NullPool
        engine = create_engine("postgresql://db/app", poolclass=NullPool)
        def job(work):
            with engine.connect() as conn:
                conn.execute(text("SELECT pg_advisory_lock(4)"))
                work(conn)
            with engine.connect() as other:
                other.execute(text("SELECT pg_advisory_unlock(4)"))
    """) == [(7, "OG103")]  # a blocking lock on a fixed key in job code: another rule's business


def write(root: Path, files: dict) -> None:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text), encoding="utf-8")


DB_MODULE = """
    from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine
    engine = create_async_engine("postgresql+asyncpg://db/app")
    Sessions = async_sessionmaker(engine)
    def open_session():
        return Sessions()
"""

LEADER = """
    from sqlalchemy import text
    {imports}

    async def lead():
        session = {make}
        won = (await session.execute(text("SELECT pg_try_advisory_lock(9)"))).scalar()  # here
        await session.commit()
        return won
"""


def test_session_factories_imported_from_another_module_are_followed_in_every_spelling(tmp_path):
    spellings = [
        ("from svc.db import Sessions", "Sessions()"),
        ("from svc.db import Sessions as S", "S()"),
        ("from svc import db", "db.Sessions()"),
        ("from .db import open_session", "open_session()"),
        ("import svc.db", "svc.db.open_session()"),
    ]
    for imports, make in spellings:
        source = LEADER.replace("{imports}", imports).replace("{make}", make)
        write(tmp_path, {"svc/__init__.py": "", "svc/db.py": DB_MODULE, "svc/leader.py": source})
        path = tmp_path / "svc" / "leader.py"
        config = Config(root=str(tmp_path))
        found = check_source(path.read_bytes(), str(path), config, cross_file=True)
        assert sorted((d.line, d.code) for d in found if d.code == "OG101") == marked(source), imports
        # One file alone cannot know what the import holds: silent rather than guessing.
        alone = check_source(path.read_bytes(), str(path), config, cross_file=False)
        assert [d for d in alone if d.code == "OG101"] == [], imports


POOL_HOLDER = """\
    import asyncpg
    {declaration}


    async def open_pool(dsn):
        global shared
        shared = await asyncpg.create_pool(dsn)
"""
POOL_USER = """\
    from svc import store


    async def try_hold(key):
        return await store.shared.fetchval("SELECT pg_try_advisory_lock($1)", key)  # here
"""


def test_a_pool_a_function_binds_under_global_is_the_modules_name(tmp_path):
    for declaration in ("shared = None", "from typing import Optional\n    shared: Optional[asyncpg.Pool] = None", ""):
        holder = POOL_HOLDER.format(declaration=declaration)
        write(tmp_path, {"svc/__init__.py": "", "svc/store.py": holder, "svc/mutex.py": POOL_USER})
        path = tmp_path / "svc" / "mutex.py"
        index.clear_cache()
        found = check_source(path.read_bytes(), str(path), Config(root=str(tmp_path)), cross_file=True)
        assert sorted((d.line, d.code) for d in found if d.code == "OG101") == marked(POOL_USER), declaration


# -- peewee: the Database's own connection for the length of connection_context() -----------------------------
_PEEWEE_WORKER = """
    from playhouse.pool import PooledPostgresqlDatabase

    store = PooledPostgresqlDatabase("depot", host="db", max_connections=8)


    def restock() -> None:
        with store.connection_context():
            got = store.execute_sql("SELECT pg_try_advisory_lock(%s)", (31,)).fetchone()[0]  # here
        if not got:
            return
        try:
            store.execute_sql("UPDATE bins SET level = capacity WHERE level < 5")
        finally:
            with store.connection_context():
                store.execute_sql("SELECT pg_advisory_unlock(%s)", (31,))
"""


def test_a_peewee_lock_taken_in_connection_context_and_held_after_it_is_reported():
    assert [f for f in codes(_PEEWEE_WORKER) if f[1] == "OG101"] == marked(_PEEWEE_WORKER)


def test_a_peewee_lock_work_and_unlock_in_one_connection_context_are_not():
    inside = """
        from playhouse.pool import PooledPostgresqlDatabase

        store = PooledPostgresqlDatabase("depot", host="db", max_connections=8)


        def restock() -> None:
            with store.connection_context():
                if not store.execute_sql("SELECT pg_try_advisory_lock(%s)", (31,)).fetchone()[0]:
                    return
                try:
                    store.execute_sql("UPDATE bins SET level = capacity WHERE level < 5")
                finally:
                    store.execute_sql("SELECT pg_advisory_unlock(%s)", (31,))
    """
    assert [f for f in codes(inside) if f[1] == "OG101"] == []
