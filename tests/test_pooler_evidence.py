"""Where a connection's URL points, read from the whole project (``project/poolers.py``).

A session-level advisory lock (OG102) or a migration (OG402) on a connection built from a value the module does
not show (``settings.DATABASE_URL``, ``os.environ["DATABASE_URL"]``) goes through a transaction pooler when the
project's own files say so: the deployment sets the variable to PgBouncer's address, or every PostgreSQL URL
the project shows is pooled. A project that also shows a direct URL, or sets its pooler to session mode, gives
no such answer.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SETTINGS = """\
    import os

    DATABASE_URL = os.environ.get("DATABASE_URL", "postgresql://shelf:shelf@localhost:5432/shelf")
"""

SETTINGS_POOLED_DEFAULT = """\
    import os

    DATABASE_URL = os.environ.get("DATABASE_URL", "postgresql://shelf:shelf@pgbouncer:6432/shelf")
"""

DB = """\
    from sqlalchemy import create_engine

    from . import settings

    engine = create_engine(settings.DATABASE_URL)
"""

#: The lock helper takes the session lock on the connection it is handed and commits at once: the work that
#: follows runs in later transactions.
LOCKS = """\
    from sqlalchemy import text


    def hold(conn, key: int) -> bool:
        got = conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar()
        conn.commit()
        return bool(got)


    def let_go(conn, key: int) -> None:
        conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
        conn.commit()
"""

COMPOSE_POOLED = """\
    services:
      bouncer:
        image: edoburu/pgbouncer:1.22.1
        environment:
          POOL_MODE: transaction
      restock:
        build: .
        environment:
          DATABASE_URL: postgresql://shelf:shelf@bouncer:6432/shelf
        deploy:
          replicas: 3
"""

K8S_POOLED = """\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: restock
    spec:
      replicas: 3
      template:
        spec:
          containers:
            - name: restock
              image: shelf/restock:1.0
              env:
                - name: DATABASE_URL
                  value: "postgresql://shelf:shelf@db-pooler.internal:5432/shelf"
"""


def test_a_session_lock_when_the_deployment_points_the_app_at_pgbouncer(tmp_path):
    write(tmp_path, {"shelf/__init__.py": "", "shelf/settings.py": SETTINGS, "shelf/db.py": DB,
                     "shelf/locks.py": LOCKS, "docker-compose.yml": COMPOSE_POOLED})
    assert findings(tmp_path, "shelf/locks.py", codes=("OG102",)) == [(5, "OG102")]


def test_a_kubernetes_env_entry_names_the_pooler_too(tmp_path):
    write(tmp_path, {"shelf/__init__.py": "", "shelf/settings.py": SETTINGS, "shelf/db.py": DB,
                     "shelf/locks.py": LOCKS, "k8s/restock.yaml": K8S_POOLED})
    assert findings(tmp_path, "shelf/locks.py", codes=("OG102",)) == [(5, "OG102")]


@pytest.mark.parametrize("env_file", [".env", "deploy/production.env"])
def test_an_env_file_names_the_pooler(tmp_path, env_file):
    write(tmp_path, {"shelf/__init__.py": "", "shelf/settings.py": SETTINGS, "shelf/db.py": DB,
                     "shelf/locks.py": LOCKS, env_file: "DATABASE_URL=postgresql://shelf:shelf@bouncer:6432/shelf\n"})
    assert findings(tmp_path, "shelf/locks.py", codes=("OG102",)) == [(5, "OG102")]


def test_the_only_url_the_code_shows_is_pooled(tmp_path):
    write(tmp_path, {"shelf/__init__.py": "", "shelf/settings.py": SETTINGS_POOLED_DEFAULT, "shelf/db.py": DB,
                     "shelf/locks.py": LOCKS})
    assert findings(tmp_path, "shelf/locks.py", codes=("OG102",)) == [(5, "OG102")]


def test_nothing_shows_a_pooler(tmp_path):
    write(tmp_path, {"shelf/__init__.py": "", "shelf/settings.py": SETTINGS, "shelf/db.py": DB,
                     "shelf/locks.py": LOCKS})
    assert findings(tmp_path, "shelf/locks.py", codes=("OG102",)) == []


def test_a_direct_url_beside_the_pooled_one_gives_no_answer(tmp_path):
    """Which URL the lock's connection uses is not followed: a project with both stays silent."""
    compose = COMPOSE_POOLED + """\
      sweeper:
        build: .
        environment:
          SWEEPER_DATABASE_URL: postgresql://shelf:shelf@postgres:5432/shelf
"""
    write(tmp_path, {"shelf/__init__.py": "", "shelf/settings.py": SETTINGS, "shelf/db.py": DB,
                     "shelf/locks.py": LOCKS, "docker-compose.yml": compose})
    assert findings(tmp_path, "shelf/locks.py", codes=("OG102",)) == []


def test_a_pooler_in_session_mode_keeps_a_session(tmp_path):
    write(tmp_path, {"shelf/__init__.py": "", "shelf/settings.py": SETTINGS, "shelf/db.py": DB,
                     "shelf/locks.py": LOCKS,
                     "docker-compose.yml": COMPOSE_POOLED.replace("POOL_MODE: transaction", "POOL_MODE: session")})
    assert findings(tmp_path, "shelf/locks.py", codes=("OG102",)) == []


def test_a_transaction_lock_is_not_reported(tmp_path):
    xact = LOCKS.replace("pg_try_advisory_lock", "pg_try_advisory_xact_lock")
    xact = xact[:xact.index("\n\n\n    def let_go")] + "\n"
    write(tmp_path, {"shelf/__init__.py": "", "shelf/settings.py": SETTINGS, "shelf/db.py": DB,
                     "shelf/locks.py": xact, "docker-compose.yml": COMPOSE_POOLED})
    assert findings(tmp_path, "shelf/locks.py", codes=("OG102",)) == []


def test_a_test_modules_url_does_not_count(tmp_path):
    write(tmp_path, {"shelf/__init__.py": "", "shelf/settings.py": SETTINGS, "shelf/db.py": DB,
                     "shelf/locks.py": LOCKS, "docker-compose.yml": COMPOSE_POOLED,
                     "tests/test_locks.py": 'URL = "postgresql://t:t@localhost:5432/t"\n'})
    assert findings(tmp_path, "shelf/locks.py", codes=("OG102",)) == [(5, "OG102")]


# -- migrations --------------------------------------------------------------------------------------------
ENV_FROM_SETTINGS = """\
    from alembic import context
    from sqlalchemy import engine_from_config, pool

    from shelf import settings

    config = context.config
    config.set_main_option("sqlalchemy.url", settings.DATABASE_URL)


    def run_migrations_online() -> None:
        engine = engine_from_config(config.get_section(config.config_ini_section, {}), prefix="sqlalchemy.",
                                    poolclass=pool.NullPool)
        with engine.connect() as connection:
            context.configure(connection=connection)
            with context.begin_transaction():
                context.run_migrations()


    run_migrations_online()
"""


def test_migrations_with_the_apps_url_when_the_deployment_pools_it(tmp_path):
    write(tmp_path, {"shelf/__init__.py": "", "shelf/settings.py": SETTINGS_POOLED_DEFAULT,
                     "migrations/env.py": ENV_FROM_SETTINGS, "k8s/restock.yaml": K8S_POOLED})
    assert findings(tmp_path, "migrations/env.py", codes=("OG402",)) == [(7, "OG402")]


def test_migrations_with_a_variable_the_deployment_sets_to_the_pooler(tmp_path):
    """The code's default (a direct development URL) is not what runs: the deployment sets the variable."""
    env = ENV_FROM_SETTINGS.replace("from shelf import settings\n", "import os\n").replace(
        "settings.DATABASE_URL", 'os.environ.get("DATABASE_URL", "postgresql://dev:dev@localhost:5432/dev")')
    write(tmp_path, {"migrations/env.py": env, "docker-compose.yml": COMPOSE_POOLED})
    assert findings(tmp_path, "migrations/env.py", codes=("OG402",)) == [(7, "OG402")]


def test_migrations_with_their_own_direct_url_are_not_reported(tmp_path):
    env = ENV_FROM_SETTINGS.replace("from shelf import settings\n", "import os\n").replace(
        "settings.DATABASE_URL", 'os.environ["MIGRATIONS_DATABASE_URL"]')
    compose = COMPOSE_POOLED + """\
      migrate:
        build: .
        command: alembic upgrade head
        environment:
          MIGRATIONS_DATABASE_URL: postgresql://shelf:shelf@postgres:5432/shelf
"""
    write(tmp_path, {"migrations/env.py": env, "docker-compose.yml": compose})
    assert findings(tmp_path, "migrations/env.py", codes=("OG402",)) == []


def test_migrations_with_the_apps_url_and_a_direct_one_shown_are_not_reported(tmp_path):
    write(tmp_path, {"shelf/__init__.py": "", "shelf/settings.py": SETTINGS, "migrations/env.py": ENV_FROM_SETTINGS,
                     "docker-compose.yml": COMPOSE_POOLED.replace("DATABASE_URL: postgresql://shelf:shelf@bouncer:6432",
                                                                  "DATABASE_URL: postgresql://shelf:shelf@postgres:5432")})
    assert findings(tmp_path, "migrations/env.py", codes=("OG402",)) == []


def test_a_url_handed_in_as_a_parameter_is_its_callers_to_say(tmp_path):
    """``def run(url): create_engine(url)``: the callers give the URL (here a variable the project never sets);
    that every URL the project shows is pooled says nothing about it."""
    runner = """\
        import os

        from sqlalchemy import create_engine


        def run(url: str) -> None:
            engine = create_engine(url)
            engine.dispose()


        run(os.environ["MIGRATOR_URL"])
    """
    write(tmp_path, {"migrations/run.py": runner, "docker-compose.yml": COMPOSE_POOLED})
    assert findings(tmp_path, "migrations/run.py", codes=("OG402",)) == []
