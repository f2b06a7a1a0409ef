"""A supervisord configuration is a deployment file: each ``[program:name]`` it starts runs in every container
whose start command is supervisord, a one-shot ``migrate`` chained before the server as much as the server;
a program supervisord does not start by itself (``autostart=false``) runs when someone asks for it."""
from __future__ import annotations

import pytest
from test_deployment import steps, write

from onceguard.config import from_mapping
from onceguard.project import deployment

MANAGE = """\
    import sys

    from django.core.management import execute_from_command_line

    if __name__ == "__main__":
        execute_from_command_line(sys.argv)
"""

SUPERVISOR = """\
    [supervisord]
    nodaemon=true               ; stay in the foreground

    [program:app]
    command={command}
    autorestart=true

    [program:jobs]
    command=python manage.py qcluster   ; the task cluster
    {autostart}
"""

DOCKERFILE = 'FROM python:3.12\nCOPY . /app\nCMD ["supervisord", "-c", "/app/deploy/supervisord.conf"]\n'


@pytest.mark.parametrize("command, migrates", [
    ('bash -c "cd /app && python manage.py migrate && gunicorn site.wsgi -b 0.0.0.0:8000"', True),
    ("gunicorn site.wsgi -b 0.0.0.0:8000", False),
])
def test_programs_supervisord_starts(tmp_path, command, migrates):
    write(tmp_path, {"manage.py": MANAGE, "site/__init__.py": "", "site/wsgi.py": "",
                     "deploy/supervisord.conf": SUPERVISOR.replace("{command}", command).replace("{autostart}", ""),
                     "Dockerfile": DOCKERFILE})
    found = steps(tmp_path)
    assert any(kind == deployment.DJANGO_MIGRATE and per_replica for kind, _, per_replica in found) == migrates, found
    words = [launch.words for launch in deployment.launches(from_mapping({}, root=str(tmp_path)))]
    assert ("python", "manage.py", "qcluster") in words


def test_a_program_started_by_hand(tmp_path):
    write(tmp_path, {"manage.py": MANAGE, "site/__init__.py": "", "site/wsgi.py": "",
                     "deploy/supervisord.conf": SUPERVISOR.replace("{command}", "gunicorn site.wsgi").replace(
                         "{autostart}", "autostart=false"),
                     "Dockerfile": DOCKERFILE})
    words = [launch.words for launch in deployment.launches(from_mapping({}, root=str(tmp_path)))]
    assert ("python", "manage.py", "qcluster") not in words
    assert ("gunicorn", "site.wsgi") in words
