"""Which deployed settings are the application's: OG102 reads ``DATABASES`` as the services that run the
project's code set it, not as a migration step or the pooler's own container does.

A compose file whose ``migrate`` service connects straight to PostgreSQL (as it should) and whose PgBouncer
service names its upstream (``DB_HOST: db`` in the pooler's own environment) still sends the web replicas through
the pooler when the web service sets ``DB_HOST: pgbouncer``: a session lock there is reported.  With the web
service pointed at PostgreSQL itself, nothing is.
"""
from __future__ import annotations

import pytest
from test_django_pooler import LOCKS, SETTINGS
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

COMPOSE = """\
    services:
      db:
        image: postgres:16
      pgbouncer:
        image: edoburu/pgbouncer:v1.23.1
        environment:
          DB_HOST: db
          POOL_MODE: transaction
      migrate:
        build: .
        command: ["python", "manage.py", "migrate", "--noinput"]
        environment:
          DB_HOST: db
          DB_PORT: "5432"
      web:
        build: .
        command: gunicorn ledger.wsgi --workers 3
        environment:
          DB_HOST: {web_host}
          DB_PORT: "5432"
        deploy:
          replicas: 3
"""


@pytest.mark.parametrize("web_host, reported", [("pgbouncer", [(9, "OG102")]), ("db", [])])
def test_the_web_service_decides_where_the_application_connects(tmp_path, web_host, reported):
    write(tmp_path, {"ledger/__init__.py": "",
                     "ledger/settings.py": SETTINGS.replace("{host}", "localhost").replace("{port}", "5432"),
                     "ledger/locks.py": LOCKS, "docker-compose.yml": COMPOSE.replace("{web_host}", web_host)})
    assert findings(tmp_path, "ledger/locks.py", codes=("OG102",)) == reported
