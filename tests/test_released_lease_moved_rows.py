"""OG201: a job that takes a Redis lease and gives it back when its work is done stops two runs overlapping, but a
replica whose interval fires after the release runs the same period again -- unless the work marks what it did in
the rows it picks, so that the later run finds nothing left.  The work may be a method of a class of another
module, called on an instance the job makes, or a function imported from there: the rows it moves are read
there."""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

REMINDERS = """\
    import psycopg
    import requests


    class ReminderRun:
        def __init__(self, dsn: str) -> None:
            self.dsn = dsn

        def send_due(self) -> None:
            send_due(self.dsn)


    def send_due(dsn: str) -> None:
        with psycopg.connect(dsn) as conn, conn.cursor() as cur:
            cur.execute("SELECT id, email FROM bills WHERE reminded_at IS NULL AND due_on < now()")
            for bill_id, email in cur.fetchall():
                requests.post("https://mail.example/send", json={"to": email}, timeout=10)
                cur.execute("UPDATE bills SET reminded_at = now() WHERE id = %s", (bill_id,))
                conn.commit()
"""

#: The lines that mark each reminded row (left out: the rows stay as they were).
MARK = """\
                cur.execute("UPDATE bills SET reminded_at = now() WHERE id = %s", (bill_id,))
                conn.commit()
"""

#: ``{imports}`` and ``{work}``: how the job reaches the work written in the other module.
SWEEPER = """\
    import uuid

    import redis
    from apscheduler.schedulers.background import BackgroundScheduler

    {imports}

    store = redis.Redis()
    clock = BackgroundScheduler()


    def nudge_unpaid() -> None:
        me = uuid.uuid4().hex
        if not store.set("billing:nudge", me, nx=True, ex=600):
            return
        try:
            {work}
        finally:
            store.delete("billing:nudge")


    clock.add_job(nudge_unpaid, "interval", minutes=5)
    clock.start()
"""

WAYS = {
    "method of an instance": ("from billing.reminders import ReminderRun",
                              'ReminderRun("postgresql://db/billing").send_due()'),
    "imported function": ("from billing.reminders import send_due", 'send_due("postgresql://db/billing")'),
    "module attribute": ("from billing import reminders", 'reminders.send_due("postgresql://db/billing")'),
}


def _project(tmp_path, way: str, marks: bool) -> None:
    imports, work = WAYS[way]
    write(tmp_path, {
        "billing/__init__.py": "",
        "billing/reminders.py": REMINDERS if marks else REMINDERS.replace(MARK, ""),
        "billing/sweeper.py": SWEEPER.format(imports=imports, work=work),
    })


@pytest.mark.parametrize("way", sorted(WAYS))
def test_work_that_moves_the_rows_it_picks_needs_no_period_claim(tmp_path, way):
    _project(tmp_path, way, marks=True)
    assert findings(tmp_path, "billing/sweeper.py") == []


@pytest.mark.parametrize("way", sorted(WAYS))
def test_work_that_leaves_the_rows_as_they_were_runs_again(tmp_path, way):
    _project(tmp_path, way, marks=False)
    assert findings(tmp_path, "billing/sweeper.py") == [(12, "OG201")]
