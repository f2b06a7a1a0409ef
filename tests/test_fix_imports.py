"""Fixes a reviewer would merge: the guard's import goes where isort and ruff want it, and a fix never imports
a name the module already uses for something else. Judged by the real ruff (``I001``, ``F811``, ``F821``)."""
from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import script

JOB = '''

@scheduler.scheduled_job("cron", hour=6)
def send_renewal_reminders():
    for account in accounts_due():
        send_mail(account)
'''

SCHEDULER = 'scheduler = BackgroundScheduler(timezone="UTC")\n'

# Each file is isort-clean as written (ruff's own --fix is applied first to be sure); after the fix it must be.
LAYOUTS = {
    "docstring, future, three sections": '''\
        """Nightly jobs."""
        from __future__ import annotations

        import logging

        from apscheduler.schedulers.background import BackgroundScheduler

        from app.mail import accounts_due, send_mail

        log = logging.getLogger(__name__)
        ''',
    "standard library and first party only": '''\
        import os

        from app.mail import accounts_due, send_mail
        from app.scheduling import scheduler

        os
        ''',
    "first party only": '''\
        from app.mail import accounts_due, send_mail
        from app.scheduling import scheduler
        ''',
    "a comment above the imports": '''\
        # The nightly jobs of the service.
        from apscheduler.schedulers.background import BackgroundScheduler
        from app.mail import accounts_due, send_mail
        ''',
    "the guards already imported": '''\
        from apscheduler.schedulers.background import BackgroundScheduler
        from onceguard.guards import run_once

        from app.mail import accounts_due, send_mail

        run_once
        ''',
    "straight and from imports of a section": '''\
        import zoneinfo
        from datetime import timedelta

        import apscheduler
        from apscheduler.schedulers.background import BackgroundScheduler
        from pydantic import BaseModel

        from app.mail import accounts_due, send_mail

        apscheduler, BaseModel, timedelta, zoneinfo
        ''',
}


def _ruff() -> list:
    found = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert found, "ruff is a test dependency (pip install '.[test]')"
    return [found]


def _project(tmp_path: Path, header: str) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'service'\n", encoding="utf-8")
    (tmp_path / "app").mkdir()
    for name in ("__init__", "mail"):
        (tmp_path / "app" / f"{name}.py").write_text("", encoding="utf-8")
    (tmp_path / "app" / "scheduling.py").write_text(
        "from apscheduler.schedulers.background import BackgroundScheduler\n\n" + SCHEDULER + "scheduler.start()\n",
        encoding="utf-8")
    header = textwrap.dedent(header)
    source = header + ("\n" + SCHEDULER if "BackgroundScheduler" in header else "") + JOB
    (tmp_path / "jobs.py").write_text(source, encoding="utf-8")
    subprocess.run(_ruff() + ["check", "--select", "I", "--fix", "--quiet", "jobs.py"], cwd=tmp_path)
    return tmp_path


def _ruff_clean(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(_ruff() + ["check", "--isolated", "--select", "I,F", "--ignore", "F401", "jobs.py"],
                          cwd=root, capture_output=True, text=True)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_the_inserted_import_keeps_an_isort_clean_file_clean(tmp_path, layout):
    root = _project(tmp_path, LAYOUTS[layout])
    before = _ruff_clean(root)
    assert before.returncode == 0, before.stdout
    fixed = subprocess.run(script("onceguard") + ["check", "jobs.py", "--fix", "--unsafe-fixes", "--no-cache"],
                           cwd=root, capture_output=True, text=True)
    text = (root / "jobs.py").read_text(encoding="utf-8")
    assert "if not claim_period(" in text and "import claim_period" in text.replace("claim_period, ", "import claim_period"), \
        fixed.stdout + fixed.stderr + text
    after = _ruff_clean(root)
    assert after.returncode == 0, f"{after.stdout}\n{text}"
    # and ruff's own sorting has nothing left to move
    sorted_again = subprocess.run(_ruff() + ["check", "--select", "I", "--fix", "--quiet", "jobs.py"], cwd=root)
    assert sorted_again.returncode == 0 and (root / "jobs.py").read_text(encoding="utf-8") == text


@pytest.mark.parametrize("clash", [
    "def claim_period():\n    return True\n",
    "from app.scheduling import claim_period\n",
    "claim_period = None\n",
])
def test_a_name_the_module_already_uses_is_never_imported_over(tmp_path, clash):
    root = _project(tmp_path, LAYOUTS["docstring, future, three sections"])
    original = (root / "jobs.py").read_text(encoding="utf-8") + "\n\n" + clash
    (root / "jobs.py").write_text(original, encoding="utf-8")
    fixed = subprocess.run(script("onceguard") + ["check", "jobs.py", "--fix", "--unsafe-fixes", "--no-cache"],
                           cwd=root, capture_output=True, text=True)
    assert (root / "jobs.py").read_text(encoding="utf-8") == original
    assert "fix not applied: `claim_period` already names something else" in fixed.stderr, fixed.stderr
    assert "OG201" in fixed.stdout and "Fixed 1" not in fixed.stderr + fixed.stdout


@pytest.mark.parametrize("zone_source, zone", [
    ('BackgroundScheduler(timezone="America/New_York")', "America/New_York"),
    ('BackgroundScheduler(timezone=ZoneInfo("Europe/Berlin"))', "Europe/Berlin"),
])
def test_a_daily_job_in_a_named_zone_claims_the_zones_calendar_day(tmp_path, zone_source, zone):
    """A fixed period of 86400 s is a UTC day: a 19:30 New York job would lose its run the day DST starts."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'service'\n", encoding="utf-8")
    source = ("from zoneinfo import ZoneInfo\n\nfrom apscheduler.schedulers.background import BackgroundScheduler\n\n"
              f"scheduler = {zone_source}\n\n\n"
              '@scheduler.scheduled_job("cron", hour=19, minute=30)\ndef send_digest():\n    mailer.send("digest")\n\n\n'
              '@scheduler.scheduled_job("interval", minutes=5)\ndef poll():\n    mailer.send("poll")\n\n\nZoneInfo\n')
    (tmp_path / "jobs.py").write_text(source, encoding="utf-8")
    subprocess.run(script("onceguard") + ["check", "jobs.py", "--fix", "--unsafe-fixes", "--no-cache"],
                   cwd=tmp_path, capture_output=True, text=True)
    text = (tmp_path / "jobs.py").read_text(encoding="utf-8")
    assert f'if not claim_period("jobs.send_digest", "day", tz="{zone}"):' in text, text
    assert 'if not claim_period("jobs.poll", 300):' in text, text
