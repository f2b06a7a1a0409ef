"""Deployment files that describe one instance.

A file made for a developer's machine (``docker-compose.dev.yml``, ``Dockerfile.local``, anything under
``dev/`` or ``.devcontainer/``) runs one copy of each service, and so does a compose service with a fixed
``container_name`` (compose refuses to scale it past one): what they run is not run in every replica.
"""
from __future__ import annotations

import pytest
from test_deployment import steps, write

from onceguard.project import deployment

SERVICE = """\
    services:
      api:
        build: .
        command: sh -c "alembic upgrade head && exec uvicorn app.main:app"
{extra}"""


@pytest.mark.parametrize("name, extra, per_replica", [
    ("docker-compose.yml", "", True),
    ("docker-compose.dev.yml", "", False),
    ("compose.local.yaml", "", False),
    ("dev/docker-compose.yml", "", False),
    (".devcontainer/docker-compose.yml", "", False),
    ("docker-compose.yml", "        container_name: api\n", False),
    ("docker-compose.yml", "        container_name: api\n        deploy:\n          replicas: 3\n", False),
])
def test_one_instance_files_and_services(tmp_path, name, extra, per_replica):
    write(tmp_path, {"app/__init__.py": "", "app/main.py": "", "alembic.ini": "[alembic]\n",
                     name: SERVICE.format(extra=extra)})
    found = steps(tmp_path)
    assert ((deployment.ALEMBIC_UPGRADE, "alembic.ini", True) in found) == per_replica, found
