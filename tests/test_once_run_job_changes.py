"""OG301: a field changed from its own value only by a job the deployment runs once (one beat of its own, one
replica) has one writer: no lost update, unless something else in the project also writes that field (a view
that bumps it, a whole-row ``save()``, an admin page) or the job runs in every replica (beat inside each
worker) or is also queued by code."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """\
    from django.db import models


    class Parcel(models.Model):
        state = models.CharField(max_length=16)
        nudges = models.IntegerField(default=0)
        nudged_on = models.DateTimeField(null=True)
"""

CHASING = """\
    from django.utils import timezone

    from depot.models import Parcel


    def chase_stuck_parcels():
        now = timezone.now()
        for parcel in Parcel.objects.filter(state="stuck"):
            parcel.nudged_on = now
            parcel.nudges += 1
            parcel.save(update_fields=["nudged_on", "nudges"])
"""

TASKS = """\
    from celery import shared_task

    {import_line}


    @shared_task
    def chase():
        {call}
"""

CELERY = """\
    from celery import Celery
    from celery.schedules import crontab

    app = Celery("depot", broker="redis://queue:6379/0")
    app.conf.beat_schedule = {
        "chase-parcels": {"task": "depot.tasks.chase", "schedule": crontab(minute=15)},
    }
"""

SINGLE_BEAT = """\
    services:
      worker:
        image: depot:3
        command: celery -A depot worker -l info
        deploy:
          replicas: 4
      beat:
        image: depot:3
        command: celery -A depot beat -l info
        deploy:
          replicas: 1
"""

EMBEDDED_BEAT = """\
    services:
      worker:
        image: depot:3
        command: celery -A depot worker -B -l info
        deploy:
          replicas: 4
"""

VIEW_BUMPING = """\
    from django.http import JsonResponse

    from depot.models import Parcel


    def poke(request, pk):
        parcel = Parcel.objects.get(pk=pk)
        parcel.nudges = parcel.nudges + 5
        parcel.save(update_fields=["nudges"])
        return JsonResponse({"ok": True})
"""

VIEW_SAVING_ALL = """\
    from django.http import JsonResponse

    from depot.models import Parcel


    def deliver(request, pk):
        parcel = Parcel.objects.get(pk=pk)
        parcel.state = "delivered"
        parcel.save()
        return JsonResponse({"ok": True})
"""

VIEW_QUEUING = """\
    from django.http import JsonResponse

    from depot.tasks import chase


    def chase_now(request):
        chase.delay()
        return JsonResponse({"queued": True})
"""

STYLES = [
    ("from depot import chasing", "chasing.chase_stuck_parcels()"),
    ("from depot.chasing import chase_stuck_parcels", "chase_stuck_parcels()"),
]


def _project(tmp_path, compose, import_line, call, **extra):
    files = {"pyproject.toml": "[project]\nname = 'depot'\n", "depot/__init__.py": "", "depot/models.py": MODELS,
             "depot/chasing.py": CHASING, "depot/celery.py": CELERY, "docker-compose.yml": compose,
             "depot/tasks.py": TASKS.format(import_line=import_line, call=call)}
    files.update(extra)
    write(tmp_path, files)


@pytest.mark.parametrize("import_line, call", STYLES)
def test_a_change_only_a_single_beat_job_makes(tmp_path, import_line, call):
    _project(tmp_path, SINGLE_BEAT, import_line, call)
    assert findings(tmp_path, "depot/chasing.py", codes=("OG301",)) == []


@pytest.mark.parametrize("import_line, call", STYLES)
def test_beat_inside_every_worker_is_several_runners(tmp_path, import_line, call):
    _project(tmp_path, EMBEDDED_BEAT, import_line, call)
    assert findings(tmp_path, "depot/chasing.py", codes=("OG301",)) == [(10, "OG301")]


@pytest.mark.parametrize("view", [VIEW_BUMPING, VIEW_SAVING_ALL, VIEW_QUEUING])
def test_another_writer_of_the_rows(tmp_path, view):
    _project(tmp_path, SINGLE_BEAT, *STYLES[0], **{"depot/views.py": view})
    assert findings(tmp_path, "depot/chasing.py", codes=("OG301",)) == [(10, "OG301")]


def test_a_helper_also_called_from_a_command(tmp_path):
    command = """\
        from django.core.management.base import BaseCommand

        from depot.chasing import chase_stuck_parcels


        class Command(BaseCommand):
            def handle(self, *args, **options):
                chase_stuck_parcels()
    """
    _project(tmp_path, SINGLE_BEAT, *STYLES[0], **{"depot/management/commands/chase_now.py": command})
    assert findings(tmp_path, "depot/chasing.py", codes=("OG301",)) == [(10, "OG301")]


def test_a_wrapper_between_the_job_and_the_change(tmp_path):
    rounds = """\
        from depot.chasing import chase_stuck_parcels


        def morning_round():
            chase_stuck_parcels()
    """
    _project(tmp_path, SINGLE_BEAT, "from depot.rounds import morning_round", "morning_round()",
             **{"depot/rounds.py": rounds})
    assert findings(tmp_path, "depot/chasing.py", codes=("OG301",)) == []
