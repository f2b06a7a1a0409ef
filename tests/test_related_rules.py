"""Which rules name other places, and which: a finding that depends on another file of the project carries
that file's places (``related``, entry point first); a finding one file proves carries none."""
from __future__ import annotations

import os
from pathlib import Path

from onceguard.config import from_mapping
from onceguard.engine.check import check_source
from onceguard.model import Related
from onceguard.rules.base import Rule
from onceguard.testing import findings_in_written_file, write_source as write

import test_event_consumers
import test_host_local_lock
import test_startup_seeding


def places(finding, root: Path):
    return [(os.path.relpath(p.path, root), p.line, p.column, p.message) for p in finding.related]


def test_og603_the_calls_from_start_up_code_to_the_seeding(tmp_path: Path) -> None:
    write(tmp_path, "app/__init__.py", "")
    write(tmp_path, "app/main.py", test_startup_seeding.LIFESPAN_MODULE)
    (finding,) = findings_in_written_file(tmp_path, "app/options.py", test_startup_seeding.SEEDING_MODULE,
                                          "OG603", cross_file=True)
    assert places(finding, tmp_path) == [("app/main.py", 11, 11, "`lifespan` calls `fill_defaults()`")]
    # Under flake8 (one file) there is no finding, let alone related places.
    assert findings_in_written_file(tmp_path, "app/options.py", test_startup_seeding.SEEDING_MODULE, "OG603") == []


def test_og603_start_up_seeding_in_its_own_file_names_no_other_place(tmp_path: Path) -> None:
    (finding,) = findings_in_written_file(tmp_path, "app/main.py", """
        from contextlib import asynccontextmanager

        from fastapi import FastAPI
        from sqlalchemy import select

        from app.db import get_db
        from app.orm import Option


        @asynccontextmanager
        async def lifespan(app):
            async with get_db() as db:
                if not (await db.execute(select(Option))).first():
                    db.add(Option(key="theme", value="light"))
                    await db.commit()
            yield


        app = FastAPI(lifespan=lifespan)
    """, "OG603", cross_file=True)
    assert finding.related == ()


def test_og601_the_module_entered_and_the_write_there(tmp_path: Path) -> None:
    write(tmp_path, "app/__init__.py", "")
    write(tmp_path, "app/seeding.py", """
        from app.db import session_scope
        from app.models import Example


        async def _folder(session):
            session.add(Example(name="folder"))
            await session.flush()


        async def seed_examples(types: dict) -> None:
            async with session_scope() as session:
                await _folder(session)
    """)
    (finding,) = findings_in_written_file(tmp_path, "app/main.py", test_host_local_lock.STARTUP, "OG601", True)
    assert places(finding, tmp_path) == [
        ("app/seeding.py", 11, 1, "`seed_examples()` is defined here"),
        ("app/seeding.py", 7, 5, "`session.add()` on a session writes to the database"),
    ]


def test_og602_the_client_made_in_another_module(tmp_path: Path) -> None:
    write(tmp_path, "chatapp/__init__.py", "")
    write(tmp_path, "chatapp/discord_bot.py", """
        import discord

        intents = discord.Intents.default()
        client = discord.Client(intents=intents)
    """)
    (finding,) = findings_in_written_file(tmp_path, "chatapp/server.py", test_event_consumers.SERVER, "OG602", True)
    assert places(finding, tmp_path) == [("chatapp/discord_bot.py", 5, 10, "`client` is made here (Discord gateway client)")]


def test_og201_a_job_defined_elsewhere_and_one_defined_here(tmp_path: Path) -> None:
    write(tmp_path, "app/__init__.py", "")
    write(tmp_path, "app/tasks.py", """
        from app.db import engine


        def send_digest() -> None:
            with engine.begin() as conn:
                conn.exec_driver_sql("UPDATE users SET digest_sent = now()")
    """)
    (finding,) = findings_in_written_file(tmp_path, "app/jobs.py", """
        from apscheduler.schedulers.background import BackgroundScheduler

        from app.tasks import send_digest

        scheduler = BackgroundScheduler(timezone="UTC")
        scheduler.add_job(send_digest, "interval", minutes=5)
    """, "OG201", cross_file=True)
    assert finding.line == 7
    # The definition, then the call that makes the job more than per-process work.
    assert places(finding, tmp_path) == [("app/tasks.py", 5, 1, "`send_digest` is defined here, without a claim"),
                                         ("app/tasks.py", 7, 9, "`conn.exec_driver_sql(...)` acts outside the process")]

    (local,) = findings_in_written_file(tmp_path, "app/local_jobs.py", """
        from apscheduler.schedulers.background import BackgroundScheduler

        from app.db import engine

        scheduler = BackgroundScheduler(timezone="UTC")


        def send_digest() -> None:
            with engine.begin() as conn:
                conn.exec_driver_sql("UPDATE users SET digest_sent = now()")


        scheduler.add_job(send_digest, "interval", minutes=5)
    """, "OG201", cross_file=True)
    # Nothing on the way from another module: the one related place is the job's own effect.
    assert places(local, tmp_path) == [
        ("app/local_jobs.py", 11, 9, "`conn.exec_driver_sql(...)` acts outside the process")]


def test_og201_a_job_defined_here_on_a_scheduler_made_elsewhere(tmp_path: Path) -> None:
    write(tmp_path, "app/__init__.py", "")
    write(tmp_path, "app/scheduling.py", """
        from apscheduler.schedulers.asyncio import AsyncIOScheduler

        scheduler = AsyncIOScheduler(timezone="UTC")
    """)
    (finding,) = findings_in_written_file(tmp_path, "app/jobs.py", """
        from app.db import engine
        from app.scheduling import scheduler


        @scheduler.scheduled_job("interval", minutes=5)
        def send_digest() -> None:
            with engine.begin() as conn:
                conn.exec_driver_sql("UPDATE users SET digest_sent = now()")
    """, "OG201", cross_file=True)
    assert finding.line == 7  # at the def
    assert places(finding, tmp_path) == [("app/scheduling.py", 4, 13, "`scheduler` is made here (APScheduler 3)"),
                                         ("app/jobs.py", 9, 9, "`conn.exec_driver_sql(...)` acts outside the process")]


def test_og401_the_way_from_start_up_code_in_another_module_to_the_schema_write(tmp_path: Path) -> None:
    write(tmp_path, "app/__init__.py", "")
    write(tmp_path, "app/registry.py", """
        import os

        from app.vector import VectorStore


        def make_store() -> VectorStore:
            return VectorStore(os.environ["VECTOR_DB_URL"])


        STORE = make_store()
    """)
    vector = """
        from sqlalchemy import Column, Integer, MetaData, Table, create_engine

        metadata = MetaData()
        chunks = Table("chunks", metadata, Column("id", Integer, primary_key=True))


        class VectorStore:
            def __init__(self, url: str) -> None:
                self.engine = create_engine(url)
                metadata.create_all(self.engine)
    """
    (finding,) = findings_in_written_file(tmp_path, "app/vector.py", vector, "OG401", cross_file=True)
    assert finding.line == 11
    assert places(finding, tmp_path) == [
        ("app/registry.py", 11, 9, "every replica runs this call (at module level, when the module is imported)"),
        ("app/registry.py", 8, 12, "`make_store` calls `VectorStore()`"),
    ]
    # The way is in ``related``; the message names the reason, not the places.
    assert "reached from another module: called by module-level code" in finding.message
    assert "registry.py" not in finding.message
    # Under flake8 (one file) nothing in the file runs it: no finding.
    assert findings_in_written_file(tmp_path, "app/vector.py", vector, "OG401") == []

    # Built by module-level code itself: that call is the entry point, named once.
    write(tmp_path, "app/registry.py", """
        from app.vector import VectorStore

        STORE = VectorStore("postgresql://db/vectors")
    """)
    (finding,) = findings_in_written_file(tmp_path, "app/vector.py", vector, "OG401", cross_file=True)
    assert places(finding, tmp_path) == [("app/registry.py", 4, 9, "module-level code calls `VectorStore()`")]


def test_og401_a_schema_write_start_up_code_runs_in_its_own_file_names_no_other_place(tmp_path: Path) -> None:
    (finding,) = findings_in_written_file(tmp_path, "app/main.py", """
        from fastapi import FastAPI

        from app.db import Base, engine

        app = FastAPI()


        @app.on_event("startup")
        def create_tables() -> None:
            Base.metadata.create_all(bind=engine)
    """, "OG401", cross_file=True)
    assert finding.related == ()


class _RelativeRelated(Rule):
    code = "OG201"
    name = "unguarded-scheduled-job"
    summary = "test rule"
    triggers = (b"job",)

    def check(self, facts):
        yield self.finding(facts.tree.body[0], "m", "s", related=[Related(os.path.join("app", "other.py"), 2, 1, "x")])


def test_check_source_returns_related_paths_absolute(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, "app/job.py", "job = 1\n")
    (finding,) = check_source(b"job = 1\n", path, from_mapping({}, root=str(tmp_path)), rules=[_RelativeRelated()])
    assert [p.path for p in finding.related] == [str(tmp_path / "app" / "other.py")]
    assert finding.path == path
