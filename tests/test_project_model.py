"""The project model the scheduling and schema rules ask: function summaries across modules, callers,
what is migration code, and the verdicts that depend on them (OG201 / OG204 / silent)."""
from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from onceguard.project import index as project
from onceguard.config import Config, from_mapping
from onceguard.analysis.context import FileContext
from onceguard.engine.check import check_source
from onceguard.analysis.facts import ModuleFacts
from onceguard.project.summaries import Summaries, callers, drain_in


@pytest.fixture(autouse=True)
def fresh_project_cache():
    project.clear_cache()
    yield
    project.clear_cache()


def write(tmp_path: Path, rel: str, source: str) -> Path:
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def facts_of(path: Path, root: Path, cross_file: bool = True) -> ModuleFacts:
    source = path.read_text(encoding="utf-8")
    config = from_mapping({}, root=str(root))
    return ModuleFacts(ast.parse(source), FileContext(str(path), config, cross_file=cross_file), source.splitlines())


def check(path: Path, root: Path, **options) -> list:
    config = from_mapping(options, root=str(root))
    return sorted((d.line, d.code) for d in check_source(path.read_bytes(), str(path), config, cross_file=True))


# -- what is migration code ---------------------------------------------------------------------------
@pytest.mark.parametrize("rel, expected", [
    ("app/migrations/0001_initial.py", True),
    ("alembic/env.py", True),
    ("migrate.py", True),
    ("deploy/migrate_db.py", True),
    ("ops/backfill_migration.py", True),
    ("shop/management/commands/migrate_locked.py", True),
    ("langflow/api/utils/migration_pause.py", False),
    ("app/services/data_migration_report.py", False),
    ("app/migrator_client.py", False),
])
def test_migration_code_is_where_it_lives_not_a_word_in_its_name(rel, expected):
    assert FileContext(rel, Config()).is_migration is expected


# -- effects through callees ---------------------------------------------------------------------------
def test_a_drained_buffer_found_through_a_typed_parameter_in_another_module(tmp_path):
    write(tmp_path, "svc/__init__.py", "")
    write(tmp_path, "svc/buffers.py", """\
        class Counts:
            def __init__(self):
                self._pending = {}

            def take(self):
                batch = self._pending
                self._pending = {}
                return batch
    """)
    job = write(tmp_path, "svc/jobs.py", """\
        from svc.buffers import Counts
        from svc.db import write_counts


        async def flush(counts: Counts):
            await write_counts(counts.take())
    """)
    facts = facts_of(job, tmp_path)
    effects = Summaries().effects(facts.functions_by_name["flush"][0], facts)
    assert effects.drain is not None
    assert isinstance(effects.drain, ast.Assign)


def test_writing_a_shared_table_is_not_a_drain():
    source = textwrap.dedent("""\
        def copy(self):
            rows = self.source.fetch()
            self.target.insert(rows)
    """)
    function = ast.parse(source).body[0]
    facts = ModuleFacts(ast.parse(source), FileContext("x.py", Config()), source.splitlines())
    assert drain_in(function, facts) is None


@pytest.mark.parametrize("statement, kind", [
    ('conn.execute("DELETE FROM sessions WHERE expires_at < now()")', "idempotent"),
    ('conn.execute("UPDATE users SET locked = true WHERE failed > 5")', "idempotent"),
    ('conn.execute("REFRESH MATERIALIZED VIEW daily_sales")', "idempotent"),
    ('conn.execute("UPDATE plans SET credits = credits + 10 WHERE active")', "other"),
    ('conn.execute("INSERT INTO audit (at) VALUES (now())")', "other"),
    ("Session.objects.filter(expired=True).delete()", "idempotent"),
    ('Order.objects.filter(status="new").update(status="stale")', "idempotent"),
    ("send_mail()", "other"),
])
def test_effect_kinds(statement, kind):
    source = f"def job(conn):\n    {statement}\n"
    facts = ModuleFacts(ast.parse(source), FileContext("x.py", Config()), source.splitlines())
    effects = Summaries().effects(facts.functions_by_name["job"][0], facts)
    got = "idempotent" if effects.idempotent and not effects.other else ("other" if effects.other else "none")
    assert got == kind


# -- verdicts --------------------------------------------------------------------------------------------
SWEEP = """\
    from apscheduler.schedulers.background import BackgroundScheduler

    sched = BackgroundScheduler(timezone="UTC")


    def purge(conn):
        conn.execute("DELETE FROM sessions WHERE expires_at < now()")


    sched.add_job(purge, "interval", minutes=5)
"""


def test_an_idempotent_sweep_is_og204_only_when_selected_by_its_full_code(tmp_path):
    path = write(tmp_path, "app/jobs.py", SWEEP)
    assert check(path, tmp_path) == []
    assert check(path, tmp_path, **{"extend-select": ["OG2"]}) == []
    assert check(path, tmp_path, **{"extend-select": ["OG204"]}) == [(6, "OG204")]


def test_noqa_on_the_def_in_another_file_suppresses_the_registration(tmp_path):
    write(tmp_path, "app/__init__.py", "")
    write(tmp_path, "app/tasks.py", """\
        from app.mail import send_all


        def nightly():  # noqa: OG201
            send_all()


        def hourly():
            send_all()
    """)
    main = write(tmp_path, "app/main.py", """\
        from apscheduler.schedulers.background import BackgroundScheduler

        from app.tasks import hourly, nightly

        sched = BackgroundScheduler(timezone="UTC")
        sched.add_job(nightly, "cron", hour=1)
        sched.add_job(hourly, "interval", hours=1)
    """)
    assert check(main, tmp_path) == [(7, "OG201")]


def test_a_lock_released_in_finally_guards_overlap_not_the_period(tmp_path):
    source = """\
        from apscheduler.schedulers.background import BackgroundScheduler

        sched = BackgroundScheduler(timezone="UTC")


        class Locks:
            def take(self, name):
                got = self.redis.set(name, "1", nx=True, ex=600)
                return bool(got)

            def give_back(self, name):
                self.redis.delete(name)


        locks = Locks()


        def export():
            if not locks.take("export"):
                return
            try:
                push_report()
            finally:
                locks.give_back("export")


        sched.add_job(export, {trigger})
    """
    interval = write(tmp_path, "a/jobs.py", source.replace("{trigger}", '"interval", hours=1'))
    daily = write(tmp_path, "b/jobs.py", source.replace("{trigger}", '"cron", hour=3'))
    assert check(interval, tmp_path) == [(18, "OG201")]
    assert check(daily, tmp_path) == []


# -- callers across the project ------------------------------------------------------------------------
def test_callers_follow_a_constructor_to_module_level_code(tmp_path):
    write(tmp_path, "app/__init__.py", "")
    store = write(tmp_path, "app/store.py", """\
        from sqlalchemy import MetaData, create_engine

        metadata = MetaData()


        class Store:
            def __init__(self, url):
                metadata.create_all(create_engine(url))
    """)
    write(tmp_path, "app/wiring.py", """\
        from app.store import Store

        STORE = Store("postgresql://db/app")
    """)
    write(tmp_path, "scripts/reset.py", """\
        from app.store import Store

        if __name__ == "__main__":
            Store("postgresql://db/app")
    """)
    facts = facts_of(store, tmp_path)
    init = facts.functions_by_name["__init__"][0]
    sites = sorted((other.context.rel_path, call.lineno) for call, other in callers(init, facts))
    assert sites == [("app/wiring.py", 3), ("scripts/reset.py", 4)]
    assert check(store, tmp_path) == [(8, "OG401")]


def test_a_constructor_only_a_command_calls_is_not_start_up(tmp_path):
    write(tmp_path, "app/__init__.py", "")
    store = write(tmp_path, "app/store.py", """\
        from sqlalchemy import MetaData, create_engine

        metadata = MetaData()


        class Store:
            def __init__(self, url):
                metadata.create_all(create_engine(url))
    """)
    write(tmp_path, "app/cli.py", """\
        import click

        from app.store import Store


        @click.command()
        def init_db():
            Store("postgresql://db/app")
    """)
    assert check(store, tmp_path) == []


def test_a_function_called_by_module_level_code_runs_at_import(tmp_path):
    path = write(tmp_path, "app/config.py", """\
        import os

        from alembic import command
        from alembic.config import Config


        def run_migrations():
            command.upgrade(Config("alembic.ini"), "head")


        if os.environ.get("MIGRATE_ON_START", "1") == "1":
            run_migrations()
    """)
    assert (8, "OG401") in check(path, tmp_path)


# -- source roots --------------------------------------------------------------------------------------
def test_source_root_follows_the_files_own_imports_through_folders_without_init(tmp_path):
    write(tmp_path, "backend/app/db.py", "engine = None\n")
    job = write(tmp_path, "backend/app/jobs/tasks.py", "from app.db import engine\n")
    assert project.source_root(facts_of(job, tmp_path)) == str(tmp_path / "backend")


def test_source_root_never_climbs_above_the_project(tmp_path):
    # The first name of an import equals a directory far above the project: not evidence of a root.
    outer = tmp_path.name
    project_dir = tmp_path / "svc"
    job = write(project_dir, "pkg/jobs.py", f"import {outer}.settings\n")
    write(project_dir, "pkg/__init__.py", "")
    root = project.source_root(facts_of(job, project_dir))
    assert root.startswith(str(project_dir))


# -- where code runs: one answer for a function or a call site (project.reach) ---------------------------
from onceguard.project.reach import EVERY_REPLICA, OPERATOR, UNKNOWN, runs, runs_function  # noqa: E402

_REACH_STORE = """
    from app.db import engine, metadata


    def prepare():
        metadata.create_all(engine)
"""


def _function(facts: ModuleFacts, name: str):
    return next(f for f in facts.functions if f.name == name)


def test_code_a_lifespan_in_another_module_reaches_runs_on_every_replica_with_the_way_there(tmp_path):
    write(tmp_path, "app/__init__.py", "")
    write(tmp_path, "app/store.py", _REACH_STORE)
    write(tmp_path, "app/main.py", """
        from contextlib import asynccontextmanager

        from fastapi import FastAPI

        from app.store import prepare


        async def boot():
            prepare()


        @asynccontextmanager
        async def lifespan(app):
            await boot()
            yield


        app = FastAPI(lifespan=lifespan)
    """)
    facts = facts_of(tmp_path / "app" / "store.py", tmp_path)
    answer = runs_function(_function(facts, "prepare"), facts)
    assert answer.where == EVERY_REPLICA and answer.every_replica
    assert answer.reason == "called from lifespan(), which runs at start-up"
    main = str(tmp_path / "app" / "main.py")
    # Entry point first: the hook, the call on the way in its module, then the call into store.py.
    assert [(p.path, p.line, p.message) for p in answer.via] == [
        (main, 14, "every replica runs lifespan() (from the lifespan handler)"),
        (main, 15, "`lifespan` calls `boot()`"),
        (main, 10, "`boot` calls `prepare()`"),
    ]
    assert [p.line for p in answer.calls] == [10]
    # Under flake8 the same question is answered from the one file: nothing there shows who runs it.
    alone = facts_of(tmp_path / "app" / "store.py", tmp_path, cross_file=False)
    assert runs_function(_function(alone, "prepare"), alone).where == UNKNOWN


def test_start_up_only_leaves_request_code_out(tmp_path):
    write(tmp_path, "app/__init__.py", "")
    write(tmp_path, "app/store.py", _REACH_STORE)
    write(tmp_path, "app/views.py", """
        from fastapi import APIRouter

        from app.store import prepare

        router = APIRouter()


        @router.post("/reset")
        def reset():
            prepare()
    """)
    facts = facts_of(tmp_path / "app" / "store.py", tmp_path)
    function = _function(facts, "prepare")
    answer = runs_function(function, facts)
    assert answer.every_replica and answer.reason == "in the request handler reset()"
    assert runs_function(function, facts, startup_only=True).where == UNKNOWN


def test_code_only_commands_reach_runs_only_for_an_operator(tmp_path):
    write(tmp_path, "app/__init__.py", "")
    write(tmp_path, "app/store.py", _REACH_STORE)
    write(tmp_path, "app/cli.py", """
        import click

        from app.store import prepare


        @click.command()
        def init_db():
            prepare()
    """)
    write(tmp_path, "app/management/commands/seed.py", """
        from django.core.management.base import BaseCommand

        from app.store import prepare


        class Command(BaseCommand):
            def handle(self, *args, **options):
                prepare()
    """)
    facts = facts_of(tmp_path / "app" / "store.py", tmp_path)
    answer = runs_function(_function(facts, "prepare"), facts)
    assert answer.where == OPERATOR and answer.via == ()
    command = facts_of(tmp_path / "app" / "cli.py", tmp_path)
    here = runs_function(_function(command, "init_db"), command)
    assert (here.where, here.reason) == (OPERATOR, "in the command init_db()")


def test_a_server_main_block_is_every_replica_and_a_script_main_block_is_an_operator(tmp_path):
    write(tmp_path, "app/__init__.py", "")
    server = write(tmp_path, "app/serve.py", """
        import uvicorn

        from app.store import prepare

        if __name__ == "__main__":
            prepare()
            uvicorn.run("app.main:app")
    """)
    script = write(tmp_path, "app/backfill.py", """
        from app.store import prepare

        if __name__ == "__main__":
            prepare()
    """)
    for path, where, reason in ((server, EVERY_REPLICA, "from the server's __main__ block"),
                                (script, OPERATOR, "in the __main__ block of a script")):
        facts = facts_of(path, tmp_path)
        call = next(c for c in facts.calls if getattr(c.func, "id", "") == "prepare")
        answer = runs(call, facts)
        assert (answer.where, answer.reason) == (where, reason)


# -- calls put behind a helper in another module ---------------------------------------------------------
@pytest.mark.parametrize("helpers, followed", [
    ("def make(size):\n    return Pool(size)\n", True),
    # a signature over several lines, closed at the left margin, and a docstring with a line there too
    ("def make(\n    size,\n) -> 'Pool':\n    '''A pool.\nOf the given size.'''\n    return Pool(size)\n\nOTHER = 1\n",
     True),
    ("async def make(size):\n    return Pool(size)\n", True),
    # the call bound to a name and that name returned: the same helper
    ("def make(size):\n    pool = Pool(size)\n    return pool\n", True),
    ("def make(size):\n    pool = Pool(size)\n    pool.start()\n    return pool\n", False),
    ("@cache\ndef make(size):\n    return Pool(size)\n", False),
    ("class make:\n    def __init__(self, size):\n        self.size = size\n", False),
    ("def make_other(size):\n    return Pool(size)\n\ndef make(size):\n    pass\n", False),
])
def test_a_helper_in_another_module_is_followed_only_when_it_returns_one_call(tmp_path, helpers, followed):
    from onceguard.project.forwarding import forwarded

    write(tmp_path, "app/__init__.py", "")
    write(tmp_path, "app/pools.py", "from lib import Pool\n" + helpers)
    user = write(tmp_path, "app/main.py", "from app.pools import make\npool = make(4)\n")
    facts = facts_of(user, tmp_path)
    call = facts.tree.body[1].value
    through = forwarded(call, facts)
    assert (through is not None and through.callee == "lib.Pool") is followed


def test_a_helper_re_exported_by_a_package_is_followed_to_its_definition(tmp_path):
    from onceguard.project.forwarding import forwarded

    write(tmp_path, "app/__init__.py", "")
    write(tmp_path, "app/pools/__init__.py", "from .making import make\n")
    write(tmp_path, "app/pools/making.py", "from lib import Pool\n\n\ndef make(size):\n    return Pool(size)\n")
    user = write(tmp_path, "app/main.py", "from app.pools import make\npool = make(4)\n")
    facts = facts_of(user, tmp_path)
    through = forwarded(facts.tree.body[1].value, facts)
    assert through is not None and through.callee == "lib.Pool"
