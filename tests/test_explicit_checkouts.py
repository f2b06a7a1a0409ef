"""OG101: a session lock taken on a connection checked out by hand and given back before the work.

``conn = pool.getconn()`` … ``finally: pool.putconn(conn)`` is a checkout as much as ``with pool.connection() as
conn:`` is: a try-lock whose answer is returned after the ``finally`` gives the connection back still holding the
lock (or, on the next checkout, to another thread), and the caller's later unlock runs on another connection.  The
answer may reach the caller through the row a later fetch on the same cursor returns.
"""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

DB = """\
    from psycopg2.pool import ThreadedConnectionPool

    pool = ThreadedConnectionPool(1, 8, dsn="postgresql://app@db/app")
"""

HELPER = """\
    from exports.db import pool


    def try_lock(key: int) -> bool:
        conn = pool.getconn()
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT pg_try_advisory_lock(%s)", (key,))
                (acquired,) = cur.fetchone()
            conn.commit()
            {work}
        finally:
            pool.putconn(conn)
        return acquired
"""


SAME_CHECKOUT = """\
    from exports.db import pool
    from exports.work import run_export


    def export_once(key: int) -> None:
        conn = pool.getconn()
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT pg_try_advisory_lock(%s)", (key,))
                (acquired,) = cur.fetchone()
                if acquired:
                    try:
                        run_export(conn)
                    finally:
                        cur.execute("SELECT pg_advisory_unlock(%s)", (key,))
        finally:
            pool.putconn(conn)
"""


def test_a_try_lock_answered_after_the_connection_is_given_back(tmp_path):
    write(tmp_path, {"exports/__init__.py": "", "exports/db.py": DB,
                     "exports/locks.py": HELPER.replace("{work}", "pass")})
    assert findings(tmp_path, "exports/locks.py", codes=("OG101",)) == [(8, "OG101")]


def test_lock_work_and_unlock_on_one_checkout(tmp_path):
    write(tmp_path, {"exports/__init__.py": "", "exports/db.py": DB, "exports/locks.py": SAME_CHECKOUT})
    assert findings(tmp_path, "exports/locks.py", codes=("OG101", "OG105")) == []


WITH_BLOCK = """\
    from psycopg_pool import ConnectionPool

    pool = ConnectionPool("postgresql://app@db/app")


    def try_lock(key: int) -> bool:
        with pool.connection() as conn:
            with conn.cursor() as cur:
                cur.execute("SELECT pg_try_advisory_lock(%s)", (key,))
                (acquired,) = cur.fetchone()
        return acquired
"""


def test_the_answer_fetched_off_the_cursor_leaves_the_block(tmp_path):
    write(tmp_path, {"exports/__init__.py": "", "exports/locks.py": WITH_BLOCK})
    assert findings(tmp_path, "exports/locks.py", codes=("OG101",)) == [(9, "OG101")]
