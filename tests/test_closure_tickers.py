"""OG201: a ticker that repeats what its starter was handed, and a claim answered by the rows an insert returns.

``def run_daily(name, at, fn): def _loop(): while True: sleep(...); fn(day)`` then ``Thread(target=_loop)``:
the loop is the project's own clock; what it runs is each function ``run_daily``'s callers hand it, judged
where it is defined.  A job that begins with ``if not _claim(day): return`` where ``_claim`` runs ``INSERT ...
ON CONFLICT DO NOTHING RETURNING`` and answers whether a row came back has claimed its day.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

CLOCK = """\
    import threading
    import time
    from datetime import date


    def run_daily(name, fn):
        def _loop():
            while True:
                time.sleep(24 * 3600)
                fn(date.today())

        thread = threading.Thread(target=_loop, name=name, daemon=True)
        thread.start()
        return thread
"""

CLAIMED = """\
    from .db import cursor
    from .mail import send_summary

    _TAKE_DAY = "INSERT INTO summary_days (day) VALUES (%s) ON CONFLICT (day) DO NOTHING RETURNING day"


    def _take(day):
        with cursor() as cur:
            cur.execute(_TAKE_DAY, (day,))
            return cur.fetchone() is not None


    def mail_summaries(day):
        if not _take(day):
            return 0
        send_summary(day)
        return 1
"""

UNCLAIMED = """\
    from .mail import send_summary


    def mail_summaries(day):
        send_summary(day)
        return 1
"""

HOOKS = """\
    from shop.clock import run_daily
    from shop.summaries import mail_summaries


    def post_fork(server, worker):
        run_daily("summaries", mail_summaries)
"""


def _project(tmp_path, job: str) -> None:
    write(tmp_path, {
        "shop/__init__.py": "",
        "shop/clock.py": CLOCK,
        "shop/summaries.py": job,
        "shop/mail.py": "import smtplib\n\n\ndef send_summary(day):\n    smtplib.SMTP('mail').sendmail('a', ['b'], str(day))\n",
        "shop/db.py": "import contextlib\n\nimport psycopg2\n\n\n@contextlib.contextmanager\ndef cursor():\n"
                      "    with psycopg2.connect('') as conn:\n        with conn.cursor() as cur:\n            yield cur\n",
        "gunicorn.conf.py": HOOKS,
    })


@pytest.mark.parametrize("job, reported", [(UNCLAIMED, [(12, "OG201")]), (CLAIMED, [])])
def test_the_work_a_closure_ticker_repeats_is_what_its_starter_is_handed(tmp_path, job, reported):
    _project(tmp_path, job)
    assert findings(tmp_path, "shop/clock.py") == reported
    assert findings(tmp_path, "shop/summaries.py") == []
