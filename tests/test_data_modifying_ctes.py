"""A SELECT over a data-modifying WITH is the write it runs: ``WITH moved AS (UPDATE ... RETURNING ...) SELECT ...
FROM moved`` updates the rows and reads them back.  Read as a SELECT it was no effect and no claim; read as the
UPDATE it is, it claims the rows it moves (a job that takes its work so is claimed) and acts outside the process.
"""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

from onceguard.analysis.sql import analyse

CLAIMING = ("WITH taken AS (UPDATE reminders SET sent_at = now() WHERE due_on = %s AND sent_at IS NULL "
            "RETURNING id, patient_id) SELECT taken.id, p.email FROM taken JOIN patients p ON p.id = taken.patient_id")

READING = ("WITH due AS (SELECT id, patient_id FROM reminders WHERE due_on = %s AND sent_at IS NULL) "
           "SELECT due.id, p.email FROM due JOIN patients p ON p.id = due.patient_id")


def test_a_select_over_an_update_runs_that_update_and_returns_its_rows():
    facts = analyse(CLAIMING)
    assert facts.statement_types == ("SelectStmt",) and facts.cte_writes == ("UpdateStmt",) and facts.returning


def test_a_select_over_a_read_only_with_writes_nothing():
    facts = analyse(READING)
    assert facts.statement_types == ("SelectStmt",) and facts.cte_writes == () and not facts.returning


STORE = '''\
    from datetime import date

    from psycopg_pool import ConnectionPool


    class ReminderStore:
        def __init__(self, pool: ConnectionPool) -> None:
            self._pool = pool

        def due_today(self, day: date) -> list:
            with self._pool.connection() as conn:
                return conn.execute("{sql}", (day,)).fetchall()
'''

JOBS = """\
    from datetime import date

    from apscheduler.schedulers.background import BackgroundScheduler

    from clinic.mail import send_reminder
    from clinic.store import ReminderStore


    class ReminderJobs:
        def __init__(self, store: ReminderStore) -> None:
            self._store = store
            self._scheduler = BackgroundScheduler()

        def start(self) -> None:
            self._scheduler.add_job(self.send_due, "cron", hour=8)
            self._scheduler.start()

        def send_due(self) -> None:
            for reminder_id, email in self._store.due_today(date.today()):
                send_reminder(email, reminder_id)
"""

MAIL = """\
    import smtplib


    def send_reminder(email: str, reminder_id: int) -> None:
        with smtplib.SMTP("mail") as smtp:
            smtp.sendmail("clinic@example.com", [email], f"reminder {reminder_id}")
"""


def _project(tmp_path, sql: str) -> None:
    write(tmp_path, {"clinic/__init__.py": "", "clinic/store.py": STORE.replace("{sql}", sql),
                     "clinic/jobs.py": JOBS, "clinic/mail.py": MAIL})


def test_a_job_that_takes_its_rows_with_an_update_inside_a_with_is_claimed(tmp_path):
    _project(tmp_path, CLAIMING)
    assert findings(tmp_path, "clinic/jobs.py") == []


def test_the_same_job_reading_its_rows_with_a_plain_select_is_not(tmp_path):
    _project(tmp_path, READING)
    assert findings(tmp_path, "clinic/jobs.py") == [(18, "OG201")]


RELEASING_STORE = '''\
    from datetime import date

    from psycopg_pool import ConnectionPool


    class ReminderStore:
        def __init__(self, pool: ConnectionPool) -> None:
            self._pool = pool

        def take_due(self, day: date) -> list:
            with self._pool.connection() as conn:
                rows = conn.execute("{sql}", (day,)).fetchall()
            return [tuple(row) for row in rows]

        def put_back(self, reminder_id: int) -> None:
            with self._pool.connection() as conn:
                conn.execute("UPDATE reminders SET sent_at = NULL WHERE id = %s", (reminder_id,))
'''

RELEASING_JOBS = """\
    from datetime import date

    from apscheduler.schedulers.background import BackgroundScheduler

    from clinic.mail import send_reminder
    from clinic.store import ReminderStore


    class ReminderJobs:
        def __init__(self, store: ReminderStore) -> None:
            self._store = store
            self._scheduler = BackgroundScheduler()

        def start(self) -> None:
            self._scheduler.add_job(self.send_due, "cron", hour=8)
            self._scheduler.start()

        def send_due(self) -> None:
            taken = self._store.take_due(date.today())
            for reminder_id, email in taken:
                try:
                    send_reminder(email, reminder_id)
                except OSError:
                    self._store.put_back(reminder_id)
"""


def test_rows_a_with_update_moved_are_this_replicas_share_when_put_back_on_failure(tmp_path):
    write(tmp_path, {"clinic/__init__.py": "", "clinic/store.py": RELEASING_STORE.replace("{sql}", CLAIMING),
                     "clinic/jobs.py": RELEASING_JOBS, "clinic/mail.py": MAIL})
    assert findings(tmp_path, "clinic/jobs.py") == []
    write(tmp_path, {"clinic/store.py": RELEASING_STORE.replace("{sql}", READING)})
    assert findings(tmp_path, "clinic/jobs.py") == [(18, "OG201")]
