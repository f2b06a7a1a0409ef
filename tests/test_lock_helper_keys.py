"""A blocking lock taken by a project helper with the key it is handed (OG103): job-wide when every caller hands
it a fixed key, through callers that only pass their own parameter on too; a per-account key, a caller that
makes its own key, or a migration runner (where pods should wait) keep it silent."""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)


LOCKS = """\
    from sqlalchemy import text


    def wait_for(conn, key):
        conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": key})


    def release(conn, key):
        conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
"""

JOB = """\
    from sqlalchemy import create_engine, text

    from shop import locks

    engine = create_engine("postgresql+psycopg://app@db/app")
    REBUILD = 4242


    def rebuild_search_index():
        with engine.connect() as conn:
            locks.wait_for(conn, {key})
            try:
                conn.execute(text("REFRESH MATERIALIZED VIEW search_index"))
                conn.commit()
            finally:
                locks.release(conn, {key})
"""

PROJECT = {"pyproject.toml": "[project]\nname = 'shop'\n", "shop/__init__.py": "", "shop/locks.py": LOCKS}


def test_a_helper_every_caller_hands_a_fixed_key_is_a_blocking_job_lock(tmp_path):
    write(tmp_path, {**PROJECT, "shop/jobs.py": JOB.format(key="REBUILD")})
    assert findings(tmp_path, "shop/locks.py", codes=("OG103",)) == [(5, "OG103")]


def test_a_key_each_caller_makes_serialises_on_purpose(tmp_path):
    per_shop = JOB.format(key="shop_id").replace("def rebuild_search_index():", "def rebuild_search_index(shop_id):")
    write(tmp_path, {**PROJECT, "shop/jobs.py": per_shop})
    assert findings(tmp_path, "shop/locks.py", codes=("OG103",)) == []


def test_one_caller_with_its_own_key_keeps_the_helper_silent(tmp_path):
    per_shop = JOB.format(key="shop_id").replace("def rebuild_search_index():", "def rebuild_one(shop_id):")
    write(tmp_path, {**PROJECT, "shop/jobs.py": JOB.format(key="REBUILD"), "shop/one.py": per_shop})
    assert findings(tmp_path, "shop/locks.py", codes=("OG103",)) == []


def test_a_helper_nothing_calls_is_not_judged(tmp_path):
    write(tmp_path, PROJECT)
    assert findings(tmp_path, "shop/locks.py", codes=("OG103",)) == []


def test_a_migration_runner_that_waits_is_what_the_lock_is_for(tmp_path):
    runner = """\
        from sqlalchemy import create_engine

        from alembic import command
        from alembic.config import Config
        from shop import locks

        engine = create_engine("postgresql+psycopg://app@db/app")


        def migrate():
            with engine.connect() as conn:
                locks.wait_for(conn, 1)
                try:
                    command.upgrade(Config("alembic.ini"), "head")
                finally:
                    locks.release(conn, 1)
    """
    write(tmp_path, {**PROJECT, "shop/migrate.py": runner})
    assert findings(tmp_path, "shop/locks.py", codes=("OG103",)) == []


def test_a_caller_that_passes_its_own_parameter_on_is_followed_to_its_callers(tmp_path):
    forwarding = JOB.format(key="REBUILD").replace("locks.wait_for(conn, REBUILD)", "hold(conn, REBUILD)") + (
        "\n\n    def hold(conn, key):\n        locks.wait_for(conn, key)\n")
    write(tmp_path, {**PROJECT, "shop/jobs.py": forwarding})
    assert findings(tmp_path, "shop/locks.py", codes=("OG103",)) == [(5, "OG103")]
