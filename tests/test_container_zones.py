"""OG202 when the deployment shows where the replicas run.

Containers of the project's one image, with no ``TZ`` set anywhere, all run in the image's zone: a schedule at
06:00 local time fires at the same instant in every replica.  A deployment that sets ``TZ`` for some replicas
(or runs them on hosts the project does not describe) can give them different zones.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

JOBS = """\
    import schedule

    from .mail import send_digest

    schedule.every().day.at("06:00").do(send_digest)
"""

COMPOSE = """\
services:
  worker:
    build: .
    command: python -m digest.worker
{environment}    deploy:
      replicas: 2
"""


@pytest.mark.parametrize("files, reported", [
    ({}, [(5, "OG202")]),
    ({"Dockerfile": "FROM python:3.12\nCMD [\"python\", \"-m\", \"digest.worker\"]\n"}, []),
    ({"docker-compose.yml": COMPOSE.format(environment="")}, []),
    ({"docker-compose.yml": COMPOSE.format(environment="    environment:\n      TZ: Europe/Berlin\n")},
     [(5, "OG202")]),
])
def test_one_image_in_one_zone(tmp_path, files, reported):
    write(tmp_path, {"digest/__init__.py": "", "digest/jobs.py": JOBS,
                     "digest/mail.py": "def send_digest():\n    pass\n"})
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert findings(tmp_path, "digest/jobs.py", codes=("OG202",)) == reported


def test_deployment_files_at_the_root_of_the_run_above_the_project(tmp_path, monkeypatch):
    """``app/pyproject.toml`` and the Dockerfile at the repository's root: checked from the root, the
    Dockerfile is the project's; checked from elsewhere, nothing shows where the replicas run."""
    write(tmp_path, {"app/digest/__init__.py": "", "app/digest/jobs.py": JOBS,
                     "app/digest/mail.py": "def send_digest():\n    pass\n"})
    (tmp_path / "app" / "pyproject.toml").write_text("[project]\nname = 'digest'\n")
    (tmp_path / "Dockerfile").write_text('FROM python:3.12\nCMD ["python", "-m", "digest.worker"]\n')
    monkeypatch.chdir(tmp_path)
    assert findings(tmp_path / "app", "digest/jobs.py", codes=("OG202",)) == []
    monkeypatch.chdir(tmp_path / "app" / "digest")
    assert findings(tmp_path / "app", "digest/jobs.py", codes=("OG202",)) == [(5, "OG202")]
