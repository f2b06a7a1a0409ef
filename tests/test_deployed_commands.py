"""A Django management command that a deployment file runs in every replica (a step of the web container's
entrypoint before the server, or the container's own command) runs as each replica starts: its seeding is
start-up seeding (OG603).  The same command that no deployment file runs, or that only a one-off Job runs, is
an operator's."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """\
    from django.db import models


    class Plan(models.Model):
        code = models.CharField(max_length=20)
        price = models.IntegerField()
"""

COMMAND = """\
    from django.core.management.base import BaseCommand

    from shop.models import Plan

    DEFAULT_PLANS = {"free": 0, "pro": 20}


    class Command(BaseCommand):
        help = "Create the default plans"

        def handle(self, *args, **options):
            for code, price in DEFAULT_PLANS.items():
                if not Plan.objects.filter(code=code).exists():
                    Plan.objects.create(code=code, price=price)
"""

MANAGE = """\
    import sys

    from django.core.management import execute_from_command_line

    if __name__ == "__main__":
        execute_from_command_line(sys.argv)
"""

ENTRYPOINT = "#!/bin/sh\nset -e\n{step}\nexec gunicorn site.wsgi -b 0.0.0.0:8000\n"
DOCKERFILE = 'FROM python:3.12\nCOPY . /app\nWORKDIR /app\nENTRYPOINT ["./entrypoint.sh"]\n'
COMPOSE = "services:\n  web:\n    build: .\n    deploy:\n      replicas: 3\n"
JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: seed
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: seed
          image: shop:latest
          command: ["python", "manage.py", "seed_plans"]
"""


def _project(tmp_path, step, extra=None):
    files = {"manage.py": MANAGE, "site/__init__.py": "", "shop/__init__.py": "", "shop/models.py": MODELS,
             "shop/management/__init__.py": "", "shop/management/commands/__init__.py": "",
             "shop/management/commands/seed_plans.py": COMMAND,
             "entrypoint.sh": ENTRYPOINT.replace("{step}", step), "Dockerfile": DOCKERFILE,
             "docker-compose.yml": COMPOSE}
    files.update(extra or {})
    write(tmp_path, files)


@pytest.mark.parametrize("step", ["python manage.py seed_plans", "./manage.py seed_plans --verbosity 0",
                                  "django-admin seed_plans"])
def test_a_command_every_replica_runs_as_it_starts(tmp_path, step):
    _project(tmp_path, step)
    assert findings(tmp_path, "shop/management/commands/seed_plans.py", codes=("OG603",)) == [(13, "OG603")]


def test_a_command_no_deployment_runs(tmp_path):
    _project(tmp_path, "python manage.py collectstatic --no-input")
    assert findings(tmp_path, "shop/management/commands/seed_plans.py", codes=("OG603",)) == []


def test_a_command_only_a_one_off_job_runs(tmp_path):
    _project(tmp_path, "python manage.py collectstatic --no-input", {"k8s/seed-job.yaml": JOB})
    assert findings(tmp_path, "shop/management/commands/seed_plans.py", codes=("OG603",)) == []


WORKER_COMMAND = """\
    import time

    from django.core.management.base import BaseCommand

    from shop.models import Plan


    class Command(BaseCommand):
        help = "Keep the plans in step with the catalogue"

        def handle(self, *args, **options):
            while True:
                for code in ("free", "pro"):
                    if not Plan.objects.filter(code=code).exists():
                        Plan.objects.create(code=code, price=0)
                time.sleep(60)
"""


def test_a_command_the_container_keeps_running_is_a_worker(tmp_path):
    # Its passes are a job's (OG201's question), not start-up seeding.
    _project(tmp_path, "python manage.py seed_plans", {"shop/management/commands/seed_plans.py": WORKER_COMMAND})
    assert findings(tmp_path, "shop/management/commands/seed_plans.py", codes=("OG603",)) == []
