"""A thread started at import whose endless loop sleeps, then works: its pass runs on every tick, a job
(OG201 when it does not claim the tick), not start-up code that resets shared rows once as a replica boots
(OG610).  And an UPDATE is a claim only when its WHERE reads a column its SET writes (a transition a second run
finds done): ``SET balance = balance + daily WHERE active`` is work, not a claim.
"""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

ACCRUAL = """\
    from psycopg_pool import ConnectionPool

    pool = ConnectionPool("postgresql://loyalty@db/loyalty")


    def accrue(day):
        with pool.connection() as conn, conn.transaction():
            with conn.cursor() as cur:
                {claim}
                cur.execute("UPDATE members SET balance = balance + 10 WHERE active")
                return cur.rowcount
"""

WORKER = """\
    import threading
    import time

    from .accrual import accrue


    def _tick():
        while True:
            time.sleep(3600)
            accrue(time.strftime("%Y-%m-%d"))


    threading.Thread(target=_tick, daemon=True).start()
"""

def test_a_ticker_started_at_import(tmp_path):
    write(tmp_path, {"loyalty/__init__.py": "from . import worker  # noqa: F401\n",
                     "loyalty/accrual.py": ACCRUAL.replace("{claim}", "pass"), "loyalty/worker.py": WORKER})
    assert findings(tmp_path, "loyalty/worker.py", codes=("OG201",)) == [(7, "OG201")]
    assert findings(tmp_path, "loyalty/accrual.py", codes=("OG610",)) == []


HELPER = """\
    from psycopg_pool import ConnectionPool

    pool = ConnectionPool("postgresql://loyalty@db/loyalty")


    def accrue():
        with pool.connection() as conn, conn.transaction():
            with conn.cursor() as cur:
                cur.execute("{update}")
                return cur.rowcount
"""

JOB = """\
    from apscheduler.schedulers.background import BackgroundScheduler

    from .accrual import accrue

    scheduler = BackgroundScheduler()


    def nightly():
        if not accrue():
            return
        print("accrued")


    scheduler.add_job(nightly, "interval", hours=24)
    scheduler.start()
"""


def test_an_update_that_changes_the_same_rows_every_time_is_no_claim(tmp_path):
    for update, reported in (("UPDATE members SET balance = balance + 10 WHERE active", [(8, "OG201")]),
                             ("UPDATE runs SET done = true WHERE day = current_date AND NOT done", [])):
        write(tmp_path, {"loyalty/__init__.py": "", "loyalty/accrual.py": HELPER.replace("{update}", update),
                         "loyalty/jobs.py": JOB})
        assert findings(tmp_path, "loyalty/jobs.py", codes=("OG201",)) == reported, update
