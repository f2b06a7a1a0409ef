"""A ``with conn.cursor() as cur`` block closes a cursor, not a checkout: a session lock taken in one cursor
block and released in a later one on the same connection stays on one server session (OG101 silent), while a
lock and an unlock on two checkouts of a pool is still reported, cursors or not."""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

DJANGO_TWO_CURSORS = """\
    from contextlib import contextmanager

    from django.db import connection

    KEY = 4410


    @contextmanager
    def ledger_lock():
        with connection.cursor() as cur:
            cur.execute("SELECT pg_try_advisory_lock(%s)", [KEY])
            held = bool(cur.fetchone()[0])
        if not held:
            yield False
            return
        try:
            yield True
        finally:
            with connection.cursor() as cur:
                cur.execute("SELECT pg_advisory_unlock(%s)", [KEY])
"""

PSYCOPG_ONE_CHECKOUT = """\
    from psycopg_pool import ConnectionPool

    pool = ConnectionPool("postgresql://ledger@db/ledger")
    KEY = 4410


    def close_books() -> None:
        with pool.connection() as conn:
            with conn.cursor() as cur:
                cur.execute("SELECT pg_try_advisory_lock(%s)", (KEY,))
                if not cur.fetchone()[0]:
                    return
            try:
                conn.execute("UPDATE books SET closed = true WHERE closed = false")
            finally:
                with conn.cursor() as cur:
                    cur.execute("SELECT pg_advisory_unlock(%s)", (KEY,))
"""

PSYCOPG_TWO_CHECKOUTS = """\
    from psycopg_pool import ConnectionPool

    pool = ConnectionPool("postgresql://ledger@db/ledger")
    KEY = 4410


    def close_books() -> None:
        with pool.connection() as conn:
            with conn.cursor() as cur:
                cur.execute("SELECT pg_try_advisory_lock(%s)", (KEY,))
                if not cur.fetchone()[0]:
                    return
        try:
            with pool.connection() as conn:
                conn.execute("UPDATE books SET closed = true WHERE closed = false")
        finally:
            with pool.connection() as conn:
                with conn.cursor() as cur:
                    cur.execute("SELECT pg_advisory_unlock(%s)", (KEY,))
"""


def test_two_cursor_blocks_on_djangos_connection_are_one_session(tmp_path):
    write(tmp_path, {"books/locks.py": DJANGO_TWO_CURSORS})
    assert findings(tmp_path, "books/locks.py", codes=("OG101",)) == []


def test_two_cursor_blocks_inside_one_checkout_are_one_session(tmp_path):
    write(tmp_path, {"books/close.py": PSYCOPG_ONE_CHECKOUT})
    assert findings(tmp_path, "books/close.py", codes=("OG101",)) == []


def test_two_checkouts_with_cursors_inside_are_still_two_sessions(tmp_path):
    write(tmp_path, {"books/close.py": PSYCOPG_TWO_CHECKOUTS})
    assert [code for _, code in findings(tmp_path, "books/close.py", codes=("OG101",))] == ["OG101"]


ATTRIBUTE_CONNECTION = """\
    import psycopg2

    KEY = 7301


    class ShipmentExport:
        def __init__(self, dsn: str) -> None:
            self.db = psycopg2.connect(dsn)
            self.db.autocommit = True

        def run(self) -> None:
            with self.db.cursor() as cur:
                cur.execute("SELECT pg_try_advisory_lock(%s)", (KEY,))
                (held,) = cur.fetchone()
            if not held:
                return
            {body}

        def _send(self) -> None:
            pass
"""

UNLOCK_IN_FINALLY = """try:
                self._send()
            finally:
                with self.db.cursor() as cur:
                    cur.execute("SELECT pg_advisory_unlock(%s)", (KEY,))"""

UNLOCK_AFTER_WORK = """self._send()
            with self.db.cursor() as cur:
                cur.execute("SELECT pg_advisory_unlock(%s)", (KEY,))"""


def test_cursor_blocks_of_a_connection_kept_on_the_instance_are_one_session(tmp_path):
    """``with self.db.cursor() as cur`` closes a cursor of the connection ``self.db`` holds: the lock and the
    unlock in two such blocks run on one server session."""
    write(tmp_path, {"export/__init__.py": "",
                     "export/job.py": ATTRIBUTE_CONNECTION.replace("{body}", UNLOCK_IN_FINALLY)})
    assert findings(tmp_path, "export/job.py", codes=("OG101", "OG105")) == []


def test_an_unlock_after_the_work_on_the_instance_connection_is_only_outside_finally(tmp_path):
    write(tmp_path, {"export/__init__.py": "",
                     "export/job.py": ATTRIBUTE_CONNECTION.replace("{body}", UNLOCK_AFTER_WORK)})
    assert findings(tmp_path, "export/job.py", codes=("OG101", "OG105")) == [(19, "OG105")]
