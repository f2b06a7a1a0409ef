"""Deployment files: a Dockerfile's exec-form ENTRYPOINT and CMD run as one command.

``ENTRYPOINT ["celery", "-A", "app.worker"]`` with ``CMD ["worker", "-B"]`` starts a worker with beat embedded
in every replica, so a task ``add_periodic_task`` schedules from ``on_after_configure`` runs once per replica.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

WORKER = """\
    from celery import Celery
    from celery.schedules import crontab

    app = Celery("tunes", broker="redis://redis")


    @app.on_after_configure.connect
    def install(sender, **_kwargs) -> None:
        from tunes.reminders import remind

        sender.add_periodic_task(crontab(hour=9, minute=0), remind.s(), name="reminders")
"""

REMINDERS = """\
    import httpx

    from tunes.worker import app


    @app.task
    def remind() -> None:
        httpx.post("https://sms.example.org/send", json={})
"""


def _project(tmp_path, dockerfile: str) -> None:
    write(tmp_path, {"tunes/__init__.py": "", "tunes/worker.py": WORKER, "tunes/reminders.py": REMINDERS})
    (tmp_path / "Dockerfile").write_text(dockerfile)


@pytest.mark.parametrize("dockerfile", [
    'FROM python:3.12\nENTRYPOINT ["celery", "-A", "tunes.worker"]\nCMD ["worker", "-B", "--loglevel=INFO"]\n',
    'FROM python:3.12\nCMD ["celery", "-A", "tunes.worker", "worker", "-B"]\n',
], ids=["entrypoint-and-cmd", "cmd-alone"])
def test_beat_embedded_through_entrypoint_and_cmd_runs_in_every_replica(tmp_path, dockerfile):
    _project(tmp_path, dockerfile)
    assert findings(tmp_path, "tunes/worker.py") == [(11, "OG201")]


def test_a_worker_without_beat_schedules_nothing_itself(tmp_path):
    _project(tmp_path, 'FROM python:3.12\nENTRYPOINT ["celery", "-A", "tunes.worker"]\nCMD ["worker"]\n')
    assert findings(tmp_path, "tunes/worker.py") == []
