"""OG201: ``celery beat`` run on its own by a service the deployment asks several replicas of (a Deployment's
``replicas: 2``, compose's ``deploy.replicas: 2``) is a beat in each replica, as one inside every worker is; one
replica, or a count the file leaves to a default or an autoscaler, is one beat."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

CELERY = """\
    from celery import Celery
    from celery.schedules import crontab

    app = Celery("clinic", broker="redis://redis:6379/0")
    app.conf.beat_schedule = {
        "remind": {"task": "clinic.tasks.remind", "schedule": crontab(minute=5)},
    }
"""

TASKS = """\
    import httpx

    from clinic.celery import app


    @app.task
    def remind():
        httpx.post("https://sms.example.org/send", json={"text": "see you tomorrow"})
"""

KUBERNETES = """\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: clinic-beat
    spec:
      {replicas}
      template:
        spec:
          containers:
            - name: beat
              image: clinic:1
              command: ["celery", "-A", "clinic", "beat", "-l", "info"]
"""

COMPOSE = """\
    services:
      beat:
        image: clinic:1
        command: celery -A clinic beat
        {deploy}
"""


@pytest.mark.parametrize("replicas, expected", [
    ("replicas: 2", [(6, "OG201")]),
    ("replicas: 1", []),
    ("selector: {}", []),
])
def test_a_beat_deployment_of_several_replicas(tmp_path, replicas, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'clinic'\n", "clinic/__init__.py": "",
                     "clinic/celery.py": CELERY, "clinic/tasks.py": TASKS,
                     "k8s/beat.yaml": KUBERNETES.format(replicas=replicas)})
    assert findings(tmp_path, "clinic/celery.py", codes=("OG201",)) == expected


@pytest.mark.parametrize("deploy, expected", [
    ("deploy:\n          replicas: 3", [(6, "OG201")]),
    ("restart: always", []),
])
def test_a_compose_beat_service_of_several_replicas(tmp_path, deploy, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'clinic'\n", "clinic/__init__.py": "",
                     "clinic/celery.py": CELERY, "clinic/tasks.py": TASKS,
                     "docker-compose.yml": COMPOSE.format(deploy=deploy)})
    assert findings(tmp_path, "clinic/celery.py", codes=("OG201",)) == expected
