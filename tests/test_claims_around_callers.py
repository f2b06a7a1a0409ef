"""Claims a job's code inherits from how it is entered.

- OG302: a service function that picks rows by their state, called only by a task of another module past that
  task's claim (a transaction-level try-lock whose answer it tests), picks them one run at a time.
- OG201: a job decorated with a project decorator whose wrapper leads with a claim and then calls the job
  (``@once_a_day("digest")``) is claimed, as a job that leads with the claim itself is; a decorator whose
  wrapper only times the call claims nothing.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SERVICES = """\
    import httpx
    from django.utils import timezone

    from ledger.models import Statement


    def close_open_statements() -> int:
        closed = 0
        for statement in Statement.objects.filter(status="open").order_by("id")[:100]:
            httpx.post("https://mail.example/statements", json={"id": statement.id})
            statement.status = "closed"
            statement.closed_at = timezone.now()
            statement.save(update_fields=["status", "closed_at"])
            closed += 1
        return closed
"""

LOCKS = """\
    import zlib
    from contextlib import contextmanager

    from django.db import connection, transaction


    @contextmanager
    def turn(name: str):
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [zlib.crc32(name.encode())])
                (won,) = cursor.fetchone()
            yield bool(won)
"""

TASKS = """\
    from celery import shared_task

    from ledger import services as svc
    from ledger.locks import turn


    @shared_task
    def close_statements() -> int:
{body}
"""

CLAIMED = """\
        with turn("close-statements") as won:
            if not won:
                return 0
            return svc.close_open_statements()"""

UNCLAIMED = """\
        return svc.close_open_statements()"""


def _pickups(tmp_path, body):
    write(tmp_path, {"ledger/__init__.py": "", "ledger/models.py": "from django.db import models\n\n\n"
                     "class Statement(models.Model):\n    status = models.CharField(max_length=10)\n"
                     "    closed_at = models.DateTimeField(null=True)\n",
                     "ledger/services.py": SERVICES, "ledger/locks.py": LOCKS,
                     "ledger/tasks.py": TASKS.format(body=body)})
    return [code for _, code in findings(tmp_path, "ledger/services.py", codes=("OG302",))]


def test_rows_picked_by_a_service_only_a_claimed_task_calls_are_picked_one_run_at_a_time(tmp_path):
    assert _pickups(tmp_path, CLAIMED) == []


def test_the_same_service_called_by_a_task_without_a_claim_is_reported(tmp_path):
    assert _pickups(tmp_path, UNCLAIMED) == ["OG302"]


ONCE = """\
    import functools
    from datetime import date

    import redis

    r = redis.Redis(host="redis")


    def once_a_day(name: str):
        def decorate(job):
            @functools.wraps(job)
            def run(*args, **kwargs):
{guard}
                return job(*args, **kwargs)

            return run

        return decorate
"""

GUARD = """\
                if not r.set(f"jobs:{name}:{date.today()}", "1", nx=True, ex=86400):
                    return None"""

TIMER = """\
                print("running", name, date.today())"""

DIGEST = """\
    import httpx
    from apscheduler.schedulers.background import BackgroundScheduler

    from ledger.once import once_a_day

    scheduler = BackgroundScheduler(timezone="UTC")


    @once_a_day("digest")
    def send_digest() -> None:
        httpx.post("https://mail.example/digest", json={"to": "finance"})


    scheduler.add_job(send_digest, "cron", hour=6)
    scheduler.start()
"""


@pytest.mark.parametrize("guard, expected", [(GUARD, []), (TIMER, ["OG201"])], ids=["claiming", "timing-only"])
def test_a_project_decorator_whose_wrapper_leads_with_a_claim_claims_the_job(tmp_path, guard, expected):
    write(tmp_path, {"ledger/__init__.py": "", "ledger/once.py": ONCE.format(guard=guard), "ledger/jobs.py": DIGEST})
    assert [code for _, code in findings(tmp_path, "ledger/jobs.py")] == expected
