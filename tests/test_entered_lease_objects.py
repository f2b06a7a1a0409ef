"""OG201: a claim taken by a project class entered with ``with`` whose ``__enter__`` stores the answer on the
instance and returns it (``with Lease(pool, "rollup") as lease: if lease.acquired: ...``), also when the test
reads the answer next to another condition (``if lease.acquired and lease.conn is not None``)."""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LEASES = """\
    import zlib

    from psycopg_pool import ConnectionPool


    class Turn:
        def __init__(self, pool: ConnectionPool, name: str) -> None:
            self.pool = pool
            self.key = zlib.crc32(name.encode())
            self.won = False
            self.conn = None
            self._checkout = None

        def __enter__(self) -> "Turn":
            self._checkout = self.pool.connection()
            self.conn = self._checkout.__enter__()
            row = self.conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (self.key,)).fetchone()
            self.won = bool(row and row[0])
            return self

        def __exit__(self, *exc) -> None:
            self._checkout.__exit__(*exc)
"""

# The same class, but what it stores is no claim's answer: a count of open connections.
COUNTS = LEASES.replace(
    '            row = self.conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (self.key,)).fetchone()\n'
    '            self.won = bool(row and row[0])\n',
    '            row = self.conn.execute("SELECT count(*) FROM pg_stat_activity").fetchone()\n'
    '            self.won = bool(row and row[0])\n')

PAYOUTS = """\
    import httpx


    def pay_out(batch: str) -> None:
        httpx.post("https://bank.example/payouts", json={"batch": batch})
"""

PROGRAM = """\
    import time

    from psycopg_pool import ConnectionPool

    from tally import payouts
    from tally.leases import Turn


    def main() -> None:
        pool = ConnectionPool("postgresql://db/tally")
        while True:
            with Turn(pool, "payouts") as turn:
                if {test}:
                    payouts.pay_out("daily")
            time.sleep(600)


    if __name__ == "__main__":
        main()
"""


def _check(tmp_path, leases=LEASES, test="turn.won"):
    write(tmp_path, {"tally/__init__.py": "", "tally/leases.py": leases,
                     "tally/worker.py": PROGRAM.format(test=test),
                     "tally/payouts.py": PAYOUTS, "Dockerfile": 'FROM python:3.12\nCMD ["python", "-m", "tally.worker"]\n'})
    return findings(tmp_path, "tally/worker.py")


@pytest.mark.parametrize("test", ["turn.won", "turn.won and turn.conn is not None", "turn.conn is not None and turn.won"])
def test_work_only_the_winner_of_the_entered_lease_reaches_is_claimed(tmp_path, test):
    assert _check(tmp_path, test=test) == []


def test_a_test_of_another_attribute_of_the_lease_guards_nothing(tmp_path):
    assert [code for _, code in _check(tmp_path, test="turn.conn is not None")] == ["OG201"]


def test_an_object_that_stores_something_other_than_a_claim_guards_nothing(tmp_path):
    assert [code for _, code in _check(tmp_path, leases=COUNTS)] == ["OG201"]
