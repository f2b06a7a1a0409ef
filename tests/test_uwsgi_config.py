"""A uWSGI configuration is a deployment file: what its ``[uwsgi]`` section runs as the server starts
(``hook-pre-app = exec:./manage.py migrate``, ``exec-asap = ...``) runs in every replica whose server loads it,
and so do the daemons it keeps beside its workers (``attach-daemon = ./manage.py sendalerts``).  Another hook
action (``hook-pre-app = mount:...``) runs no command; another section of the file is not uWSGI's.
"""
from __future__ import annotations

import pytest
from test_deployment import steps, write

from onceguard.project import deployment

MANAGE = """\
    import sys

    from django.core.management import execute_from_command_line

    if __name__ == "__main__":
        execute_from_command_line(sys.argv)
"""

UWSGI = """\
    [uwsgi]
    master
    module = site.wsgi:application
    {line}
    attach-daemon = ./manage.py sendalerts --loop
    smart-attach-daemon = /tmp/reports.pid ./manage.py sendreports

    [other]
    exec-asap = ./manage.py flush
"""


@pytest.mark.parametrize("line, migrates", [
    ("hook-pre-app = exec:./manage.py migrate", True),
    ("exec-asap = python manage.py migrate --noinput", True),
    ("hook-pre-app = mount:proc none /proc", False),
])
def test_what_the_server_runs_as_it_starts(tmp_path, line, migrates):
    write(tmp_path, {"manage.py": MANAGE, "site/__init__.py": "", "site/wsgi.py": "",
                     "docker/uwsgi.ini": UWSGI.replace("{line}", line),
                     "Dockerfile": 'FROM python:3.12\nCMD ["uwsgi", "docker/uwsgi.ini"]\n'})
    found = steps(tmp_path)
    assert any(kind == deployment.DJANGO_MIGRATE and per_replica for kind, _, per_replica in found) == migrates, found
    words = [launch.words for launch in deployment.launches(deployment_config(tmp_path))]
    assert ("./manage.py", "sendalerts", "--loop") in words
    assert ("./manage.py", "sendreports") in words
    assert ("./manage.py", "flush") not in words


def deployment_config(root):
    from onceguard.config import from_mapping

    return from_mapping({}, root=str(root))
