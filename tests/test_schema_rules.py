"""Tricky cases of the schema family (OG401-OG403) that the rule docs do not show."""
from __future__ import annotations

import os
import textwrap

import pytest

from onceguard.config import from_mapping
from onceguard.engine.check import check_source
from onceguard.project.poolers import pooler_sign


def findings(tmp_path, source: str, path: str = "app/main.py", config: dict | None = None):
    source = textwrap.dedent(source)
    full = os.path.join(str(tmp_path), path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as handle:
        handle.write(source)
    found = check_source(source.encode(), full, from_mapping(config or {}, root=str(tmp_path)))
    return sorted((d.line, d.code) for d in found if d.code.startswith("OG4"))


# -- OG401 ------------------------------------------------------------------------------------------------
def test_helper_nobody_calls_is_not_flagged(tmp_path):
    src = """
        from sqlalchemy import create_engine
        from .models import Base

        engine = create_engine("postgresql://app@db/app")

        def init_db():
            Base.metadata.create_all(engine)
    """
    assert findings(tmp_path, src, "app/db.py") == []


def test_module_level_create_all_in_an_app_module(tmp_path):
    src = """
        from sqlalchemy import create_engine
        from .models import Base

        engine = create_engine("postgresql://app@db/app")
        Base.metadata.create_all(engine)
    """
    assert findings(tmp_path, src, "app/db.py") == [(6, "OG401")]


@pytest.mark.parametrize("path", ["scripts/init_db.py", "bin/init_db.py", "manage.py",
                                  "shop/management/commands/init_db.py"])
def test_module_level_create_all_in_one_off_scripts(tmp_path, path):
    src = """
        from sqlalchemy import create_engine
        from shop.models import Base

        Base.metadata.create_all(create_engine("postgresql://app@db/app"))
    """
    assert findings(tmp_path, src, path) == []


def test_argparse_script_module_level_is_one_off_but_server_main_is_start_up(tmp_path):
    script = """
        import argparse
        from sqlalchemy import create_engine
        from shop.models import Base

        engine = create_engine("postgresql://app@db/app")
        Base.metadata.create_all(engine)

        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            parser.parse_args()
            Base.metadata.create_all(engine)
    """
    assert findings(tmp_path, script, "shop/create_tables.py") == []
    server = """
        from flask import Flask
        from sqlalchemy import create_engine
        from shop.models import Base

        app = Flask(__name__)
        engine = create_engine("postgresql://app@db/app")
        Base.metadata.create_all(engine)

        if __name__ == "__main__":
            Base.metadata.drop_all(engine)
            app.run(host="0.0.0.0")
    """
    assert findings(tmp_path, server, "shop/app.py") == [(8, "OG401"), (11, "OG401")]


def test_command_called_by_the_app_factory_is_start_up(tmp_path):
    src = """
        import click
        from flask import Flask
        from .extensions import db

        @click.command("init-db")
        def init_db():
            db.create_all()

        @click.command("reset-db")
        def reset_db():
            db.drop_all()

        def create_app():
            app = Flask(__name__)
            db.init_app(app)
            app.cli.add_command(reset_db)
            with app.app_context():
                init_db()
            return app
    """
    assert findings(tmp_path, src, "app/__init__.py") == [(8, "OG401")]


def test_lookalike_create_all_and_create_table(tmp_path):
    src = """
        import boto3
        from fastapi import FastAPI
        from .repository import OrderRepository

        dynamodb = boto3.client("dynamodb")
        dynamodb.create_table(TableName="sessions", KeySchema=[], AttributeDefinitions=[])
        app = FastAPI()

        @app.post("/orders/bulk")
        def bulk(rows: list):
            OrderRepository().create_all(rows)
            return {"ok": True}
    """
    assert findings(tmp_path, src, "app/main.py") == []


def test_temporary_tables_and_truncate_are_not_schema(tmp_path):
    src = """
        from celery import shared_task
        from django.db import connection

        @shared_task
        def rebuild_report():
            with connection.cursor() as cursor:
                cursor.execute("CREATE TEMP TABLE report_rows AS SELECT * FROM orders WHERE total > 100")
                cursor.execute("TRUNCATE report_cache")
                cursor.execute("INSERT INTO report_cache SELECT * FROM report_rows")
                cursor.execute("DROP TABLE report_rows")
    """
    assert findings(tmp_path, src, "reports/tasks.py") == []


def test_view_code_is_flagged_and_queued_task_code_is_not(tmp_path):
    # Every replica serves requests as the load balancer sends them, so a view's migrate runs wherever it is
    # asked; a queued task runs once per enqueue, on the one worker that takes it.
    src = """
        from celery import shared_task
        from django.core.management import call_command
        from django.db import connection
        from django.http import JsonResponse

        def ensure_partition(month):
            with connection.cursor() as cursor:
                cursor.execute(f"CREATE TABLE IF NOT EXISTS events_{month} PARTITION OF events "
                               f"FOR VALUES IN ('{month}')")

        @shared_task
        def roll_partitions(month):
            ensure_partition(month)

        def admin_migrate(request):
            call_command("migrate")
            return JsonResponse({"ok": True})
    """
    assert findings(tmp_path, src, "events/tasks.py") == [(17, "OG401")]


def test_a_job_each_replicas_scheduler_runs_is_flagged(tmp_path):
    src = """
        from apscheduler.schedulers.background import BackgroundScheduler
        from django.db import connection

        def ensure_partition():
            with connection.cursor() as cursor:
                cursor.execute("CREATE TABLE IF NOT EXISTS events_current PARTITION OF events DEFAULT")

        scheduler = BackgroundScheduler()
        scheduler.add_job(ensure_partition, "interval", hours=1)
        scheduler.start()
    """
    assert findings(tmp_path, src, "events/jobs.py") == [(7, "OG401")]


def test_manage_py_execute_from_command_line_is_not_flagged_but_wsgi_migrate_is(tmp_path):
    manage = """
        import sys
        from django.core.management import execute_from_command_line

        if __name__ == "__main__":
            execute_from_command_line(sys.argv)
    """
    assert findings(tmp_path, manage, "manage.py") == []
    wsgi = """
        from django.core.management import execute_from_command_line
        from django.core.wsgi import get_wsgi_application

        application = get_wsgi_application()
        execute_from_command_line(["manage.py", "migrate", "--noinput"])
    """
    assert findings(tmp_path, wsgi, "shop/wsgi.py") == [(6, "OG401")]


@pytest.mark.parametrize("call", [
    'call_command("migrate", "--check", interactive=False)',
    'call_command("migrate", check_unapplied=True)',
    'call_command("migrate", "--plan")',
    'execute_from_command_line(["manage.py", "migrate", "--check"])',
])
def test_a_migrate_that_only_reports_unapplied_migrations_writes_no_schema(tmp_path, call):
    wsgi = f"""
        from django.core.management import call_command, execute_from_command_line
        from django.core.wsgi import get_wsgi_application

        application = get_wsgi_application()
        {call}
    """
    assert findings(tmp_path, wsgi, "shop/wsgi.py") == []
    applying = wsgi.replace(', "--check"', "").replace("check_unapplied=True", "interactive=False").replace(
        ', "--plan"', "")
    assert findings(tmp_path, applying, "shop/wsgi.py") == [(6, "OG401")]


def test_a_deployed_migrate_check_is_no_migration_step():
    from onceguard.project import deployment

    assert deployment._step_kind(["django-admin", "migrate", "--check"]) is None
    assert deployment._step_kind(["python", "-m", "django", "migrate", "--plan"]) is None
    assert deployment._step_kind(["django-admin", "migrate"]) == (deployment.DJANGO_MIGRATE, "")


SQL_FILE_STARTUP = """
    from contextlib import asynccontextmanager
    from pathlib import Path

    import asyncpg
    from fastapi import FastAPI

    HERE = Path(__file__).parent


    def _bootstrap_sql() -> str:
        return (HERE / "sql" / "bootstrap.sql").read_text()


    @asynccontextmanager
    async def lifespan(app):
        pool = await asyncpg.create_pool("postgresql://app@db/app")
        text = _bootstrap_sql()
        async with pool.acquire() as conn:
            await conn.execute(text)
        yield


    app = FastAPI(lifespan=lifespan)
"""


def _with_sql_file(tmp_path, body: str) -> None:
    os.makedirs(os.path.join(str(tmp_path), "app", "sql"), exist_ok=True)
    with open(os.path.join(str(tmp_path), "app", "sql", "bootstrap.sql"), "w", encoding="utf-8") as handle:
        handle.write(body)


def test_ddl_read_from_a_sql_file_and_sent_at_start_up_writes_schema(tmp_path):
    _with_sql_file(tmp_path, "-- tables\nCREATE TABLE IF NOT EXISTS lockers (id bigint PRIMARY KEY);\n")
    assert findings(tmp_path, SQL_FILE_STARTUP) == [(20, "OG401")]


def test_a_sql_file_of_plain_queries_writes_no_schema(tmp_path):
    _with_sql_file(tmp_path, "UPDATE lockers SET seen = now() WHERE seen IS NULL;\n")
    assert findings(tmp_path, SQL_FILE_STARTUP) == []


def test_start_up_ddl_under_a_blocking_advisory_lock_on_its_connection_is_serialised(tmp_path):
    _with_sql_file(tmp_path, "CREATE TABLE IF NOT EXISTS lockers (id bigint PRIMARY KEY);\n")
    locked = SQL_FILE_STARTUP.replace("""            await conn.execute(text)""", """            await conn.execute("SELECT pg_advisory_lock(8812)")
                try:
                    await conn.execute(text)
                finally:
                    await conn.execute("SELECT pg_advisory_unlock(8812)")""")
    assert findings(tmp_path, locked) == []
    full = os.path.join(str(tmp_path), "app/main.py")
    found = check_source(textwrap.dedent(locked).encode(), full, from_mapping({}, root=str(tmp_path)))
    assert [d.code for d in found if d.code == "OG103"] == []  # a migration's lock: replicas should wait there


def test_tests_and_migrations_are_exempt(tmp_path):
    src = """
        from sqlalchemy import create_engine
        from app.models import Base

        engine = create_engine("postgresql://test@localhost/test")
        Base.metadata.create_all(engine)
    """
    assert findings(tmp_path, src, "tests/helpers.py") == []
    assert findings(tmp_path, src, "app/users_test.py") == []
    assert findings(tmp_path, src, "db/migrations/0002_seed.py") == []


def test_lambda_table_create_and_pony_false(tmp_path):
    src = """
        from contextlib import asynccontextmanager
        from fastapi import FastAPI
        from pony.orm import Database
        from sqlalchemy import Column, Integer, MetaData, Table
        from sqlalchemy.ext.asyncio import create_async_engine

        metadata = MetaData()
        audit = Table("audit", metadata, Column("id", Integer, primary_key=True))
        engine = create_async_engine("postgresql+asyncpg://app@db/app")
        pony_db = Database()
        pony_db.generate_mapping(create_tables=False)

        @asynccontextmanager
        async def lifespan(app):
            async with engine.begin() as conn:
                await conn.run_sync(lambda sync_conn: metadata.create_all(sync_conn))
                await conn.run_sync(audit.create, checkfirst=True)
                await conn.run_sync(lambda sync_conn: audit.create(sync_conn))
            yield

        app = FastAPI(lifespan=lifespan)
    """
    assert findings(tmp_path, src) == [(17, "OG401"), (19, "OG401")]


def test_register_tortoise_is_a_start_up_hook_wherever_it_is_called(tmp_path):
    src = """
        from tortoise.contrib.starlette import register_tortoise

        def install_orm(app):
            register_tortoise(app, db_url="postgres://a@db/a", modules={"models": ["a.models"]}, generate_schemas=True)
    """
    assert findings(tmp_path, src, "a/orm.py") == [(5, "OG401")]


def test_app_config_ready_through_self_method(tmp_path):
    src = """
        from django.apps import AppConfig
        from django.db import connection

        class BillingConfig(AppConfig):
            name = "billing"

            def ready(self):
                self._ensure_extensions()

            def _ensure_extensions(self):
                with connection.cursor() as cursor:
                    cursor.execute("CREATE EXTENSION IF NOT EXISTS citext")
    """
    assert findings(tmp_path, src, "billing/apps.py") == [(13, "OG401")]


HANDED_UPGRADE = """
    import functools
    import threading

    import click
    from alembic import command
    from alembic.config import Config
    from fastapi import FastAPI
    from starlette.concurrency import run_in_threadpool

    app = FastAPI()


    @app.on_event("startup")
    async def bring_schema_up() -> None:
        {hand_off}


    @click.command()
    def upgrade_cli() -> None:
        {hand_off}
"""


@pytest.mark.parametrize("hand_off", [
    'await run_in_threadpool(command.upgrade, Config("alembic.ini"), "head")',
    'threading.Thread(target=command.upgrade, args=(Config("alembic.ini"), "head")).start()',
    'await run_in_threadpool(functools.partial(command.upgrade, Config("alembic.ini"), "head"))',
])
def test_an_upgrade_handed_to_a_runner_runs_where_the_runner_is_called(tmp_path, hand_off):
    """Alembic's upgrade handed to a runner (by position, by keyword, wrapped in a partial) runs in the
    start-up hook that hands it; the same hand-off in an operator's command stays silent."""
    source = HANDED_UPGRADE.format(hand_off=hand_off)
    if "await" not in hand_off:
        source = source.replace("async def bring_schema_up", "def bring_schema_up")
    assert findings(tmp_path, source) == [(16, "OG401")]


# -- OG402 ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dsn, sign", [
    ("postgresql://u:p@pgbouncer:5432/db", "host pgbouncer"),
    ("postgresql://u:p@db.internal:6432/db", "port 6432"),
    ("postgres://u:p@db.internal/db?pgbouncer=true", "pgbouncer=true"),
    ("host=db.internal port=6432 dbname=app", "port 6432"),
    ("aws-0-eu-west-1.pooler.supabase.com", "pooler"),
    ("postgresql://u:p@$1:$1/db", None),
    ("postgresql://u:p@db.internal:5432/db", None),
    ("SELECT 1", None),
])
def test_pooler_signs(dsn, sign):
    found = pooler_sign(dsn)
    if sign is None:
        assert found is None
    else:
        assert found is not None and sign in found


def test_og402_one_finding_per_dsn_and_only_in_migration_code(tmp_path):
    src = """
        from alembic import context
        from sqlalchemy import create_engine

        URL = "postgresql+psycopg://app@pgbouncer.svc:6432/app"
        config = context.config
        config.set_main_option("sqlalchemy.url", URL)
        engine = create_engine(URL)
    """
    assert findings(tmp_path, src, "alembic/env.py") == [(7, "OG402")]
    assert findings(tmp_path, src, "app/settings.py") == []


def test_og402_pooled_variable_needs_config_and_no_fallback_to_direct(tmp_path):
    pooled = """
        import os
        import psycopg

        def connect():
            return psycopg.connect(os.getenv("APP_DATABASE_URL"))
    """
    config = {"migrate-url-env": "POSTGRES_MIGRATE_URL"}
    assert findings(tmp_path, pooled, "db/migrate.py") == []
    assert findings(tmp_path, pooled, "db/migrate.py", config) == [(6, "OG402")]
    fallback = """
        import os
        import psycopg

        def connect():
            return psycopg.connect(os.environ.get("POSTGRES_MIGRATE_URL") or os.environ["DATABASE_URL"])
    """
    assert findings(tmp_path, fallback, "db/migrate.py", config) == []


def test_og402_url_create_and_getenv_default(tmp_path):
    src = """
        import os
        from sqlalchemy import URL, create_engine

        direct = URL.create("postgresql+psycopg", host="db-primary", port=6432, database="app")
        engine = create_engine(os.getenv("MIGRATE_URL", "postgresql://app@pgbouncer/app"))
    """
    assert findings(tmp_path, src, "migrations/runner.py") == [(5, "OG402"), (6, "OG402")]


# -- OG403 ------------------------------------------------------------------------------------------------
ENV_HEAD = """
    from alembic import context
    from sqlalchemy import engine_from_config, pool, text

    config = context.config
    KEY = 42

"""


STARTUP_RUNNER = """
    from contextlib import asynccontextmanager

    from alembic import command
    from alembic.config import Config
    from fastapi import FastAPI


    @asynccontextmanager
    async def lifespan(app):
        command.upgrade(Config("alembic.ini"), "head")
        yield


    app = FastAPI(lifespan=lifespan)
"""


def project_findings(tmp_path, files: dict, path: str, codes: str = "OG4"):
    """Write a project (``files``: relative path -> text) and check ``path`` the way the CLI does."""
    for name, text in files.items():
        full = os.path.join(str(tmp_path), name)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as handle:
            handle.write(textwrap.dedent(text))
    full = os.path.join(str(tmp_path), path)
    with open(full, "rb") as handle:
        source = handle.read()
    found = check_source(source, full, from_mapping({}, root=str(tmp_path)), cross_file=True)
    return [d for d in found if d.code.startswith(codes)]


def env_findings(tmp_path, body: str):
    """The places in env.py that the project's findings name, when its start-up code runs it (so only the
    lock decides): OG403 at env.py itself, or OG401 at the start-up upgrade naming env.py's unlocked run
    among its related places (one root cause, one finding)."""
    files = {
        "alembic/env.py": textwrap.dedent(ENV_HEAD) + textwrap.dedent(body),
        "alembic.ini": "[alembic]\nscript_location = %(here)s/alembic\n",
        "app/main.py": STARTUP_RUNNER,
    }
    at_env = project_findings(tmp_path, files, "alembic/env.py")
    at_runner = project_findings(tmp_path, files, "app/main.py")
    env_path = os.path.join(str(tmp_path), "alembic", "env.py")
    named = [(d.line, d.code) for d in at_env]
    named += [(r.line, d.code) for d in at_runner for r in d.related if r.path == env_path]
    return sorted(named)


def test_lock_after_the_run_or_unlocked_before_it(tmp_path):
    after = """
        def run_migrations_online():
            engine = engine_from_config(config.get_section(config.config_ini_section, {}), poolclass=pool.NullPool)
            with engine.connect() as connection:
                context.configure(connection=connection)
                with context.begin_transaction():
                    context.run_migrations()
                connection.execute(text("SELECT pg_advisory_lock(:k)"), {"k": KEY})
    """
    assert env_findings(tmp_path, after) == [(14, "OG401")]
    released = """
        def run_migrations_online():
            engine = engine_from_config(config.get_section(config.config_ini_section, {}), poolclass=pool.NullPool)
            with engine.connect() as connection:
                connection.execute(text("SELECT pg_advisory_lock(:k)"), {"k": KEY})
                connection.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": KEY})
                context.configure(connection=connection)
                with context.begin_transaction():
                    context.run_migrations()
    """
    assert env_findings(tmp_path, released) == [(16, "OG401")]


def test_lock_on_another_connection_or_try_lock(tmp_path):
    other = """
        def run_migrations_online():
            engine = engine_from_config(config.get_section(config.config_ini_section, {}), poolclass=pool.NullPool)
            with engine.connect() as lock_conn, engine.connect() as connection:
                lock_conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": KEY})
                context.configure(connection=connection)
                with context.begin_transaction():
                    context.run_migrations()
    """
    assert env_findings(tmp_path, other) == [(15, "OG401")]


def test_xact_lock_outside_the_migration_transaction(tmp_path):
    body = """
        def run_migrations_online():
            engine = engine_from_config(config.get_section(config.config_ini_section, {}), poolclass=pool.NullPool)
            with engine.connect() as connection:
                connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": KEY})
                context.configure(connection=connection)
                with context.begin_transaction():
                    context.run_migrations()
    """
    assert env_findings(tmp_path, body) == [(15, "OG401")]


def test_lock_helper_and_connection_from_elsewhere_are_trusted(tmp_path):
    helper = """
        from app.db import migration_lock

        def run_migrations_online():
            engine = engine_from_config(config.get_section(config.config_ini_section, {}), poolclass=pool.NullPool)
            with engine.connect() as connection, migration_lock(connection):
                context.configure(connection=connection)
                with context.begin_transaction():
                    context.run_migrations()
    """
    assert env_findings(tmp_path, helper) == []
    passed_in = """
        def run_with(connection):
            context.configure(connection=connection)
            with context.begin_transaction():
                context.run_migrations()
    """
    assert env_findings(tmp_path, passed_in) == []


def test_offline_mode_and_tests_are_not_flagged(tmp_path):
    offline = """
        def run_migrations_offline():
            context.configure(url="postgresql://x@db/x", literal_binds=True)
            with context.begin_transaction():
                context.run_migrations()
    """
    assert env_findings(tmp_path, offline) == []
    runner = """
        from alembic import command
        from alembic.config import Config

        def test_upgrade(engine):
            with engine.begin() as connection:
                cfg = Config("alembic.ini")
                cfg.attributes["connection"] = connection
                command.upgrade(cfg, "head")
    """
    assert findings(tmp_path, runner, "tests/test_migrations.py") == []


def test_upgrade_letting_env_py_connect_is_left_to_env_py(tmp_path):
    src = """
        import sys
        from alembic import command
        from alembic.config import Config

        if __name__ == "__main__":
            command.upgrade(Config("alembic.ini"), "head")
            sys.exit(0)
    """
    assert findings(tmp_path, src, "bin/migrate.py") == []


def test_django_helper_without_callers_is_silent_but_main_is_not(tmp_path):
    helper = """
        from django.core.management import call_command

        def apply_migrations():
            call_command("migrate", interactive=False)
    """
    assert findings(tmp_path, helper, "ops/deploy.py") == []
    main = """
        import django
        from django.core.management import call_command

        def main():
            django.setup()
            call_command("migrate", interactive=False)

        if __name__ == "__main__":
            main()
    """
    assert findings(tmp_path, main, "ops/deploy.py") == [(7, "OG403")]


def test_start_up_migrate_is_og401_only(tmp_path):
    src = """
        from django.apps import AppConfig
        from django.core.management import call_command

        class ShopConfig(AppConfig):
            name = "shop"

            def ready(self):
                call_command("migrate")
    """
    assert findings(tmp_path, src, "shop/apps.py") == [(9, "OG401")]


def test_server_started_by_main_function(tmp_path):
    src = """
        import uvicorn
        from fastapi import FastAPI
        from sqlalchemy import create_engine
        from .models import Base

        app = FastAPI()
        engine = create_engine("postgresql://app@db/app")
        Base.metadata.create_all(engine)

        def main():
            uvicorn.run(app, port=8000)

        if __name__ == "__main__":
            main()
    """
    assert findings(tmp_path, src, "app/main.py") == [(9, "OG401")]


def test_nested_helper_of_start_up_code(tmp_path):
    src = """
        from fastapi import FastAPI
        from sqlalchemy.ext.asyncio import create_async_engine
        from .models import Base

        app = FastAPI()
        engine = create_async_engine("postgresql+asyncpg://app@db/app")

        @app.on_event("startup")
        async def startup():
            def _create(sync_conn):
                Base.metadata.create_all(sync_conn)

            def _unused(sync_conn):
                Base.metadata.drop_all(sync_conn)

            async with engine.begin() as conn:
                await conn.run_sync(_create)
    """
    assert findings(tmp_path, src) == [(12, "OG401")]


def test_revisions_executing_sql_files_are_not_runners(tmp_path):
    django_revision = """
        from pathlib import Path
        from django.db import migrations

        SQL = Path(__file__).with_name("0007_search.sql")

        def forwards(apps, schema_editor):
            schema_editor.execute(SQL.read_text())

        class Migration(migrations.Migration):
            dependencies = [("catalog", "0006_prices")]
            operations = [migrations.RunPython(forwards)]
    """
    assert findings(tmp_path, django_revision, "catalog/migrations/0007_search.py") == []
    alembic_revision = """
        from pathlib import Path
        from alembic import op

        revision = "0007"
        down_revision = "0006"

        def upgrade():
            conn = op.get_bind()
            conn.exec_driver_sql(Path(__file__).with_suffix(".sql").read_text())
    """
    assert findings(tmp_path, alembic_revision, "alembic/versions/0007_search.py") == []


LOCKED_ENV = """
    def run_migrations_online():
        engine = engine_from_config(config.get_section(config.config_ini_section, {}), poolclass=pool.NullPool)
        with engine.connect() as connection:
            connection.execute(text("SELECT pg_advisory_lock(:k)"), {"k": KEY})
            connection.commit()
            try:
                context.configure(connection=connection)
                with context.begin_transaction():
                    context.run_migrations()
            finally:
                connection.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": KEY})
"""

UNLOCKED_ENV = """
    def run_migrations_online():
        engine = engine_from_config(config.get_section(config.config_ini_section, {}), poolclass=pool.NullPool)
        with engine.connect() as connection:
            context.configure(connection=connection)
            with context.begin_transaction():
                context.run_migrations()
"""


def _startup_upgrade_project(body: str) -> dict:
    return {
        "alembic/env.py": textwrap.dedent(ENV_HEAD) + textwrap.dedent(body),
        "alembic.ini": "[alembic]\nscript_location = %(here)s/alembic\n",
        "app/main.py": STARTUP_RUNNER,
    }


def test_a_start_up_upgrade_is_one_finding_naming_the_unlocked_env(tmp_path):
    files = _startup_upgrade_project(UNLOCKED_ENV)
    at_runner = project_findings(tmp_path, files, "app/main.py")
    at_env = project_findings(tmp_path, files, "alembic/env.py")
    assert [(d.code, d.line) for d in at_runner] == [("OG401", 11)]
    assert at_env == [], "the env.py is a related place of the runner's finding, not a second finding"
    env_path = os.path.join(str(tmp_path), "alembic", "env.py")
    assert [(r.path, r.line) for r in at_runner[0].related] == [(env_path, 14)]


def test_a_start_up_upgrade_whose_env_holds_the_lock_is_a_locked_runner(tmp_path):
    files = _startup_upgrade_project(LOCKED_ENV)
    assert project_findings(tmp_path, files, "app/main.py") == []
    assert project_findings(tmp_path, files, "alembic/env.py") == []


#: A start-up upgrade under a blocking lock on the connection it hands to env.py.
HANDING_RUNNER = """
    from contextlib import asynccontextmanager

    from alembic import command
    from alembic.config import Config
    from fastapi import FastAPI
    from sqlalchemy import create_engine, text

    engine = create_engine("postgresql+psycopg://app@db/app")


    @asynccontextmanager
    async def lifespan(app):
        with engine.connect() as connection:
            connection.execute(text("SELECT pg_advisory_lock(7)"))
            cfg = Config("alembic.ini")
            cfg.attributes["connection"] = connection
            command.upgrade(cfg, "head")
        yield


    app = FastAPI(lifespan=lifespan)
"""


def test_a_start_up_upgrade_under_a_lock_on_the_connection_it_hands_to_env(tmp_path):
    runner = HANDING_RUNNER
    files = _startup_upgrade_project(UNLOCKED_ENV)
    files["app/main.py"] = runner
    assert project_findings(tmp_path, files, "app/main.py") == []
    unlocked = runner.replace('connection.execute(text("SELECT pg_advisory_lock(7)"))', "pass")
    files["app/main.py"] = unlocked
    assert [d.code for d in project_findings(tmp_path, files, "app/main.py")] == ["OG401"]


LOCKED_BY_CALLER = """
    import asyncio
    import contextlib

    from alembic import command
    from alembic.config import Config
    from fastapi import FastAPI
    from sqlalchemy import create_engine, text

    engine = create_engine("postgresql+psycopg://app@db/app")


    @contextlib.contextmanager
    def schema_lock():
        with engine.connect() as conn:
            while not conn.execute(text("SELECT pg_try_advisory_lock(41)")).scalar():
                pass
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(41)"))


    def to_head(cfg) -> None:
        command.upgrade(cfg, "head")


    def bring_up() -> None:
        cfg = Config("alembic.ini")
        {call}


    async def lifespan(app):
        await asyncio.to_thread(bring_up)
        yield


    app = FastAPI(lifespan=lifespan)
"""


@pytest.mark.parametrize("call, flagged", [
    ("with schema_lock():\n            to_head(cfg)", False),  # every caller holds the project's lock
    ("to_head(cfg)", True),
])
def test_a_schema_write_whose_every_caller_holds_a_lock_helper(tmp_path, call, flagged):
    source = textwrap.dedent(LOCKED_BY_CALLER.format(call=call))
    full = tmp_path / "app" / "main.py"
    full.parent.mkdir(parents=True)
    full.write_text(source, encoding="utf-8")
    found = check_source(source.encode(), str(full), from_mapping({}, root=str(tmp_path)), cross_file=True)
    assert [d.code for d in found if d.code == "OG401"] == (["OG401"] if flagged else [])


TWO_BRANCH_ENV = """
    def run_migrations_online():
        handed = config.attributes.get("connection")
        if handed is not None:
            context.configure(connection=handed)
            with context.begin_transaction():
                context.run_migrations()
            return
        engine = engine_from_config(config.get_section(config.config_ini_section, {}), poolclass=pool.NullPool)
        with engine.connect() as connection:
            context.configure(connection=connection)
            with context.begin_transaction():
                context.run_migrations()
"""


def test_the_own_connection_branch_of_env_is_not_what_a_runner_handing_its_connection_runs(tmp_path):
    # The start-up runner hands env.py its locked connection: env.py takes the handed branch for it, so the
    # branch that opens its own connection is run by nothing every replica runs.
    runner = HANDING_RUNNER
    files = _startup_upgrade_project(TWO_BRANCH_ENV)
    files["app/main.py"] = runner
    assert project_findings(tmp_path, files, "app/main.py") == []
    assert project_findings(tmp_path, files, "alembic/env.py") == []
