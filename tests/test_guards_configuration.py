"""OG205: a project that calls the guards but never configures them where every replica starts. Judged over
the whole project through the installed console script, and as flake8 sees one file."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

JOBS = '''\
from onceguard.guards import claim_period

from .mail import send_reminders


def remind() -> None:
    if not claim_period("reminders.daily", "day", tz="UTC"):
        return
    send_reminders()
'''

MAIN_WITH_LIFESPAN = '''\
import os
from contextlib import asynccontextmanager

from fastapi import FastAPI
from onceguard import guards


@asynccontextmanager
async def lifespan(app):
    guards.configure(redis=os.environ["REDIS_URL"])
    yield


app = FastAPI(lifespan=lifespan)
'''


def _write(root: Path, files: dict) -> None:
    (root / "pyproject.toml").write_text("[project]\nname = 'service'\n", encoding="utf-8")
    for rel, text in {"app/__init__.py": "", "app/mail.py": "def send_reminders():\n    pass\n", **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def _og205(onceguard, root: Path) -> list:
    result = onceguard("check", ".", "--format", "json", "--no-cache", cwd=root)
    assert result.returncode in (0, 1), result.stderr
    return [f for f in json.loads(result.stdout) if f["code"] == "OG205"]


@pytest.mark.parametrize("where, files", [
    ("a lifespan hook", {"app/main.py": MAIN_WITH_LIFESPAN}),
    ("a settings module at import", {"app/settings.py": "import os\nfrom onceguard.guards import configure\n\n"
                                     "configure(postgres=os.environ['DATABASE_URL'])\n"}),
    ("AppConfig.ready", {"app/apps.py": "from django.apps import AppConfig\nfrom onceguard import guards as g\n\n\n"
                         "class ServiceConfig(AppConfig):\n    name = 'app'\n\n    def ready(self):\n"
                         "        g.configure(redis='redis://redis:6379/0')\n"}),
])
def test_configured_where_the_service_starts_is_silent(onceguard, tmp_path, where, files):
    _write(tmp_path, {"app/jobs.py": JOBS, **files})
    assert _og205(onceguard, tmp_path) == [], where


def test_never_configured_is_reported_at_the_first_guard_of_each_module(onceguard, tmp_path):
    _write(tmp_path, {"app/jobs.py": JOBS, "app/main.py": MAIN_WITH_LIFESPAN.replace(
        '    guards.configure(redis=os.environ["REDIS_URL"])\n', "    guards\n")})
    (found,) = _og205(onceguard, tmp_path)
    assert (found["path"], found["line"]) == ("app/jobs.py", 7)
    assert "configure" in found["message"] and found["related"] == []


@pytest.mark.parametrize("where, rel, text", [
    ("a test fixture", "tests/conftest.py",
     "import pytest\nfrom onceguard import guards\n\n\n@pytest.fixture(autouse=True)\ndef claims():\n"
     "    guards.configure(redis='redis://localhost:6379/15')\n"),
    ("a management command", "app/management/commands/backfill.py",
     "from django.core.management.base import BaseCommand\nfrom onceguard import guards\n\n\n"
     "class Command(BaseCommand):\n    def handle(self, *args, **options):\n"
     "        guards.configure(redis='redis://redis:6379/0')\n"),
])
def test_a_configure_that_only_tests_or_an_operator_run_does_not_count(onceguard, tmp_path, where, rel, text):
    _write(tmp_path, {"app/jobs.py": JOBS, rel: text})
    (found,) = _og205(onceguard, tmp_path)
    assert found["path"] == "app/jobs.py", where
    (related,) = found["related"]
    assert related["path"] == rel and "not where the service starts" in related["message"]


def test_flake8_speaks_only_of_a_program_all_in_its_file(flake8, tmp_path):
    _write(tmp_path, {"app/jobs.py": JOBS})
    assert "OG205" not in flake8("--select", "OG", "app/jobs.py", cwd=tmp_path).stdout
    program = JOBS.replace("from .mail import send_reminders\n", "") .replace("    send_reminders()\n", "    print('due')\n")
    program += "\n\nif __name__ == '__main__':\n    remind()\n"
    (tmp_path / "worker.py").write_text(program, encoding="utf-8")
    assert "worker.py:6:12: OG205" in flake8("--select", "OG", "worker.py", cwd=tmp_path).stdout
