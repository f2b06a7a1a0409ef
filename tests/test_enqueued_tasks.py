"""A task one beat schedules runs once per tick, one run at a time, unless code of the project also puts it on
the queue (``transaction.on_commit(dispatch.delay)`` in a signal, ``dispatch.apply_async()`` in a view): then
runs overlap on several workers, and rows the task picks without a claim are picked twice (OG302)."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """\
    from django.db import models


    class Refund(models.Model):
        status = models.CharField(max_length=20, default="pending")
        amount = models.IntegerField()
"""

SELECTORS = """\
    from .models import Refund


    def pending_refunds():
        return list(Refund.objects.filter(status="pending").order_by("id")[:50])
"""

SERVICES = """\
    import httpx


    def pay_back(refund):
        httpx.post("https://psp.example.com/refunds", json={"amount": refund.amount}, timeout=10)
        refund.status = "paid"
        refund.save(update_fields=["status"])
"""

TASKS = """\
    from celery import shared_task

    from .selectors import pending_refunds
    from .services import pay_back


    @shared_task
    def dispatch_refunds():
        for refund in pending_refunds():
            pay_back(refund)
"""

SETTINGS = """\
    CELERY_BEAT_SCHEDULE = {
        "dispatch-refunds": {"task": "refunds.tasks.dispatch_refunds", "schedule": 120.0},
    }
"""

SIGNALS = """\
    from django.db import transaction
    from django.db.models.signals import post_save
    from django.dispatch import receiver

    from .models import Refund
    from .tasks import dispatch_refunds


    @receiver(post_save, sender=Refund)
    def refund_created(sender, instance, created, **kwargs):
        if created:
            transaction.on_commit(dispatch_refunds.{enqueue})
"""

COMPOSE = """\
    services:
      worker:
        build: .
        command: celery -A site worker -l info
        deploy:
          replicas: 4
      beat:
        build: .
        command: celery -A site beat -l info
"""


def _project(tmp_path, signals=None):
    files = {"site/__init__.py": "", "site/settings.py": SETTINGS, "refunds/__init__.py": "",
             "refunds/models.py": MODELS, "refunds/selectors.py": SELECTORS, "refunds/services.py": SERVICES,
             "refunds/tasks.py": TASKS, "docker-compose.yml": COMPOSE, "Dockerfile": "FROM python:3.12\n"}
    if signals is not None:
        files["refunds/signals.py"] = signals
    write(tmp_path, files)


def test_a_task_only_the_one_beat_schedules(tmp_path):
    _project(tmp_path)
    assert findings(tmp_path, "refunds/tasks.py", codes=("OG302",)) == []


@pytest.mark.parametrize("enqueue", ["delay", "apply_async"])
def test_the_same_task_also_enqueued_by_a_signal(tmp_path, enqueue):
    _project(tmp_path, SIGNALS.replace("{enqueue}", enqueue))
    assert findings(tmp_path, "refunds/tasks.py", codes=("OG302",)) == [(9, "OG302")]
