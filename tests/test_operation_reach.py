"""Where code runs, told apart from where it could run.

- OG401: schema a request or a job removes (``DROP``, ``drop_all()``) or brings to a revision held in a variable
  (a backup's version) is an operation somebody asks for, which one replica carries out; schema a request ensures
  on every pass (``CREATE ... IF NOT EXISTS``, upgrade to head) is still raced by concurrent passes, and at
  start-up every replica runs all of it.
- A function of a module that is also runnable by hand (a ``__main__`` block) runs at start-up when start-up
  code elsewhere calls it (its seeding is OG603's); a script that reads its own command line (``sys.argv[1]``, ``parse_args()``) at module
  level is run by a person, and so is what it calls.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

RESTORE = """\
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import text

    from .db import engine


    def restore(dump: dict) -> None:
        with engine.begin() as connection:
            connection.execute(text("DROP TYPE IF EXISTS mood CASCADE"))
        command.upgrade(Config("alembic.ini"), dump["alembic_version"])


    def ensure_schema() -> None:
        command.upgrade(Config("alembic.ini"), "head")
"""

ROUTES = """\
    from fastapi import APIRouter

    from .backups import {called}

    router = APIRouter()


    @router.post("/admin/backups/restore")
    def restore_backup(dump: dict) -> dict:
        {called}({arguments})
        return {{"ok": True}}
"""

DB = """\
    from sqlalchemy import create_engine

    engine = create_engine("postgresql://app@db/app")
"""


def _restore_project(tmp_path, called, arguments):
    write(tmp_path, {"app/__init__.py": "", "app/db.py": DB, "app/backups.py": RESTORE,
                     "app/routes.py": ROUTES.format(called=called, arguments=arguments)})


def test_a_restore_a_request_runs_is_an_operation_not_a_race(tmp_path):
    _restore_project(tmp_path, "restore", "dump")
    assert findings(tmp_path, "app/backups.py", codes=("OG401",)) == []


def test_schema_a_request_brings_to_head_is_still_raced(tmp_path):
    _restore_project(tmp_path, "ensure_schema", "")
    assert findings(tmp_path, "app/backups.py", codes=("OG401",)) == [(15, "OG401")]


def test_the_same_restore_at_start_up_runs_in_every_replica(tmp_path):
    write(tmp_path, {"app/__init__.py": "", "app/db.py": DB, "app/backups.py": RESTORE, "app/main.py": """\
        from contextlib import asynccontextmanager

        from fastapi import FastAPI

        from .backups import restore


        @asynccontextmanager
        async def lifespan(app):
            restore({"alembic_version": "base"})
            yield


        app = FastAPI(lifespan=lifespan)
    """})
    assert findings(tmp_path, "app/backups.py", codes=("OG401",)) == [(10, "OG401")]


MODELS = """\
    from sqlalchemy import Column, Integer, String
    from sqlalchemy.orm import declarative_base

    Base = declarative_base()


    class Group(Base):
        __tablename__ = "groups"
        id = Column(Integer, primary_key=True)
        name = Column(String)
"""

INIT_DB = """\
    from sqlalchemy import create_engine, select
    from sqlalchemy.orm import Session

    from .models import Group

    engine = create_engine("postgresql://app@db/app")


    def main() -> None:
        with Session(engine) as session:
            if session.scalar(select(Group).limit(1)) is None:
                session.add(Group(name="home"))
                session.commit()


    if __name__ == "__main__":
        main()
"""


@pytest.mark.parametrize("called_at_startup, reported", [(True, [(11, "OG603")]), (False, [])])
def test_a_runnable_module_whose_function_start_up_also_calls(tmp_path, called_at_startup, reported):
    files = {"shop/__init__.py": "", "shop/models.py": MODELS, "shop/init_db.py": INIT_DB}
    if called_at_startup:
        files["shop/app.py"] = """\
            from flask import Flask


            def create_app() -> Flask:
                app = Flask(__name__)
                from . import init_db

                init_db.main()
                return app
        """
    write(tmp_path, files)
    assert findings(tmp_path, "shop/init_db.py", codes=("OG603",)) == reported


IMPORTER = """\
    import sys

    from shop.app import create_app
    from shop.loader import load_dump

    app = create_app()
    with app.app_context():
        load_dump({argument})
"""

LOADER = """\
    from flask_migrate import upgrade


    def load_dump(path: str) -> None:
        upgrade()
"""

APP = """\
    from flask import Flask


    def create_app() -> Flask:
        return Flask(__name__)
"""


@pytest.mark.parametrize("argument, reported", [("sys.argv[1]", []), ('"dump.zip"', [(5, "OG401")])])
def test_a_script_that_reads_its_command_line(tmp_path, argument, reported):
    write(tmp_path, {"shop/__init__.py": "", "shop/app.py": APP, "shop/loader.py": LOADER,
                     "import_dump.py": IMPORTER.replace("{argument}", argument)})
    assert findings(tmp_path, "shop/loader.py", codes=("OG401",)) == reported


ENV = """\
    from alembic import context
    from sqlalchemy import engine_from_config, pool

    config = context.config


    def run_migrations_online():
        connectable = engine_from_config(config.get_section(config.config_ini_section, {}), poolclass=pool.NullPool)
        with connectable.connect() as connection:
            context.configure(connection=connection)
            with context.begin_transaction():
                context.run_migrations()


    run_migrations_online()
"""


def test_the_env_py_a_requested_restore_runs_is_no_replica_run(tmp_path):
    """The env.py only a restore runs (a request's upgrade to the backup's revision) is not run by every
    replica; the one start-up code runs is."""
    files = {"app/__init__.py": "", "app/db.py": DB, "app/backups.py": RESTORE, "alembic/env.py": ENV,
             "alembic.ini": "[alembic]\nscript_location = alembic\n",
             "app/routes.py": ROUTES.format(called="restore", arguments="dump")}
    write(tmp_path, files)
    assert findings(tmp_path, "alembic/env.py", codes=("OG403",)) == []
