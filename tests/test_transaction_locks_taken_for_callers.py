"""OG103: a helper that takes a blocking transaction-level lock as the last thing it does, on the connection its
caller hands in, holds the lock for the rest of the caller's transaction: to the caller the call is the lock.  Keyed
on what it is handed, each caller chooses the key, and a caller handing a fixed one (a literal, a constant, a def's
own ``__name__``) takes a job-wide lock: reported at that call.  A key of the caller's row, a helper that fixes the
key itself (one critical section), and a wrapper that passes the lock on to its own caller are left alone.
"""
from __future__ import annotations

import textwrap

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

PG = """\
    import zlib

    import psycopg


    def advisory_key(label: str) -> int:
        return zlib.crc32(label.encode("ascii")) & 0x7FFFFFFF


    def hold_for_transaction(conn: psycopg.Connection, label: str) -> None:
        \"\"\"Every later statement of the caller's transaction runs with no other holder of ``label``.\"\"\"
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (advisory_key(label),))
"""

BOOKS = """\
    import psycopg

    from ledgerd.pg import hold_for_transaction

    CLOSE_BOOKS = "close-books"


    def close_books(dsn: str, account_id: int = 0) -> None:
        with psycopg.connect(dsn) as conn, conn.transaction():
            hold_for_transaction(conn, {key})
            conn.execute("INSERT INTO closings (day) VALUES (current_date)")
"""


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(text).splitlines(), 1) if needle in line)


def _check(tmp_path, books: str, pg: str = PG):
    write(tmp_path, {"ledgerd/__init__.py": "", "ledgerd/pg.py": pg, "ledgerd/books.py": books})
    return findings(tmp_path, "ledgerd/books.py", codes=("OG103",))


@pytest.mark.parametrize("key", ['"close-books"', "CLOSE_BOOKS", "close_books.__name__"],
                         ids=["literal", "constant", "own-name"])
def test_a_caller_handing_the_helper_a_fixed_key_takes_a_job_wide_lock(tmp_path, key):
    books = BOOKS.format(key=key)
    assert _check(tmp_path, books) == [(_line(books, "hold_for_transaction(conn,"), "OG103")]
    assert findings(tmp_path, "ledgerd/pg.py", codes=("OG103",)) == []  # the helper is every caller's


@pytest.mark.parametrize("key", ['f"account:{account_id}"', "str(account_id)"], ids=["f-string", "str"])
def test_a_key_of_the_callers_row_is_left_alone(tmp_path, key):
    assert _check(tmp_path, BOOKS.format(key=key)) == []


def test_a_helper_that_fixes_its_key_itself_is_one_critical_section(tmp_path):
    pg = PG.replace("def hold_for_transaction(conn: psycopg.Connection, label: str) -> None:",
                    "def hold_for_transaction(conn: psycopg.Connection, label: str = \"\") -> None:").replace(
        "(advisory_key(label),)", '(advisory_key("ledger"),)')
    assert _check(tmp_path, BOOKS.format(key='"close-books"'), pg) == []


def test_a_wrapper_passing_the_lock_on_to_its_own_caller_is_left_alone(tmp_path):
    wrapper = """\
        import psycopg

        from ledgerd.pg import hold_for_transaction


        def serialize_postings(conn: psycopg.Connection) -> None:
            hold_for_transaction(conn, "postings")


        def post(conn: psycopg.Connection, cents: int) -> None:
            serialize_postings(conn)
            conn.execute("INSERT INTO postings (cents) VALUES (%s)", (cents,))
    """
    assert _check(tmp_path, wrapper) == []


def test_a_helper_that_tries_instead_of_waiting_is_left_alone(tmp_path):
    pg = PG.replace("pg_advisory_xact_lock", "pg_try_advisory_xact_lock")
    assert _check(tmp_path, BOOKS.format(key='"close-books"'), pg) == []


# -- variants: the helper reached through its module, and a helper of the same module ------------------------------
def test_a_helper_reached_through_its_module(tmp_path):
    books = BOOKS.format(key="CLOSE_BOOKS").replace("from ledgerd.pg import hold_for_transaction",
                                                    "from ledgerd import pg").replace(
        "hold_for_transaction(conn, CLOSE_BOOKS)", "pg.hold_for_transaction(conn, CLOSE_BOOKS)")
    assert _check(tmp_path, books) == [(_line(books, "pg.hold_for_transaction("), "OG103")]


def test_a_helper_of_the_same_module(tmp_path):
    same = textwrap.dedent(PG) + textwrap.dedent(BOOKS.format(key='"close-books"')).split(
        "from ledgerd.pg import hold_for_transaction\n", 1)[1]
    write(tmp_path, {"ledgerd/__init__.py": "", "ledgerd/books.py": same})
    assert findings(tmp_path, "ledgerd/books.py", codes=("OG103",)) == [
        (_line(same, "hold_for_transaction(conn, \"close-books\")"), "OG103")]
