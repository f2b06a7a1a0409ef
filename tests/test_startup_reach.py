"""Start-up reach both ways for the schema rules (OG401) and start-up resets of shared rows (OG610): the
shapes the rule docs cannot show in one file, the lookalikes that must stay silent, and the pieces of
reasoning they rest on."""
from __future__ import annotations

import ast
import textwrap

import pytest

from onceguard.project.schema_writes import _tests_local_dialect
from onceguard.testing import findings_in_written_file, write_source as write


def found(tmp_path, path: str, source: str, code: str, cross_file: bool = True):
    return [d.line for d in findings_in_written_file(tmp_path, path, source, code, cross_file)]


# -- what a condition says about the database --------------------------------------------------------
@pytest.mark.parametrize("test, says", [
    ("settings.is_sqlite()", True),
    ("engine.dialect.name == 'sqlite'", True),
    ("url.startswith('sqlite')", True),
    ("sqlite_file_path is not None", True),
    ("sqlite_file_path is None", False),
    ("engine.dialect.name != 'sqlite'", False),
    ("not settings.uses_sqlite", False),
    ("version is not None and sqlite_path is not None", True),
    ("settings.debug", None),
    ("engine.dialect.name == 'postgresql'", None),
])
def test_what_a_condition_says_about_a_local_database(test, says):
    assert _tests_local_dialect(ast.parse(test, mode="eval").body) is says


# -- OG401: local databases ----------------------------------------------------------------------------
def test_a_sqlite_branch_in_another_function_of_the_module_is_local(tmp_path):
    source = """
        from contextlib import asynccontextmanager

        from fastapi import FastAPI

        from .storage import Base, engine, settings


        async def _local_tables() -> None:
            async with engine.begin() as conn:
                await conn.run_sync(Base.metadata.create_all)


        @asynccontextmanager
        async def lifespan(app: FastAPI):
            if settings.database_url.startswith("sqlite"):
                await _local_tables()
            yield


        app = FastAPI(lifespan=lifespan)
    """
    assert found(tmp_path, "svc/main.py", source, "OG401") == []
    # Called once more outside the branch: no longer only for SQLite.
    both = source.replace("            yield\n", "            await _local_tables()\n            yield\n", 1)
    assert found(tmp_path, "svc/main.py", both, "OG401") == [11]


def test_a_quoted_sqlite_connection_annotation_is_local(tmp_path):
    source = """
        import sqlite3

        from fastapi import FastAPI

        app = FastAPI()


        def create_cache(conn: "sqlite3.Connection") -> None:
            conn.execute("CREATE TABLE IF NOT EXISTS cache (k TEXT PRIMARY KEY, v BLOB)")


        def create_shared(conn) -> None:
            conn.execute("CREATE TABLE IF NOT EXISTS shared (k TEXT PRIMARY KEY, v BLOB)")


        @app.on_event("startup")
        def boot() -> None:
            create_cache(sqlite3.connect("/tmp/cache.db"))
            create_shared(app.state.pg)
    """
    assert found(tmp_path, "svc/main.py", source, "OG401") == [14]


# -- OG401: a handle imported from the module that builds it -----------------------------------------
def test_an_imported_flask_sqlalchemy_handle_is_resolved_only_across_files(tmp_path):
    write(tmp_path, "shop/__init__.py", """
        from flask import Flask
        from flask_sqlalchemy import SQLAlchemy

        app = Flask(__name__)
        orm = SQLAlchemy(app)
    """)
    write(tmp_path, "shop/web.py", """
        from shop.setup import prepare

        prepare()
    """)
    setup = """
        from shop import orm


        def prepare() -> None:
            orm.create_all()
    """
    assert found(tmp_path, "shop/setup.py", setup, "OG401") == [6]
    assert found(tmp_path, "shop/setup.py", setup, "OG401", cross_file=False) == []
    # Something else under that name is no schema write.
    write(tmp_path, "shop/__init__.py", """
        from flask import Flask

        app = Flask(__name__)
        orm = object()
    """)
    assert found(tmp_path, "shop/setup.py", setup, "OG401") == []


# -- OG401: a method reached through a factory's result -----------------------------------------------
ADAPTER = """
    from sqlalchemy.ext.asyncio import create_async_engine

    from store.tables import Base


    class Adapter:
        def __init__(self, url: str) -> None:
            self.engine = create_async_engine(url)

        async def build_tables(self) -> None:
            async with self.engine.begin() as conn:
                await conn.run_sync(Base.metadata.create_all)
"""


def test_a_method_called_on_a_factory_result_from_start_up_is_reached(tmp_path):
    write(tmp_path, "store/__init__.py", "")
    write(tmp_path, "store/tables.py", "from sqlalchemy.orm import declarative_base\nBase = declarative_base()\n")
    write(tmp_path, "store/factory.py", """
        from store.adapter import Adapter


        def make():
            return Adapter("postgresql+asyncpg://app@db/app")
    """)
    write(tmp_path, "store/api.py", """
        from contextlib import asynccontextmanager

        from fastapi import FastAPI

        from store.factory import make


        @asynccontextmanager
        async def lifespan(app: FastAPI):
            handle = make()
            await handle.build_tables()
            yield


        app = FastAPI(lifespan=lifespan)
    """)
    (finding,) = findings_in_written_file(tmp_path, "store/adapter.py", ADAPTER, "OG401", True)
    assert finding.line == 13
    assert any(r.path.endswith("store/api.py") and r.line == 12 for r in finding.related)


def test_a_method_whose_name_many_classes_define_is_not_guessed(tmp_path):
    write(tmp_path, "store/__init__.py", "")
    write(tmp_path, "store/tables.py", "from sqlalchemy.orm import declarative_base\nBase = declarative_base()\n")
    for index in range(4):  # four other classes define the same method name
        write(tmp_path, f"store/other{index}.py", f"""
            class Other{index}:
                async def build_tables(self) -> None:
                    return None
        """)
    write(tmp_path, "store/api.py", """
        from contextlib import asynccontextmanager

        from fastapi import FastAPI

        from store.factory import make


        @asynccontextmanager
        async def lifespan(app: FastAPI):
            await make().build_tables()
            yield


        app = FastAPI(lifespan=lifespan)
    """)
    assert found(tmp_path, "store/adapter.py", ADAPTER, "OG401") == []


# -- OG401: a function handed to a runner ------------------------------------------------------------------
SCHEMA_HELPER = """
    from pathlib import Path

    from alembic import command as alembic_command
    from alembic.config import Config

    ROOT = Path(__file__).resolve().parent.parent


    def upgrade_to_head(revision: str = "head") -> None:
        cfg = Config(str(ROOT / "alembic.ini"))
        alembic_command.upgrade(cfg, revision)
"""

HANDING_LIFESPAN = """
    import asyncio
    import functools
    import threading
    from concurrent.futures import ThreadPoolExecutor
    from contextlib import asynccontextmanager

    import anyio
    from fastapi import FastAPI
    from starlette.concurrency import run_in_threadpool

    from catalog import schema
    from catalog.schema import upgrade_to_head as upgrade

    pool = ThreadPoolExecutor(max_workers=1)


    @asynccontextmanager
    async def lifespan(app: FastAPI):
        loop = asyncio.get_running_loop()
        {hand_off}
        yield


    app = FastAPI(lifespan=lifespan)


    async def in_thread(fn, *args):
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(pool, functools.partial(fn, *args))
"""


@pytest.mark.parametrize("hand_off", [
    "await run_in_threadpool(schema.upgrade_to_head)",
    "await asyncio.to_thread(schema.upgrade_to_head)",
    "await loop.run_in_executor(None, schema.upgrade_to_head)",
    "await loop.run_in_executor(pool, functools.partial(schema.upgrade_to_head, 'head'))",
    "await anyio.to_thread.run_sync(upgrade)",
    "pool.submit(upgrade, 'head').result()",
    "threading.Thread(target=schema.upgrade_to_head, daemon=True).start()",
    "await asyncio.to_thread(lambda: schema.upgrade_to_head('head'))",
    "await in_thread(schema.upgrade_to_head, 'head')",  # a helper of the module that hands its argument on
])
def test_a_migration_handed_to_a_runner_from_start_up_is_reached(tmp_path, hand_off):
    """A runner runs the function it is handed in the process that hands it: from the lifespan, the
    upgrade in another module runs in every replica, as if the lifespan called it."""
    write(tmp_path, "catalog/__init__.py", "")
    write(tmp_path, "catalog/app.py", HANDING_LIFESPAN.format(hand_off=hand_off))
    (finding,) = findings_in_written_file(tmp_path, "catalog/schema.py", SCHEMA_HELPER, "OG401", True)
    assert finding.line == 12
    assert any(r.path.endswith("catalog/app.py") and r.line == 21 for r in finding.related)


def test_a_migration_handed_to_a_runner_by_an_operator_command_is_not_start_up(tmp_path):
    """The same hand-off in a command a person runs, or of another function from start-up: silent."""
    write(tmp_path, "catalog/__init__.py", "")
    write(tmp_path, "catalog/app.py", HANDING_LIFESPAN.format(hand_off="await asyncio.to_thread(print, 'up')"))
    write(tmp_path, "catalog/cli.py", """
        import asyncio

        import click

        from catalog import schema


        @click.command()
        def migrate() -> None:
            asyncio.run(asyncio.to_thread(schema.upgrade_to_head))
    """)
    assert found(tmp_path, "catalog/schema.py", SCHEMA_HELPER, "OG401") == []


def test_a_function_of_the_module_handed_to_a_runner_from_start_up_is_reached(tmp_path):
    """Within one module (no project around it): the hook hands the function on, by name or as a method."""
    source = """
        import asyncio
        import threading

        from alembic import command
        from alembic.config import Config
        from django.apps import AppConfig
        from fastapi import FastAPI


        def _upgrade() -> None:
            command.upgrade(Config("alembic.ini"), "head")


        async def on_start() -> None:
            await asyncio.to_thread(_upgrade)


        class CatalogConfig(AppConfig):
            name = "catalog"

            def ready(self) -> None:
                threading.Thread(target=self._stamp).start()

            def _stamp(self) -> None:
                command.stamp(Config("alembic.ini"), "head")


        app = FastAPI(on_startup=[on_start])
    """
    assert found(tmp_path, "catalog/boot.py", source, "OG401", cross_file=False) == [12, 26]
    operator = source.replace("app = FastAPI(on_startup=[on_start])", "").replace(
        "class CatalogConfig(AppConfig):", "class CatalogConfig:")
    assert found(tmp_path, "catalog/boot.py", operator, "OG401", cross_file=False) == []


# -- OG610 -----------------------------------------------------------------------------------------------
FACTORY = """
    from flask import Flask

    from fleet.presence import {name}


    def create_app() -> Flask:
        app = Flask(__name__)
        with app.app_context():
            {name}()
        return app
"""


@pytest.mark.parametrize("body, expected", [
    # every row in a state, loop form
    ("""
        def reset():
            for row in Courier.query.filter(Courier.channel != None).all():
                row.channel = None
            db.session.commit()
    """, [5]),
    # queryset update, enum state
    ("""
        def reset():
            Courier.objects.filter(state=State.BUSY).update(state=State.IDLE)
    """, [4]),
    # every row at all
    ("""
        def reset():
            db.session.query(Courier).update({"channel": None})
            db.session.commit()
    """, [4]),
    # delete of every row in a state
    ("""
        def reset():
            Courier.objects.filter(online=True).delete()
    """, [4]),
    # the replica's own rows: a value computed at run time
    ("""
        def reset(owner=None):
            Courier.objects.filter(replica=owner).update(channel=None)
    """, []),
    # an age threshold: an expired lease
    ("""
        def reset():
            cutoff = datetime.now() - timedelta(minutes=5)
            Courier.objects.filter(state="busy", seen__lt=cutoff).update(state="idle")
            Courier.objects.filter(state="busy").filter(seen__lt=timezone.now()).update(state="idle")
    """, []),
    # not persisted: the loop only changes objects in memory
    ("""
        def reset():
            for row in Courier.query.filter(Courier.channel != None).all():
                row.channel = None
    """, []),
    # a read
    ("""
        def reset():
            return list(Courier.objects.filter(online=True).values("name"))
    """, []),
    # dict and mapping updates, a cache key deleted: no model rows
    ("""
        def reset(settings, cache):
            settings.update(DEFAULTS.EXTRA)
            settings.conf.update(Config.OVERRIDES)
            cache.delete(CACHE_KEY)
    """, []),
    # a backfill with a value computed at start-up, and a whole table rebuilt
    ("""
        def reset():
            fallback = Courier.objects.first()
            Courier.objects.filter(partner=None).update(partner=fallback)
            Courier.objects.all().delete()
    """, []),
    # raw SQL by key, and with an age threshold
    ("""
        def reset():
            db.session.execute("UPDATE courier SET channel = NULL WHERE id = :id", {"id": 3})
            db.session.execute("UPDATE courier SET state = 'idle' WHERE seen < now() - interval '5 minutes'")
    """, []),
])
def test_start_up_resets(tmp_path, body, expected):
    write(tmp_path, "fleet/__init__.py", "")
    write(tmp_path, "fleet/app.py", FACTORY.format(name="reset"))
    source = "from fleet.models import Courier, State, db\n" + textwrap.dedent(body)
    assert found(tmp_path, "fleet/presence.py", source, "OG610") == expected


def test_a_reset_that_only_an_operator_or_a_request_runs_is_silent(tmp_path):
    write(tmp_path, "fleet/__init__.py", "")
    source = """
        import click
        from flask import Flask

        from fleet.models import Courier

        app = Flask(__name__)


        @click.command()
        def reset_all() -> None:
            Courier.objects.filter(online=True).update(online=False)


        @app.route("/couriers/offline", methods=["POST"])
        def offline() -> str:
            Courier.objects.filter(online=True).update(online=False)
            return "ok"
    """
    assert found(tmp_path, "fleet/admin.py", source, "OG610") == []


TERM_STORE = """
    import psycopg
    import sqlite3


    class TermStore:
        def __init__(self, path: str) -> None:
            self._db = self._open(path)

        @staticmethod
        def _open(path: str) -> sqlite3.Connection:
            return sqlite3.connect(path, isolation_level=None)

        def rebuild_terms(self) -> None:
            self._db.execute("DROP TABLE IF EXISTS terms")
"""


def test_a_connection_attribute_opened_on_a_local_file_by_its_own_method_is_local(tmp_path):
    write(tmp_path, "search/__init__.py", "")
    write(tmp_path, "search/api.py", """
        from contextlib import asynccontextmanager

        from fastapi import FastAPI

        from search.registry import store


        @asynccontextmanager
        async def lifespan(app: FastAPI):
            store.rebuild_terms()
            yield


        app = FastAPI(lifespan=lifespan)
    """)
    write(tmp_path, "search/registry.py", "from search.terms import TermStore\nstore = TermStore('/tmp/t.db')\n")
    assert found(tmp_path, "search/terms.py", TERM_STORE, "OG401") == []
    shared = TERM_STORE.replace("def _open(path: str) -> sqlite3.Connection:\n            return sqlite3.connect(path, isolation_level=None)",
                                "def _open(path: str):\n            return psycopg.connect(path)")
    assert found(tmp_path, "search/terms.py", shared, "OG401") == [15]


ROSTER = """
    from sqlalchemy import select

    from fleet.models import Courier, db


    class Roster:
        def idle_couriers({params}):
            return db.session.scalars(select(Courier).filter_by(state="idle")).all()

        def retire(self, courier_id: int) -> None:
            courier = db.session.get(Courier, courier_id)
            courier.state = "retired"
            db.session.commit()
"""

HANDING_RESET = """
    from fleet.registry import services


    def reset() -> None:
        roster = services.roster
        for courier in roster.idle_couriers():
            roster.retire(courier.id)
"""


COURIER_MODELS = """
    from flask_sqlalchemy import SQLAlchemy

    db = SQLAlchemy()


    class Courier(db.Model):
        id = db.Column(db.Integer, primary_key=True)
        state = db.Column(db.String, nullable=False)
"""

REGISTRY = """
    from fleet.roster import Roster


    class Services:
        roster = Roster()


    services = Services()
"""


@pytest.mark.parametrize("params, expected", [
    ("self", [7]),
    ("self: 'Roster'", [7]),
    ("\n            self,  # the roster (not a filter)\n        ", [7]),
    ("cls", [7]),
    ("self, zone", []),  # (a parameter could narrow the rows: not a reset of all of them)
    ("self, *, zone=None", []),
])
def test_a_loop_handing_rows_of_a_method_in_another_module_to_a_writer(tmp_path, params, expected):
    """The method the rows come from is found in another module whatever its signature's spelling; one
    that takes something that could narrow the rows is no reset of all of them."""
    write(tmp_path, "fleet/__init__.py", "")
    write(tmp_path, "fleet/app.py", FACTORY.format(name="reset"))
    write(tmp_path, "fleet/roster.py", ROSTER.format(params=params))
    write(tmp_path, "fleet/registry.py", REGISTRY)
    write(tmp_path, "fleet/models.py", COURIER_MODELS)
    assert found(tmp_path, "fleet/presence.py", HANDING_RESET, "OG610") == expected
