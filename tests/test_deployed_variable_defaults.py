"""A migration URL read as ``os.environ.get("MIGRATE_URL", DATABASE_URL)``: the app's pooled URL is only the
fallback, and where the deployment sets the migration variable itself (to PostgreSQL's own port) the fallback never
runs, so the migrations do not go through the pooler.  Unset, the fallback is the URL they connect with."""
from __future__ import annotations

import textwrap

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

CONFIG = textwrap.dedent("""
    import os

    APP_DSN = os.environ.get("APP_DSN", "postgresql://inv:inv@localhost:5432/inv")
    SCHEMA_DSN = os.environ.get("SCHEMA_DSN", APP_DSN)
    """)

ENV = textwrap.dedent("""
    from alembic import context
    from sqlalchemy import create_engine

    {import_line}


    def run_migrations_online() -> None:
        engine = create_engine({dsn})
        with engine.connect() as connection:
            context.configure(connection=connection, target_metadata=None)
            with context.begin_transaction():
                context.run_migrations()


    run_migrations_online()
    """)

COMPOSE = textwrap.dedent("""
    services:
      bouncer:
        image: edoburu/pgbouncer:1.22.1
        environment:
          POOL_MODE: transaction
      inventory:
        build: .
        environment:
          APP_DSN: postgresql://inv:inv@bouncer:6432/inv
    {extra}
    """)

DIRECT = "      SCHEMA_DSN: postgresql://inv:inv@db:5432/inv"


@pytest.mark.parametrize("import_line, dsn", [("from inventory import config", "config.SCHEMA_DSN"),
                                              ("from inventory.config import SCHEMA_DSN", "SCHEMA_DSN")])
def test_a_fallback_the_deployment_overrides_is_not_the_url(tmp_path, import_line, dsn):
    write(tmp_path, {"inventory/__init__.py": "", "inventory/config.py": CONFIG,
                     "migrations/env.py": ENV.replace("{import_line}", import_line).replace("{dsn}", dsn),
                     "docker-compose.yml": COMPOSE.replace("{extra}", DIRECT)})
    assert findings(tmp_path, "migrations/env.py", codes=("OG402",)) == []


def test_a_fallback_to_the_pooled_url_is_reported_when_the_variable_is_unset(tmp_path):
    write(tmp_path, {"inventory/__init__.py": "", "inventory/config.py": CONFIG,
                     "migrations/env.py": ENV.replace("{import_line}", "from inventory import config")
                     .replace("{dsn}", "config.SCHEMA_DSN"),
                     "docker-compose.yml": COMPOSE.replace("{extra}", "")})
    assert [code for _, code in findings(tmp_path, "migrations/env.py", codes=("OG402",))] == ["OG402"]
