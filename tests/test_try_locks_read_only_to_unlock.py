"""A try-lock's answer read only to decide whether to unlock (``finally: if locked: unlock(...)``) decides
nothing about the work, which every replica runs: the answer is as good as dropped."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LOCKS = """
    SWEEP_KEY = 7001


    def try_lock(conn, key):
        return conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]


    def unlock(conn, key):
        conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
    """

THROUGH_HELPERS = """
    from . import locks


    def sweep(pool, notify):
        with pool.connection() as conn:
            locked = locks.try_lock(conn, locks.SWEEP_KEY)
            {gate}try:
                for row in conn.execute("SELECT id, phone FROM visits WHERE reminded_at IS NULL").fetchall():
                    notify(row[1])
            finally:
                if locked:
                    locks.unlock(conn, locks.SWEEP_KEY)
    """

DIRECT = """
    def sweep(pool, notify):
        with pool.connection() as conn:
            locked = conn.execute("SELECT pg_try_advisory_lock(7001)").fetchone()[0]
            {gate}try:
                for row in conn.execute("SELECT id, phone FROM visits WHERE reminded_at IS NULL").fetchall():
                    notify(row[1])
            finally:
                if locked:
                    conn.execute("SELECT pg_advisory_unlock(7001)")
    """

GATE = """if not locked:
                return
            """


@pytest.mark.parametrize("gate, expected", [("", [(7, "OG106")]), (GATE, [])])
def test_an_answer_read_only_to_unlock_through_helpers(tmp_path, gate, expected):
    write(tmp_path, {"visits/__init__.py": "", "visits/locks.py": LOCKS,
                     "visits/sweeper.py": THROUGH_HELPERS.format(gate=gate)})
    assert findings(tmp_path, "visits/sweeper.py", codes=("OG106",)) == expected


@pytest.mark.parametrize("gate, expected", [("", [(4, "OG106")]), (GATE, [])])
def test_an_answer_read_only_to_unlock_in_sql(tmp_path, gate, expected):
    write(tmp_path, {"visits/__init__.py": "", "visits/sweeper.py": DIRECT.format(gate=gate)})
    assert findings(tmp_path, "visits/sweeper.py", codes=("OG106",)) == expected
    assert findings(tmp_path, "visits/sweeper.py", codes=("OG106",), cross_file=False) == expected

