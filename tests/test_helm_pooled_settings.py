"""OG102: a session-level try-lock taken through Django's connection, where the Helm chart's values point the
settings module the image runs (``ENV DJANGO_SETTINGS_MODULE=...``) at PgBouncer.  The chart's templates are read
with its ``values.yaml`` written in (``{{ .Values.consumer.db.host | default .Values.db.host | quote }}``), and a
development base the deployed settings module replaces (``from .common import *``, its own ``DATABASES``) is no
URL a process connects to.  Values that give the consumers a direct server, or an image that names no settings
module (the base may run), leave it silent."""
from __future__ import annotations

import textwrap

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

from onceguard.project import deployment, index

LOCKS = """\
    from contextlib import contextmanager

    from django.db import connection


    @contextmanager
    def route_lock(route_id: int):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [route_id])
            held = cursor.fetchone()[0]
        try:
            yield held
        finally:
            if held:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [route_id])
"""

COMMON = """\
    INSTALLED_APPS = ["depot"]

    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "HOST": "localhost",
            "PORT": "5432",
            "NAME": "depot",
        }
    }
"""

LIVE = """\
    import os

    from .common import *  # noqa: F401,F403

    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "HOST": os.environ["DB_HOST"],
            "PORT": os.environ.get("DB_PORT", "5432"),
            "NAME": "depot",
        }
    }
"""

VALUES = """\
    db:
      host: depot-pool
      port: 6432
    consumer:
      replicas: 4
      db: {own}
"""

CONSUMER = """\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: {{ .Release.Name }}-consumer
    spec:
      replicas: {{ .Values.consumer.replicas }}
      template:
        spec:
          containers:
            - name: consumer
              image: "depot:{{ .Chart.AppVersion }}"
              args: ["celery", "-A", "depot", "worker"]
              env:
                - name: DB_HOST
                  value: {{ .Values.consumer.db.host | default .Values.db.host | quote }}
                - name: DB_PORT
                  value: {{ .Values.consumer.db.port | default .Values.db.port | quote }}
                {{- include "depot.env" . | nindent 16 }}
"""

DOCKERFILE = 'FROM python:3.12-slim\n{env}CMD ["gunicorn", "depot.wsgi:application"]\n'


def _check(tmp_path, own="{}", env="ENV DJANGO_SETTINGS_MODULE=depot.settings.live\n"):
    index.clear_cache()
    deployment.clear_cache()
    write(tmp_path, {"depot/__init__.py": "", "depot/locks.py": LOCKS, "depot/settings/__init__.py": "",
                     "depot/settings/common.py": COMMON, "depot/settings/live.py": LIVE,
                     "Dockerfile": DOCKERFILE.format(env=env), "chart/Chart.yaml": "name: depot\nversion: 1.0.0\n",
                     "chart/values.yaml": VALUES.format(own=own), "chart/templates/consumer.yaml": CONSUMER})
    return findings(tmp_path, "depot/locks.py", codes=("OG101", "OG102"))


def _lock_line() -> int:
    return next(i for i, line in enumerate(textwrap.dedent(LOCKS).splitlines(), 1) if "pg_try_advisory_lock" in line)


def test_chart_values_send_the_consumers_through_the_pooler(tmp_path):
    assert _check(tmp_path / "pooled") == [(_lock_line(), "OG102")]
    assert _check(tmp_path / "direct", own="{host: depot-db, port: 5432}") == []


def test_the_settings_module_named_by_the_images_env_in_its_other_spelling(tmp_path):
    assert _check(tmp_path / "spaced", env="ENV DJANGO_SETTINGS_MODULE depot.settings.live\n") \
        == [(_lock_line(), "OG102")]
    assert _check(tmp_path / "unnamed", env="") == []  # (the development base may be what runs)
