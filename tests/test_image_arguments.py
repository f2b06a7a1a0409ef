"""Deployment files read as the containers of the project's image run them.

A Kubernetes container that gives only ``args:`` runs the image's ENTRYPOINT with those arguments; when every
workload of the image gives its own, the Dockerfile's CMD is a default nothing runs.  So huey consumers started
as ``huey_consumer.py app.tasks.huey --no-periodic`` by the replicated Deployment, and without it only by a
Deployment of one replica, enqueue each periodic task once.  A compose service built from the project that gives
no command runs the Dockerfile's CMD, which then still counts.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

TASKS = """\
    import httpx
    from huey import RedisHuey, crontab

    huey = RedisHuey("billing", host="redis")


    @huey.periodic_task(crontab(minute="0", hour="3"))
    def renew_subscriptions():
        httpx.post("https://payments.example/renew")
"""

DOCKERFILE = """\
FROM python:3.11-slim
COPY billing ./billing
ENTRYPOINT ["huey_consumer.py", "billing.tasks.huey"]
CMD ["-k", "thread", "-w", "4"]
"""

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  replicas: {replicas}
  template:
    spec:
      containers:
        - name: consumer
          image: registry.example.com/billing:1.0
          args: {args}
"""


def _project(tmp_path, worker_args, scheduler_args):
    write(tmp_path, {"billing/__init__.py": "", "billing/tasks.py": TASKS})
    (tmp_path / "Dockerfile").write_text(DOCKERFILE)
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "worker.yaml").write_text(
        DEPLOYMENT.format(name="billing-worker", replicas=3, args=worker_args))
    (tmp_path / "k8s" / "scheduler.yaml").write_text(
        DEPLOYMENT.format(name="billing-scheduler", replicas=1, args=scheduler_args))


@pytest.mark.parametrize("worker_args, reported", [
    ('["-k", "thread", "-w", "4", "--no-periodic"]', []),
    ('["-k", "thread", "-w", "4"]', [(8, "OG201")]),
])
def test_arguments_handed_to_the_images_entrypoint(tmp_path, worker_args, reported):
    _project(tmp_path, worker_args, '["-k", "thread", "-w", "2"]')
    assert findings(tmp_path, "billing/tasks.py", codes=("OG201",)) == reported


def test_a_compose_service_that_runs_the_images_own_command(tmp_path):
    _project(tmp_path, '["-k", "thread", "-w", "4", "--no-periodic"]', '["-k", "thread", "-w", "2"]')
    (tmp_path / "docker-compose.yml").write_text(
        "services:\n  consumer:\n    build: .\n    deploy:\n      replicas: 2\n  redis:\n    image: redis:7\n")
    assert findings(tmp_path, "billing/tasks.py", codes=("OG201",)) == [(8, "OG201")]
