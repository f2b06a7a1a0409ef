"""``metadata.create_all`` run on a connection that holds a blocking advisory lock (taken first, in the same
transaction or for the session) is serialised: replicas booting together queue for the lock and the later ones
find the tables there (OG401 silent).  The lock must be on the connection the DDL goes through."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """\
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class Note(Base):
        __tablename__ = "notes"
        id: Mapped[int] = mapped_column(primary_key=True)
"""

MAIN = """\
    from contextlib import asynccontextmanager

    from fastapi import FastAPI

    from .schema import ensure_schema


    @asynccontextmanager
    async def lifespan(app):
        ensure_schema()
        yield


    app = FastAPI(lifespan=lifespan)
"""

ASYNC_MAIN = MAIN.replace("        ensure_schema()", "        await ensure_schema()")

SCHEMAS = {
    "async transaction lock": ("""\
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    from .models import Base

    engine = create_async_engine("postgresql+asyncpg://notes@db/notes")


    async def ensure_schema():
        async with engine.begin() as conn:
            {lock}
            await conn.run_sync(Base.metadata.create_all)
""", 'await conn.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": 7310042})', 12, True),
    "bound to the locked connection": ("""\
    from sqlalchemy import create_engine, text

    from .models import Base

    engine = create_engine("postgresql+psycopg://notes@db/notes")


    def ensure_schema():
        with engine.begin() as conn:
            {lock}
            Base.metadata.create_all(bind=conn)
""", 'conn.execute(text("SELECT pg_advisory_xact_lock(7310042)"))', 11, False),
    "positional connection": ("""\
    from sqlalchemy import create_engine, text

    from .models import Base

    engine = create_engine("postgresql+psycopg://notes@db/notes")


    def ensure_schema():
        with engine.begin() as conn:
            {lock}
            Base.metadata.create_all(conn)
""", 'conn.execute(text("SELECT pg_advisory_xact_lock(7310042)"))', 11, False),
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_create_all_on_the_locked_connection(tmp_path, name):
    schema, lock, line, is_async = SCHEMAS[name]
    files = {"notes/__init__.py": "", "notes/models.py": MODELS, "notes/main.py": ASYNC_MAIN if is_async else MAIN}
    write(tmp_path, dict(files, **{"notes/schema.py": schema.replace("{lock}", lock)}))
    assert findings(tmp_path, "notes/schema.py", codes=("OG401",)) == []
    write(tmp_path, {"notes/schema.py": schema.replace("{lock}", "pass")})
    assert findings(tmp_path, "notes/schema.py", codes=("OG401",)) == [(line, "OG401")]


def test_a_lock_on_another_connection_does_not_serialise(tmp_path):
    schema = """\
    from sqlalchemy import create_engine, text

    from .models import Base

    engine = create_engine("postgresql+psycopg://notes@db/notes")


    def ensure_schema():
        with engine.begin() as other:
            other.execute(text("SELECT pg_advisory_xact_lock(7310042)"))
        with engine.begin() as conn:
            Base.metadata.create_all(bind=conn)
"""
    write(tmp_path, {"notes/__init__.py": "", "notes/models.py": MODELS, "notes/main.py": MAIN,
                     "notes/schema.py": schema})
    assert findings(tmp_path, "notes/schema.py", codes=("OG401",)) == [(12, "OG401")]
