"""Django shapes that depend on how the project is deployed or how a helper hands its answer on.

- OG403: ``python manage.py migrate`` in an entrypoint that every web replica runs before gunicorn; reported at
  ``manage.py``'s ``execute_from_command_line``.  A one-shot migrate service the web waits for, or the project's
  own ``migrate`` command (which replaces Django's and may lock), is not reported.
- OG302/OG301: a management command that a Deployment keeps running in every replica is a worker, not operator
  code: rows it picks without a claim are reported; rows it iterates from a ``select_for_update`` queryset come
  locked, and what it changes on them is no lost update.
- OG301: the next number computed by a helper (``max + 1`` returned) and stored by its caller.
- OG604: a daily quota counted in a module-level dict keyed by today's date, refused with 429 by a view.
"""
from __future__ import annotations

import textwrap

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MANAGE = """\
    import os
    import sys


    def main() -> None:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "depot.settings")
        from django.core.management import execute_from_command_line

        execute_from_command_line(sys.argv)


    if __name__ == "__main__":
        main()
"""

ENTRYPOINT = """\
    #!/bin/sh
    set -e
    python manage.py migrate --noinput
    exec gunicorn depot.wsgi:application --workers 3
"""

DOCKERFILE = 'FROM python:3.12\nCOPY . /app\nENTRYPOINT ["/app/entrypoint.sh"]\n'

ONE_SHOT = """\
    services:
      migrate:
        build: .
        entrypoint: ["python", "manage.py", "migrate", "--noinput"]
        restart: "no"
      web:
        build: .
        entrypoint: ["gunicorn", "depot.wsgi:application"]
        depends_on:
          migrate:
            condition: service_completed_successfully
        deploy:
          replicas: 3
"""


def _migrate(tmp_path, files):
    write(tmp_path, {"manage.py": MANAGE, "depot/__init__.py": "", **files})
    return findings(tmp_path, "manage.py", codes=("OG403",))


def test_migrate_in_the_entrypoint_every_replica_runs_is_reported_at_manage_py(tmp_path):
    line = next(i for i, text in enumerate(textwrap.dedent(MANAGE).splitlines(), 1) if "execute_from" in text
                and "import" not in text)
    assert _migrate(tmp_path, {"entrypoint.sh": ENTRYPOINT, "Dockerfile": DOCKERFILE}) == [(line, "OG403")]


def test_a_one_shot_migrate_service_the_web_waits_for_is_left_alone(tmp_path):
    assert _migrate(tmp_path, {"docker-compose.yml": ONE_SHOT}) == []


DISPATCH_CASE = """\
    #!/bin/sh
    set -e
    case "${1:-web}" in
      migrate)
        exec python manage.py migrate --noinput
        ;;
      web)
        exec gunicorn depot.wsgi:application --workers 3
        ;;
      *)
        exec "$@"
        ;;
    esac
"""

DISPATCH_IF = """\
    #!/bin/sh
    set -e
    if [ "$1" = "release" ]; then
        python manage.py migrate --noinput
        exit 0
    fi
    exec gunicorn depot.wsgi:application --workers 3
"""

K8S = """\
    apiVersion: batch/v1
    kind: Job
    metadata:
      name: depot-migrate
    spec:
      template:
        spec:
          containers:
            - name: migrate
              image: example/depot
              args: ["{job_arg}"]
    ---
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: depot-web
    spec:
      replicas: 3
      template:
        spec:
          containers:
            - name: web
              image: example/depot
              {web_args}
"""


@pytest.mark.parametrize("script, job_arg, web_args, reported", [
    (DISPATCH_CASE, "migrate", 'args: ["web"]', False),
    (DISPATCH_CASE, "migrate", "ports: [{containerPort: 8000}]", False),  # no argument: the default branch
    (DISPATCH_CASE, "migrate", 'args: ["migrate"]', True),
    (DISPATCH_IF, "release", "ports: [{containerPort: 8000}]", False),
    (DISPATCH_IF, "release", 'args: ["release"]', True),
])
def test_an_entrypoint_branch_only_a_one_off_job_selects(tmp_path, script, job_arg, web_args, reported):
    line = next(i for i, text in enumerate(textwrap.dedent(MANAGE).splitlines(), 1) if "execute_from" in text
                and "import" not in text)
    found = _migrate(tmp_path, {"entrypoint.sh": script, "Dockerfile": DOCKERFILE,
                                "k8s/app.yaml": K8S.replace("{job_arg}", job_arg).replace("{web_args}", web_args)})
    assert found == ([(line, "OG403")] if reported else [])


def test_a_project_that_overrides_migrate_is_left_alone(tmp_path):
    files = {"entrypoint.sh": ENTRYPOINT, "Dockerfile": DOCKERFILE, "depot/management/__init__.py": "",
             "depot/management/commands/__init__.py": "",
             "depot/management/commands/migrate.py": "from django.core.management.commands.migrate import "
                                                      "Command as Base\n\n\nclass Command(Base):\n    pass\n"}
    assert _migrate(tmp_path, files) == []


SERVICES = """\
    import httpx
    from django.db import transaction

    from depot.models import Outbox


    def flush() -> int:
        sent = 0
{body}
        return sent
"""

UNCLAIMED = """\
        for message in Outbox.objects.filter(sent_at__isnull=True)[:50]:
            httpx.post("https://partner.example/hooks", json={"id": message.pk})
            message.sent_at = "now"
            message.save(update_fields=["sent_at"])
            sent += 1"""

LOCKED = """\
        with transaction.atomic():
            batch = Outbox.objects.select_for_update(skip_locked=True).filter(sent_at__isnull=True)[:50]
            for message in batch:
                try:
                    httpx.post("https://partner.example/hooks", json={"id": message.pk})
                except httpx.HTTPError:
                    message.attempts += 1
                    message.save(update_fields=["attempts"])
                    continue
                message.sent_at = "now"
                message.save(update_fields=["sent_at"])
                sent += 1"""

COMMAND = """\
    import time

    from django.core.management.base import BaseCommand

    from depot import services


    class Command(BaseCommand):
        def handle(self, *args, **options):
            while True:
                if not services.flush():
                    time.sleep(2)
"""

WORKER = """\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: outbox
    spec:
      replicas: 2
      template:
        spec:
          containers:
            - name: outbox
              image: depot:1
              command: ["python", "manage.py", "send_outbox"]
"""


@pytest.mark.parametrize("body, deployed, expected", [
    (UNCLAIMED, True, ["OG302"]),
    (UNCLAIMED, False, []),
    (LOCKED, True, []),
], ids=["worker-unclaimed", "operator-unclaimed", "worker-locked-rows"])
def test_a_management_command_a_deployment_keeps_running_is_a_worker(tmp_path, body, deployed, expected):
    files = {"depot/__init__.py": "", "depot/models.py": "from django.db import models\n\n\nclass Outbox(models.Model):"
             "\n    sent_at = models.CharField(max_length=20, null=True)\n    attempts = models.IntegerField(default=0)\n",
             "depot/services.py": SERVICES.format(body=body), "depot/management/__init__.py": "",
             "depot/management/commands/__init__.py": "", "depot/management/commands/send_outbox.py": COMMAND}
    if deployed:
        files["deploy/outbox.yaml"] = WORKER
    write(tmp_path, files)
    assert sorted(code for _, code in findings(tmp_path, "depot/services.py", codes=("OG301", "OG302"))) == expected


NUMBERS = """\
    from django.db import transaction
    from django.db.models import Max

    from depot.models import Invoice


    def next_number(tenant) -> int:
        last = Invoice.objects.filter(tenant=tenant).aggregate(Max("number"))["number__max"] or 0
        return last + 1


    def issue(tenant, amount) -> Invoice:
        with transaction.atomic():
{lock}
            return Invoice.objects.create(tenant=tenant, number=next_number(tenant), amount=amount)
"""


@pytest.mark.parametrize("lock, expected", [
    ("            pass", ["OG301"]),
    ("            type(tenant).objects.select_for_update().get(pk=tenant.pk)", []),
], ids=["unlocked", "tenant-row-locked-first"])
def test_the_next_number_a_helper_hands_back_to_the_row_its_caller_creates(tmp_path, lock, expected):
    write(tmp_path, {"depot/__init__.py": "", "depot/billing.py": NUMBERS.format(lock=lock)})
    assert [code for _, code in findings(tmp_path, "depot/billing.py", codes=("OG301",))] == expected


QUOTAS = """\
    from collections import defaultdict
    from datetime import date

    _used: defaultdict = defaultdict(int)


    def take(client) -> bool:
        key = (client.pk, date.today())
        _used[key] += 1
        return _used[key] <= client.daily_limit
"""

VIEW = """\
    from django.http import JsonResponse

    from depot import quotas


    def lookup(request):
        if not quotas.take(request.user):
            return JsonResponse({"error": "quota"}, status=429)
        return JsonResponse({"ok": True})
"""


def test_a_daily_quota_counted_in_process_memory_and_refused_with_429(tmp_path):
    write(tmp_path, {"depot/__init__.py": "", "depot/quotas.py": QUOTAS, "depot/views.py": VIEW})
    assert [code for _, code in findings(tmp_path, "depot/quotas.py", codes=("OG604",))] == ["OG604"]


def test_a_neighbouring_project_s_entrypoint_is_not_this_one_s(tmp_path):
    # A repository whose root is itself a package: the module search reaches the directory above, where
    # another project's entrypoint migrates; that entrypoint does not start this project.
    write(tmp_path, {"other/manage.py": MANAGE, "other/entrypoint.sh": ENTRYPOINT, "other/Dockerfile": DOCKERFILE,
                     "repo/__init__.py": "", "repo/manage.py": MANAGE, "repo/depot/__init__.py": ""})
    assert findings(tmp_path / "repo", "manage.py", codes=("OG403",)) == []
