"""A migration run serialised by a table lock: ``LOCK TABLE alembic_version IN ACCESS EXCLUSIVE MODE`` inside
the migration transaction makes the next runner wait until the first commits, then find head applied, as a
transaction-level advisory lock would.  A mode two holders can share, or ``NOWAIT``, serialises nothing.
"""
from __future__ import annotations

import pytest
from test_schema_rules import env_findings


@pytest.mark.parametrize("statement, locked", [
    ("LOCK TABLE alembic_version IN ACCESS EXCLUSIVE MODE", True),
    ("LOCK TABLE alembic_version", True),
    ("LOCK TABLE alembic_version IN SHARE MODE", False),
    ("LOCK TABLE alembic_version IN ACCESS EXCLUSIVE MODE NOWAIT", False),
])
def test_a_table_lock_in_the_migration_transaction(tmp_path, statement, locked):
    body = f"""
        def run_migrations_online():
            engine = engine_from_config(config.get_section(config.config_ini_section, {{}}), poolclass=pool.NullPool)
            with engine.connect() as connection:
                context.configure(connection=connection)
                with context.begin_transaction():
                    connection.execute(text("{statement}"))
                    context.run_migrations()
    """
    found = env_findings(tmp_path, body)
    assert (found == []) == locked, found
