"""OG302: rows picked without a claim by a queued task that only a once-per-tick job puts on the queue (an hourly
job of a clock process scaled to one dyno, ``enqueue("ledger.tasks.settle_open", job_timeout=600)``): one run at a
time does the work.  A run allowed to outlast the period, or another place that runs the task, overlaps it."""
from __future__ import annotations

import json
import textwrap

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

from onceguard.project import deployment, index

TASKS = """\
    import psycopg2
    import requests

    OPEN = "SELECT id, amount FROM invoices WHERE state = 'open'"


    def settle_open() -> None:
        with psycopg2.connect("") as conn:
            with conn.cursor() as cur:
                cur.execute(OPEN)
                rows = cur.fetchall()
            for invoice_id, amount in rows:
                requests.post("https://bank.example/settle", json={"id": invoice_id, "amount": amount}, timeout=10)
                with conn.cursor() as cur:
                    cur.execute("UPDATE invoices SET state = 'settled' WHERE id = %s", (invoice_id,))
                conn.commit()
"""

CLOCK = """\
    import time

    import schedule
    from redis import Redis
    from rq import Queue
    {imported}

    def queue_settlement() -> None:
        Queue("ledger", connection=Redis()).enqueue({task}, job_timeout={limit})


    def run() -> None:
        schedule.every().hour.do(queue_settlement)
        while True:
            schedule.run_pending()
            time.sleep(1)


    if __name__ == "__main__":
        run()
"""

PROCFILE = "worker: rq worker ledger\nclock: python -m ledger.clock\n"
MANIFEST = json.dumps({"name": "ledger", "formation": {"worker": {"quantity": 3}, "clock": {"quantity": 1}}})


def _check(tmp_path, limit=600, by_reference=False, extra=None):
    index.clear_cache()
    deployment.clear_cache()
    clock = CLOCK.format(imported="from ledger.tasks import settle_open\n" if by_reference else "",
                         task="settle_open" if by_reference else '"ledger.tasks.settle_open"', limit=limit)
    files = {"ledger/__init__.py": "", "ledger/tasks.py": TASKS, "ledger/clock.py": clock,
             "Procfile": PROCFILE, "app.json": MANIFEST}
    files.update(extra or {})
    write(tmp_path, files)
    return findings(tmp_path, "ledger/tasks.py", codes=("OG302",))


def _select_line() -> int:
    return next(i for i, line in enumerate(textwrap.dedent(TASKS).splitlines(), 1) if "cur.execute(OPEN)" in line)


def test_a_task_only_an_hourly_clock_job_enqueues(tmp_path):
    assert _check(tmp_path / "named") == []
    assert _check(tmp_path / "long", limit=7200) == [(_select_line(), "OG302")]


def test_enqueued_by_reference_and_also_run_by_a_request(tmp_path):
    assert _check(tmp_path / "reference", by_reference=True) == []
    view = "from flask import Flask\n\nfrom ledger.tasks import settle_open\n\napp = Flask(__name__)\n\n\n" \
           "@app.post('/settle')\ndef settle():\n    settle_open()\n    return 'ok'\n"
    assert _check(tmp_path / "requested", extra={"ledger/web.py": view}) == [(_select_line(), "OG302")]
