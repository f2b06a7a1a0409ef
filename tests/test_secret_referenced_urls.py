"""OG402: a Kubernetes container's variable taken from a Secret or ConfigMap entry (``valueFrom.secretKeyRef``)
is set to that entry's value: a migrate Job whose ``DATABASE_URL`` is the Secret's pooled URL migrates through
the pooler, read through a pydantic settings field of that name; the same Job given the direct entry does not."""
from __future__ import annotations

import base64

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

POOLED = "postgresql://till:secret@pgbouncer.data.svc:6432/till"
DIRECT = "postgresql://till:secret@pg-main.data.svc:5432/till"

SECRET = """\
    apiVersion: v1
    kind: {kind}
    metadata:
      name: till-db
    {field}:
      pooled-url: {pooled}
      direct-url: {direct}
"""

JOB = """\
    apiVersion: batch/v1
    kind: Job
    metadata:
      name: till-migrate
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
            - name: migrate
              image: till:1.0
              command: ["alembic", "upgrade", "head"]
              env:
                - name: DATABASE_URL
                  valueFrom:
                    {reference}:
                      name: till-db
                      key: {key}
"""

SETTINGS = """\
    from pydantic_settings import BaseSettings


    class Settings(BaseSettings):
        database_url: str


    def load() -> Settings:
        return Settings()
"""

ENV = """\
    from alembic import context
    from sqlalchemy import create_engine, pool

    from till.settings import load


    def run_migrations_online() -> None:
        engine = create_engine(load().database_url, poolclass=pool.NullPool)
        with engine.connect() as connection:
            context.configure(connection=connection)
            with context.begin_transaction():
                context.run_migrations()


    run_migrations_online()
"""


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize("kind, field, encode, reference, key, expected", [
    ("Secret", "stringData", False, "secretKeyRef", "pooled-url", [(8, "OG402")]),
    ("Secret", "data", True, "secretKeyRef", "pooled-url", [(8, "OG402")]),
    ("ConfigMap", "data", False, "configMapKeyRef", "pooled-url", [(8, "OG402")]),
    ("Secret", "stringData", False, "secretKeyRef", "direct-url", []),
    ("Secret", "stringData", False, "configMapKeyRef", "pooled-url", []),  # (no ConfigMap of that name)
])
def test_a_variable_taken_from_a_secret(tmp_path, kind, field, encode, reference, key, expected):
    pooled, direct = (_b64(POOLED), _b64(DIRECT)) if encode else (POOLED, DIRECT)
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'till'\n", "till/__init__.py": "",
                     "till/settings.py": SETTINGS, "migrations/env.py": ENV,
                     "deploy/secret.yaml": SECRET.format(kind=kind, field=field, pooled=pooled, direct=direct),
                     "deploy/migrate.yaml": JOB.format(reference=reference, key=key)})
    assert findings(tmp_path, "migrations/env.py", codes=("OG402",)) == expected
