"""A ticker thread a gunicorn hook starts, and the lock helper its pass enters.

``gunicorn.conf.py``'s ``post_worker_init`` hook starts a thread on ``ticker._loop`` (``while not
stop.wait(600): publish_sheets()``), in every worker of every replica: OG201 at the start.  The pass enters
``yard_lock(KEY)``, a context manager around a blocking ``pg_advisory_lock``: every replica waits for the first
and then runs the same pass again (OG103 at the lock, the job entering it through what its pass calls).
"""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

GUNICORN = """\
    import threading

    from yard import ticker

    workers = 2


    def post_worker_init(worker):
        threading.Thread(target=ticker._loop, daemon=True).start()
"""

TICKER = """\
    import threading

    from yard.sheets import publish_sheets

    _stop = threading.Event()


    def _loop() -> None:
        while not _stop.wait(600):
            publish_sheets()


    def start() -> threading.Thread:
        thread = threading.Thread(target=_loop, daemon=True)
        thread.start()
        return thread
"""

SHEETS = """\
    import httpx

    from yard.locks import yard_lock


    def publish_sheets() -> None:
        with yard_lock(7001):
            httpx.post("https://haulier.example.org/sheets", json={})
"""

LOCKS = """\
    from contextlib import contextmanager

    import psycopg


    @contextmanager
    def yard_lock(key: int):
        with psycopg.connect("postgresql://db/yard", autocommit=True) as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (key,))
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
"""


def _project(tmp_path, gunicorn: str = GUNICORN) -> None:
    write(tmp_path, {"yard/__init__.py": "", "yard/ticker.py": TICKER, "yard/sheets.py": SHEETS,
                     "yard/locks.py": LOCKS, "gunicorn.conf.py": gunicorn})


def test_a_ticker_a_gunicorn_hook_starts_runs_in_every_worker_and_its_pass_waits_on_the_lock(tmp_path):
    _project(tmp_path)
    assert findings(tmp_path, "gunicorn.conf.py") == [(9, "OG201")]
    assert findings(tmp_path, "yard/locks.py", codes=("OG103",)) == [(9, "OG103")]


def test_a_ticker_nothing_starts_is_left_alone(tmp_path):
    _project(tmp_path, gunicorn="workers = 2\n")
    assert findings(tmp_path, "yard/ticker.py") == []
    assert findings(tmp_path, "yard/locks.py", codes=("OG103",)) == []


def test_a_ticker_that_pumps_a_scheduler_is_judged_by_the_jobs_it_runs(tmp_path):
    pump = """\
    import threading

    import schedule

    from yard.sheets import publish_sheets

    _stop = threading.Event()


    def _loop() -> None:
        while not _stop.wait(20):
            schedule.run_pending()


    def start() -> threading.Thread:
        schedule.every().day.at("06:00").do(publish_sheets)
        thread = threading.Thread(target=_loop, daemon=True)
        thread.start()
        return thread
"""
    write(tmp_path, {"yard/__init__.py": "", "yard/ticker.py": pump, "yard/sheets.py": SHEETS,
                     "yard/locks.py": LOCKS, "gunicorn.conf.py": GUNICORN})
    assert findings(tmp_path, "yard/ticker.py") == [(16, "OG201")]  # the job, at its registration
