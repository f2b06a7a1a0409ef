"""OG302: a queued task that nothing in the project enqueues or schedules (its name appears in no other file,
and its own module only defines it) is never run in this deployment, so its pickup races nothing. Named by a
beat entry of a beat every worker runs, or enqueued by a view, it is reported."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """\
    from django.db import models


    class Render(models.Model):
        status = models.CharField(max_length=20, default="pending")
        url = models.URLField()
"""

TASKS = """\
    import httpx
    from celery import shared_task

    from studio.models import Render


    @shared_task(name="retry_stuck_renders")
    def retry_stuck_renders():
        for render in Render.objects.filter(status="pending"):
            httpx.post("https://render.internal/jobs", json={"url": render.url}, timeout=10)
            render.status = "running"
            render.save(update_fields=["status"])
"""

CALLERS = {
    "none": {},
    "beat in every worker": {"studio/settings.py": """\
        CELERY_BEAT_SCHEDULE = {"stuck": {"task": "retry_stuck_renders", "schedule": 300.0}}
    """, "Procfile": """\
        web: gunicorn studio.wsgi
        worker: celery -A studio worker -B
    """},
    "view": {"studio/views.py": """\
        from django.http import JsonResponse

        from studio.tasks import retry_stuck_renders


        def kick(request):
            retry_stuck_renders.delay()
            return JsonResponse({"ok": True})
    """},
    "test only": {"tests/test_tasks.py": """\
        from studio.tasks import retry_stuck_renders


        def test_retry():
            retry_stuck_renders()
    """},
}


@pytest.mark.parametrize("callers, expected", [("none", []), ("test only", []),
                                               ("beat in every worker", [(9, "OG302")]), ("view", [(9, "OG302")])])
def test_a_task_nothing_enqueues(tmp_path, callers, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'studio'\n", "studio/__init__.py": "",
                     "studio/models.py": MODELS, "studio/tasks.py": TASKS, **CALLERS[callers]})
    assert findings(tmp_path, "studio/tasks.py", codes=("OG302",)) == expected
