"""The linter and onceguard.guards: the guards count as claims with no configuration, and the fixes
write them in."""
from __future__ import annotations

import pytest

from onceguard.config import from_mapping
from onceguard.engine import check_source


def _codes(source: str, tmp_path, name: str = "jobs.py") -> set:
    path = tmp_path / name
    path.write_text(source)
    found = check_source(source.encode(), str(path), from_mapping({}, root=str(tmp_path), where="test"))
    return {(d.line, d.code) for d in found}


_UNGUARDED = """
from apscheduler.schedulers.background import BackgroundScheduler
{imports}

scheduler = BackgroundScheduler()


@scheduler.scheduled_job("interval", minutes=5)
{async_}def send_reminders():
{guard}
    for user in due_users():
        mailer.send(user.email, "reminder")
"""


@pytest.mark.parametrize("imports, async_, guard", [
    ("from onceguard.guards import claim_period", "",
     '    if not claim_period("jobs.send_reminders", 300):\n        return'),
    ("from onceguard import guards", "",
     '    if not guards.claim_period("jobs.send_reminders", 300):\n        return'),
    ("import onceguard.guards", "",
     '    if not onceguard.guards.claim_once("jobs.send_reminders", 300):\n        return'),
    ("from onceguard.guards import aclaim_period", "async ",
     '    if not await aclaim_period("jobs.send_reminders", 300):\n        return'),
    ("from onceguard.guards import arun_once as once", "async ",
     '    if not await once("jobs.send_reminders", 300, work):\n        return'),
    ("from onceguard.guards import arun_exclusive", "async ",
     '    await arun_exclusive("jobs.send_reminders", 60, work)\n    return'),
])
def test_a_job_that_begins_with_a_guard_is_clean(tmp_path, imports, async_, guard):
    source = _UNGUARDED.format(imports=imports, async_=async_, guard=guard)
    assert _codes(source, tmp_path) == set()


def test_the_same_job_without_a_guard_is_flagged(tmp_path):
    source = _UNGUARDED.format(imports="", async_="", guard="    pass")
    assert _codes(source, tmp_path) == {(9, "OG201")}


def test_a_guard_that_is_not_first_does_not_count(tmp_path):
    source = _UNGUARDED.format(
        imports="from onceguard.guards import claim_period", async_="",
        guard='    mailer.send("ops@example.com", "starting")\n    if not claim_period("jobs.x", 300):\n        return')
    assert _codes(source, tmp_path) == {(9, "OG201")}
