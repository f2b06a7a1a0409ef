"""Migrations a function applies when only a script's ``__main__`` block calls it: a Kubernetes Job (or any one-off
the deployment runs once per release) that runs the script applies them once; a container every replica runs
with the same command applies them in every pod."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

BOOTSTRAP = """
    import logging

    from django.core.management import call_command


    def bring_schema_up_to_date():
        logging.getLogger(__name__).info("applying migrations")
        call_command("migrate", interactive=False)


    if __name__ == "__main__":
        import django

        django.setup()
        bring_schema_up_to_date()
    """

WEB = """
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: stock-web
    spec:
      replicas: 3
      template:
        spec:
          containers:
            - name: web
              image: stock:1
              command: ["gunicorn", "stock.wsgi:application"]
    """

RUNNER = """
    apiVersion: {api}
    kind: {kind}
    metadata:
      name: stock-{name}
    spec:
      {replicas}template:
        spec:
          {restart}containers:
            - name: migrate
              image: stock:1
              command: ["python", "-m", "stock.bootstrap"]
    """


@pytest.mark.parametrize("kind, expected", [
    ("Job", []),
    ("Deployment", [(9, "OG401")]),
])
def test_a_migrating_script_run_by_a_one_off_job(tmp_path, kind, expected):
    job = kind == "Job"
    runner = RUNNER.format(api="batch/v1" if job else "apps/v1", kind=kind, name="migrate" if job else "worker",
                           replicas="" if job else "replicas: 2\n      ",
                           restart="restartPolicy: Never\n          " if job else "")
    write(tmp_path, {"stock/__init__.py": "", "stock/wsgi.py": "application = None\n", "stock/bootstrap.py": BOOTSTRAP,
                     "k8s/web.yaml": WEB, "k8s/runner.yaml": runner})
    assert findings(tmp_path, "stock/bootstrap.py", codes=("OG401", "OG403")) == expected
