"""A lock object whose ``__enter__`` raises unless its try-lock won guards the block it is entered for, also
when the failed branch first gives back the connection it asked on (``conn.close()``, ``pool.putconn(conn)``,
``conn.rollback()``) or the success path keeps the connection for ``__exit__``: handing a handle back is no
work another replica repeats.  A failed branch that does work before it raises is no such guard."""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MUTEX = """\
    from sqlalchemy import create_engine, text

    engine = create_engine("postgresql+psycopg://app@db/app")


    class Busy(RuntimeError):
        pass


    def notify_busy(name):
        import requests
        requests.post("https://alerts.example/busy", json={"name": name})


    class HeldLock:
        def __init__(self, key: int) -> None:
            self.key = key
            self.conn = None

        def __enter__(self):
            conn = engine.connect()
            got = conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": self.key}).scalar()
            conn.commit()
            if not got:
                {lost}
                raise Busy(self.key)
            self.conn = conn
            return self

        def __exit__(self, *exc):
            try:
                self.conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": self.key})
                self.conn.commit()
            finally:
                self.conn.close()
"""

JOB = """\
    import schedule

    from payouts.locking import Busy, HeldLock


    def pay_sellers():
        try:
            with HeldLock(991):
                send_transfers()
        except Busy:
            return


    def send_transfers():
        import requests
        requests.post("https://bank.example/transfers", json={})


    schedule.every().day.at("02:00").do(pay_sellers)
"""


@pytest.mark.parametrize("lost, expected", [
    ("conn.close()", []),
    ("conn.rollback()\n                conn.close()", []),
    ("notify_busy(self.key)", [(6, "OG201")]),
])
def test_a_connection_given_back_before_raising_keeps_the_guard(tmp_path, lost, expected):
    write(tmp_path, {"payouts/__init__.py": "", "payouts/locking.py": MUTEX.replace("{lost}", lost),
                     "payouts/jobs.py": JOB})
    assert findings(tmp_path, "payouts/jobs.py") == expected
