"""OG201: a management command a crontab runs, in an image whose every replica starts cron.

The entrypoint starts ``cron`` and then the server; the image installs a crontab whose line runs
``python manage.py send_reminders``.  Every replica's cron runs it, so the command's ``handle`` is a job each
replica runs on schedule: without a claim, customers get one reminder per replica.  Without cron in the
container (the schedule kept by one Kubernetes CronJob), the command is run once.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

COMMAND = """\
    from django.core.mail import send_mail
    from django.core.management.base import BaseCommand

    from billing.models import Invoice


    class Command(BaseCommand):
        def handle(self, *args, **options):
            for invoice in Invoice.objects.filter(paid=False):
                send_mail("Payment reminder", "...", None, [invoice.email])
"""

ENTRYPOINT = """\
    #!/bin/sh
    set -e
    {cron}
    exec gunicorn shop.wsgi:application --bind 0.0.0.0:8000
"""

FILES = {
    "Dockerfile": "FROM python:3.11-slim\nCOPY . /app\nCOPY crontab /etc/cron.d/shop\nENTRYPOINT [\"/app/entrypoint.sh\"]\n",
    "crontab": "SHELL=/bin/sh\n30 7 * * * root cd /app && python manage.py send_reminders >> /proc/1/fd/1 2>&1\n",
    "manage.py": "import sys\nfrom django.core.management import execute_from_command_line\n"
                 "execute_from_command_line(sys.argv)\n",
    "billing/__init__.py": "",
    "billing/management/__init__.py": "",
    "billing/management/commands/__init__.py": "",
    "billing/management/commands/send_reminders.py": COMMAND,
}


@pytest.mark.parametrize("cron, expected", [("cron", [(8, "OG201")]), ("echo starting", [])])
def test_a_command_the_containers_cron_runs(tmp_path, cron, expected):
    write(tmp_path, {**FILES, "entrypoint.sh": ENTRYPOINT.replace("{cron}", cron)})
    assert findings(tmp_path, "billing/management/commands/send_reminders.py", codes=("OG201",)) == expected
