"""OG105 with the unlock in a project helper of another module: ``pglocks.release(conn, KEY)`` in ``finally:``
releases the lock, as the unlock written in place would; called outside ``finally:`` it is the unlock an
exception skips."""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)


HELPERS = """\
    from sqlalchemy import text


    def release(conn, key):
        conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
"""
JOB = """\
    from sqlalchemy import create_engine, text

    {imported}

    engine = create_engine("postgresql://db/app")
    KEY = 4242


    def rebuild_totals():
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {{"k": KEY}})
            {body}
"""
IN_FINALLY = """try:
                conn.execute(text("REFRESH MATERIALIZED VIEW totals"))
            finally:
                {call}(conn, KEY)"""
AFTER = """conn.execute(text("REFRESH MATERIALIZED VIEW totals"))
            {call}(conn, KEY)"""


@pytest.mark.parametrize("imported, call", [
    ("from app import pglocks", "pglocks.release"),
    ("from app.pglocks import release", "release"),
    ("from app import pglocks as locks", "locks.release"),
])
def test_a_release_helper_in_finally(tmp_path, imported, call):
    write(tmp_path, {"app/__init__.py": "", "app/pglocks.py": HELPERS,
                     "app/jobs.py": JOB.format(imported=imported, body=IN_FINALLY.format(call=call))})
    assert findings(tmp_path, "app/jobs.py", codes=("OG105",)) == []


def test_a_release_helper_outside_finally(tmp_path):
    write(tmp_path, {"app/__init__.py": "", "app/pglocks.py": HELPERS,
                     "app/jobs.py": JOB.format(imported="from app import pglocks",
                                               body=AFTER.format(call="pglocks.release"))})
    assert findings(tmp_path, "app/jobs.py", codes=("OG105",)) == [(13, "OG105")]


def test_no_release_at_all(tmp_path):
    write(tmp_path, {"app/__init__.py": "", "app/pglocks.py": HELPERS,
                     "app/jobs.py": JOB.format(imported="from app import pglocks",
                                               body='conn.execute(text("REFRESH MATERIALIZED VIEW totals"))')})
    assert findings(tmp_path, "app/jobs.py", codes=("OG105",)) == [(11, "OG105")]
