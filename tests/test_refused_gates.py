"""OG401/OG403: migrations an application applies at start-up only when a setting says so (``if options.apply_schema:``
around the runner), where every service of the deployment that sets the variable sets it off and the gate
refuses a process that leaves it unset: no replica runs them (a one-off service applies them instead).  The
setting read through a dataclass field's ``default_factory`` and a helper handed the variable's value, or a
class attribute.  A service that turns it on, one that takes variables from a file, or a default that turns it
on leaves the replicas running them."""
from __future__ import annotations

import textwrap

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

from onceguard.project import deployment, index

ENV = """\
    from alembic import context
    from sqlalchemy import engine_from_config, pool

    config = context.config


    def run_migrations_online() -> None:
        engine = engine_from_config(config.get_section(config.config_ini_section), prefix="sqlalchemy.",
                                    poolclass=pool.NullPool)
        with engine.connect() as connection:
            context.configure(connection=connection, target_metadata=None)
            with context.begin_transaction():
                context.run_migrations()


    run_migrations_online()
"""

SCHEMA = """\
    from alembic import command
    from alembic.config import Config


    def migrate_up() -> None:
        command.upgrade(Config("alembic.ini"), "head")
"""

APP = """\
    import asyncio
    from contextlib import asynccontextmanager

    from starlette.applications import Starlette

    from ledger.options import options
    from ledger.schema import migrate_up


    @asynccontextmanager
    async def lifespan(app):
        if options.apply_schema:
            await asyncio.to_thread(migrate_up)
        yield


    app = Starlette(lifespan=lifespan)
"""

DATACLASS_OPTIONS = """\
    import os
    from dataclasses import dataclass, field


    def _on(raw):
        return (raw or "").strip().lower() in ("1", "yes", "true")


    @dataclass(frozen=True)
    class Options:
        apply_schema: bool = field(default_factory=lambda: _on(os.getenv("LEDGER_APPLY_SCHEMA")))


    options = Options()
"""

CLASS_OPTIONS = """\
    import os


    class Options:
        apply_schema = os.environ.get("LEDGER_APPLY_SCHEMA", "{default}") == "1"


    options = Options()
"""

COMPOSE = """\
    services:
      schema:
        build: .
        command: ["alembic", "upgrade", "head"]
      api:
        build: .
    {extra}    environment:
          LEDGER_APPLY_SCHEMA: "{flag}"
        depends_on:
          schema:
            condition: service_completed_successfully
        deploy:
          replicas: 3
"""


def _check(tmp_path, flag="0", options=DATACLASS_OPTIONS, extra=""):
    index.clear_cache()
    deployment.clear_cache()
    write(tmp_path, {"ledger/__init__.py": "", "ledger/schema.py": SCHEMA, "ledger/app.py": APP,
                     "ledger/options.py": options, "alembic/env.py": ENV,
                     "alembic.ini": "[alembic]\nscript_location = alembic\n",
                     "Dockerfile": 'FROM python:3.12-slim\nCMD ["uvicorn", "ledger.app:app", "--host", "0.0.0.0"]\n',
                     "docker-compose.yml": COMPOSE.format(flag=flag, extra=extra)})
    codes = ("OG401", "OG403")
    return findings(tmp_path, "ledger/schema.py", codes=codes) + findings(tmp_path, "alembic/env.py", codes=codes)


def _upgrade_line() -> int:
    return next(i for i, line in enumerate(textwrap.dedent(SCHEMA).splitlines(), 1) if "command.upgrade" in line)


def test_a_start_up_migration_every_service_turns_off(tmp_path):
    assert _check(tmp_path / "off") == []
    assert _check(tmp_path / "on", flag="1") == [(_upgrade_line(), "OG401")]


def test_a_service_that_takes_variables_from_a_file(tmp_path):
    assert _check(tmp_path / "off") == []
    extra = "    env_file: .env.api\n"
    assert _check(tmp_path / "file", extra=extra) == [(_upgrade_line(), "OG401")]


def test_a_class_attribute_whose_unset_default_turns_it_on(tmp_path):
    assert _check(tmp_path / "off", options=CLASS_OPTIONS.format(default="0")) == []
    assert _check(tmp_path / "on", options=CLASS_OPTIONS.format(default="1")) == [(_upgrade_line(), "OG401")]
