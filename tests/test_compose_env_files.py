"""What a compose service's ``env_file:`` sets is the service's environment: a Django ``DATABASES`` entry whose
``HOST``/``PORT`` are read from variables an ``.env`` file gives (``DB_HOST=pgbouncer``, ``DB_PORT=6432``)
connects to that pooler, not to the code's ``localhost`` default.  ``environment:`` wins over the file."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SETTINGS = """\
    import os

    INSTALLED_APPS = ["django.contrib.contenttypes", "rewards"]
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": "rewards",
            "HOST": os.environ.get("PG_HOST", "localhost"),
            "PORT": os.environ.get("PG_PORT", "5432"),
            "CONN_MAX_AGE": 300,
        }
    }
"""

GATE = """\
    from django.db import connection


    class CustomerGate:
        def enter(self, customer_id: int) -> None:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_lock(%s)", [customer_id])

        def leave(self, customer_id: int) -> None:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [customer_id])
"""

COMPOSE = """\
    services:
      bouncer:
        image: edoburu/pgbouncer:1.21.0
        environment:
          DATABASE_URL: postgres://rewards:pw@db:5432/rewards
          POOL_MODE: transaction
      app:
        build: .
        env_file: {env_file}
{environment}        deploy:
          replicas: 2
"""

OVERRIDE = """\
        environment:
          PG_HOST: db
          PG_PORT: "5432"
"""


def _files(variables: str, env_file: str = "deploy.env", environment: str = "", path: str = "deploy.env") -> dict:
    return {"svc/__init__.py": "", "svc/settings.py": SETTINGS, "rewards/__init__.py": "", "rewards/gate.py": GATE,
            "docker-compose.yml": COMPOSE.format(env_file=env_file, environment=environment), path: variables}


@pytest.mark.parametrize("env_file, path", [
    ("deploy.env", "deploy.env"),
    ("\n          - ./config/app.env", "config/app.env"),  # a list of files, relative to the compose file
])
def test_a_pooler_named_in_an_env_file(tmp_path, env_file, path):
    write(tmp_path, _files("# connection\nPG_HOST=bouncer\nexport PG_PORT='6432'\n", env_file, path=path))
    assert findings(tmp_path, "rewards/gate.py", codes=("OG102",)) == [(7, "OG102")]


def test_an_env_file_naming_the_database_itself(tmp_path):
    write(tmp_path, _files("PG_HOST=db\nPG_PORT=5432\n"))
    assert findings(tmp_path, "rewards/gate.py", codes=("OG102",)) == []


def test_the_services_own_environment_wins_over_its_env_file(tmp_path):
    write(tmp_path, _files("PG_HOST=bouncer\nPG_PORT=6432\n", environment=OVERRIDE))
    assert findings(tmp_path, "rewards/gate.py", codes=("OG102",)) == []
