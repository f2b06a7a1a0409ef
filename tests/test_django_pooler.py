"""OG102: a session advisory lock through Django's connection when the settings point Django at PgBouncer.

``DATABASES = {"default": {"ENGINE": "django.db.backends.postgresql", "HOST": os.environ.get("DB_HOST",
"pgbouncer"), "PORT": os.environ.get("DB_PORT", "6432")}}``: the server Django connects to is the pooler, by the
deployment's value for the variable (or the default where nothing sets it).  In transaction mode each autocommit
statement may run on another server connection, so ``pg_try_advisory_lock`` and its unlock miss each other.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SETTINGS = """\
    import os

    INSTALLED_APPS = ["django.contrib.contenttypes", "ledger"]
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": "ledger",
            "HOST": os.environ.get("DB_HOST", "{host}"),
            "PORT": os.environ.get("DB_PORT", "{port}"),
        }
    }
"""

LOCKS = """\
    from contextlib import contextmanager

    from django.db import connection


    @contextmanager
    def period_lock(key):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
            (acquired,) = cursor.fetchone()
        try:
            yield acquired
        finally:
            if acquired:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [key])
"""

DEPLOY = """\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: ledger
    spec:
      replicas: 3
      template:
        spec:
          containers:
            - name: web
              image: example/ledger
              env:
                - name: DB_HOST
                  value: "{deployed_host}"
"""


@pytest.mark.parametrize("host, port, deployed_host, reported", [
    ("pgbouncer", "6432", "pgbouncer", [(9, "OG102")]),
    ("localhost", "5432", "pgbouncer.db.svc", [(9, "OG102")]),  # the deployment's value, not the default
    ("pgbouncer", "5432", "postgres.db.svc", []),  # deployed straight to PostgreSQL
])
def test_a_session_lock_through_djangos_connection_to_a_pooler(tmp_path, host, port, deployed_host, reported):
    files = {"site/__init__.py": "", "site/settings.py": SETTINGS.replace("{host}", host).replace("{port}", port),
             "ledger/__init__.py": "", "ledger/locks.py": LOCKS,
             "k8s/deploy.yaml": DEPLOY.replace("{deployed_host}", deployed_host)}
    write(tmp_path, files)
    assert findings(tmp_path, "ledger/locks.py", codes=("OG102",)) == reported


COMPOSE = """\
    services:
      postgres:
        image: postgres:16
      pgbouncer:
        image: edoburu/pgbouncer:1.22.1
        environment:
          DATABASE_URL: postgres://ledger:secret@postgres:5432/ledger
          POOL_MODE: transaction
      migrate:
        build: .
        command: python manage.py migrate --noinput
        environment:
          DB_HOST: postgres
          DB_PORT: "5432"
      web:
        build: .
        environment:
          DB_HOST: pgbouncer
        deploy:
          replicas: 2
"""


def test_the_poolers_own_upstream_is_not_where_the_application_connects(tmp_path):
    # The pgbouncer service's DATABASE_URL names PostgreSQL itself, and the migrate step goes there directly:
    # neither is a URL the application connects with, so every URL it does use goes through the pooler.
    files = {"site/__init__.py": "", "site/settings.py": SETTINGS.replace("{host}", "pgbouncer").replace(
        "{port}", "6432"), "ledger/__init__.py": "", "ledger/locks.py": LOCKS, "docker-compose.yml": COMPOSE}
    write(tmp_path, files)
    assert findings(tmp_path, "ledger/locks.py", codes=("OG102",)) == [(9, "OG102")]
