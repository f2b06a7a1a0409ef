"""A loop whose only way out is a run-once switch (``if options["once"]: return``: a value nothing in the loop
changes) runs forever as deployed: a worker loop, whose passes are jobs (OG201). A loop that leaves when its
work reports done is a retry, not a ticker."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

COMMAND = """\
    import time

    from django.core.management.base import BaseCommand

    from mailer.outbox import flush_outbox


    class Command(BaseCommand):
        def add_arguments(self, parser):
            parser.add_argument("--once", action="store_true")

        def handle(self, *args, **options):
            while True:
                sent = flush_outbox()
                {leave}
                time.sleep(30)
"""

OUTBOX = """\
    from django.core.mail import send_mail


    def flush_outbox() -> int:
        send_mail("Weekly news", "...", None, ["all@example.org"])
        return 1
"""

ENTRYPOINT = """\
    #!/bin/sh
    python manage.py send_outbox &
    exec gunicorn mailer.wsgi
"""

DOCKERFILE = """\
    FROM python:3.12
    COPY . /app
    ENTRYPOINT ["./entrypoint.sh"]
"""


@pytest.mark.parametrize("leave, expected", [
    ('if options["once"]:\n                    return', [(14, "OG201")]),
    ("if not sent:\n                    return", []),
])
def test_a_run_once_switch_is_no_way_out(tmp_path, leave, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'mailer'\n", "mailer/__init__.py": "",
                     "mailer/outbox.py": OUTBOX, "mailer/management/__init__.py": "",
                     "mailer/management/commands/__init__.py": "",
                     "mailer/management/commands/send_outbox.py": COMMAND.format(leave=leave),
                     "manage.py": "import django\n", "entrypoint.sh": ENTRYPOINT, "Dockerfile": DOCKERFILE})
    assert findings(tmp_path, "mailer/management/commands/send_outbox.py") == expected
