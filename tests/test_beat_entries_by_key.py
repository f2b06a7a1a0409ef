"""Celery beat entries added one by one (``CELERY_BEAT_SCHEDULE["x"] = {...}`` under a setting's ``if``, or
``app.conf.beat_schedule.update({...})``) schedule their tasks as the literal schedule does (OG201 when beat runs
in every worker)."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

TASKS = """\
    import smtplib

    from celery import shared_task


    @shared_task
    def quota_mail():
        with smtplib.SMTP("mail") as server:
            server.sendmail("q@x", ["ops@x"], "over quota")
"""

ADDED = {
    "key": """\
    import os

    CELERY_BEAT_SCHEDULE = {}
    if os.environ.get("BILLING"):
        CELERY_BEAT_SCHEDULE["quota-mail"] = {"task": "meter.tasks.quota_mail", "schedule": 3600.0}
""",
    "update": """\
    CELERY_BEAT_SCHEDULE = {}
    CELERY_BEAT_SCHEDULE.update({"quota-mail": {"task": "meter.tasks.quota_mail", "schedule": 3600.0}})
""",
}

PROCFILE = """\
    web: gunicorn meter.wsgi
    worker: celery -A meter worker -B
"""


@pytest.mark.parametrize("how, line", [("key", 5), ("update", 2)])
def test_an_entry_added_to_the_schedule(tmp_path, how, line):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'meter'\n", "meter/__init__.py": "",
                     "meter/tasks.py": TASKS, "meter/settings.py": ADDED[how], "Procfile": PROCFILE})
    assert findings(tmp_path, "meter/settings.py") == [(line, "OG201")]
