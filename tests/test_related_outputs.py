"""Findings that depend on other files carry those places (``related``), and every output shows them:
JSON keys with paths relative as the finding's, the text and grouped ``via`` line, GitHub's ``(via …)``,
SARIF ``relatedLocations`` and ``codeFlows``; the result cache keeps them and drops a result when one of
its related files changes.  Run through the installed console script, as a user runs it."""
from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import List

import pytest

from onceguard.engine import runner
from onceguard.model import Diagnostic, Related
from onceguard.rules.base import Rule
from onceguard.config import from_mapping
from test_report_formats import check, onceguard_command, validate_sarif

import subprocess

#: start-up code in main.py reaches seeding in db/seed.py through db/bootstrap.py (OG603), and a job
#: registered in jobs.py, on a scheduler made in scheduling.py, is defined without a claim in tasks.py (OG201)
FILES = {
    "pyproject.toml": '[project]\nname = "svc"\n\n[tool.onceguard]\n',
    "app/__init__.py": "",
    "app/db/__init__.py": "",
    "app/main.py": """
        from contextlib import asynccontextmanager

        from fastapi import FastAPI

        from app.db.bootstrap import prepare_database


        @asynccontextmanager
        async def lifespan(app):
            await prepare_database()
            yield


        app = FastAPI(lifespan=lifespan)
    """,
    "app/db/bootstrap.py": """
        from app.db.seed import Options


        async def prepare_database() -> None:
            await Options.fill_defaults({"theme": "light"})
    """,
    "app/db/seed.py": """
        import time

        from sqlalchemy import select

        from app.db.session import get_db
        from app.orm import Option


        class Options:
            @staticmethod
            async def fill_defaults(defaults: dict) -> None:
                async with get_db() as db:
                    result = await db.execute(select(Option.key))
                    known_keys = {row[0] for row in result.all()}
                    for key, value in defaults.items():
                        if key not in known_keys:
                            db.add(Option(key=key, value=value, updated_at=int(time.time())))
                    await db.commit()
    """,
    "app/jobs.py": """
        from app.scheduling import scheduler
        from app.tasks import send_digest

        scheduler.add_job(send_digest, "interval", minutes=5)
    """,
    "app/scheduling.py": """
        from apscheduler.schedulers.background import BackgroundScheduler

        scheduler = BackgroundScheduler(timezone="UTC")
    """,
    "app/tasks.py": """
        from app.db.session import engine


        def send_digest() -> None:
            with engine.begin() as conn:
                conn.exec_driver_sql("UPDATE users SET digest_sent = now()")
    """,
}

SEEDING_PATH = [
    {"path": "app/main.py", "line": 10, "column": 11, "message": "`lifespan` calls `prepare_database()`"},
    {"path": "app/db/bootstrap.py", "line": 5, "column": 11, "message": "`prepare_database` calls `fill_defaults()`"},
]
JOB_PLACES = [
    {"path": "app/scheduling.py", "line": 3, "column": 13, "message": "`scheduler` is made here (APScheduler 3)"},
    {"path": "app/tasks.py", "line": 4, "column": 1, "message": "`send_digest` is defined here, without a claim"},
    # the effect that makes the job more than per-process work, after the way to it
    {"path": "app/tasks.py", "line": 6, "column": 9, "message": "`conn.exec_driver_sql(...)` acts outside the process"},
]


def write_project(root: Path) -> Path:
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path / "svc")


def by_code(findings: List[dict]) -> dict:
    return {f["code"]: f for f in findings}


def run_json(project: Path, *args: str) -> List[dict]:
    result = check(project, "--format", "json", *args)
    assert result.returncode == 1, result.stderr
    return json.loads(result.stdout)


def test_json_related_paths_are_relative_like_the_findings(project: Path) -> None:
    found = by_code(run_json(project))
    assert found["OG603"]["path"] == "app/db/seed.py" and found["OG603"]["line"] == 16
    assert found["OG603"]["related"] == SEEDING_PATH
    assert found["OG201"]["path"] == "app/jobs.py" and found["OG201"]["line"] == 4
    assert found["OG201"]["related"] == JOB_PLACES


def test_json_related_from_another_directory(project: Path) -> None:
    # Checked from the parent: both the finding's path and its related paths are relative to it.
    result = subprocess.run([*onceguard_command(), "check", "--no-cache", "--format", "json", "svc"],
                            cwd=project.parent, capture_output=True, text=True, timeout=120)
    found = by_code(json.loads(result.stdout))
    assert found["OG603"]["path"] == os.path.join("svc", "app", "db", "seed.py")
    assert [r["path"] for r in found["OG603"]["related"]] == ["svc/app/main.py", "svc/app/db/bootstrap.py"]


def test_a_finding_the_file_alone_proves_has_no_way_from_elsewhere(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.onceguard]\n", encoding="utf-8")
    (tmp_path / "jobs.py").write_text(textwrap.dedent("""
        from apscheduler.schedulers.background import BackgroundScheduler

        from app.db import engine

        scheduler = BackgroundScheduler(timezone="UTC")


        def send_digest() -> None:
            with engine.begin() as conn:
                conn.exec_driver_sql("UPDATE users SET digest_sent = now()")


        scheduler.add_job(send_digest, "interval", minutes=5)
    """), encoding="utf-8")
    (finding,) = run_json(tmp_path)
    # No place in another file: the one related place is the job's own effect, in this file.
    assert finding["code"] == "OG201" and finding["related"] == [
        {"path": "jobs.py", "line": 11, "column": 9, "message": "`conn.exec_driver_sql(...)` acts outside the process"}]
    text = check(tmp_path).stdout
    assert [line.strip() for line in text.splitlines() if line.strip().startswith("via ")] == [
        "via jobs.py:11 `conn.exec_driver_sql(...)` acts outside the process"]


def test_text_shows_the_way_before_the_help(project: Path) -> None:
    lines = check(project).stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("app/db/seed.py:16:17: OG603 "))
    assert lines[start + 1] == (
        "  via app/main.py:10 `lifespan` calls `prepare_database()` \u2192 "
        "app/db/bootstrap.py:5 `prepare_database` calls `fill_defaults()`"
    )
    assert lines[start + 2].startswith("  help: ")
    job = next(i for i, line in enumerate(lines) if line.startswith("app/jobs.py:4:1: OG201 "))
    assert lines[job + 1] == ("  via app/scheduling.py:3 `scheduler` is made here (APScheduler 3) \u2192 "
                              "app/tasks.py:4 `send_digest` is defined here, without a claim \u2192 "
                              "app/tasks.py:6 `conn.exec_driver_sql(...)` acts outside the process")


def test_grouped_and_concise(project: Path) -> None:
    grouped = check(project, "--format", "grouped").stdout.splitlines()
    start = grouped.index("app/db/seed.py:")
    assert grouped[start + 1].startswith("  16:17 OG603 ")
    assert grouped[start + 2].strip().startswith("via app/main.py:10 `lifespan` calls `prepare_database()` \u2192 ")
    concise = check(project, "--format", "concise").stdout.splitlines()
    assert len(concise) == 2 and not any("via app/main.py:10 `lifespan`" in line for line in concise)


def test_github_message_carries_the_related_places(project: Path) -> None:
    annotations = check(project, "--format", "github").stdout.splitlines()
    seeding = next(line for line in annotations if "title=OG603" in line)
    assert seeding.startswith("::warning file=app/db/seed.py,line=16,")
    message = seeding.split("::", 2)[2]
    assert ("(via app/main.py:10 `lifespan` calls `prepare_database()` \u2192 "
            "app/db/bootstrap.py:5 `prepare_database` calls `fill_defaults()`)%0A") in message


def test_sarif_related_locations_and_code_flow(project: Path) -> None:
    result = check(project, "--format", "sarif")
    log = json.loads(result.stdout)
    validate_sarif(log)
    (run,) = log["runs"]
    seeding = next(r for r in run["results"] if r["ruleId"] == "OG603")
    related = seeding["relatedLocations"]
    assert [r["id"] for r in related] == [1, 2]
    assert [(r["physicalLocation"]["artifactLocation"], r["physicalLocation"]["region"], r["message"]["text"])
            for r in related] == [
        ({"uri": place["path"], "uriBaseId": "%SRCROOT%"},
         {"startLine": place["line"], "startColumn": place["column"]}, place["message"])
        for place in SEEDING_PATH
    ]
    (flow,) = seeding["codeFlows"]
    (thread,) = flow["threadFlows"]
    steps = thread["locations"]
    assert [s["executionOrder"] for s in steps] == [1, 2, 3]
    assert [s["location"]["physicalLocation"]["artifactLocation"]["uri"] for s in steps] == [
        "app/main.py", "app/db/bootstrap.py", "app/db/seed.py"]
    # The flow ends at the finding itself.
    assert steps[-1]["location"]["physicalLocation"] == seeding["locations"][0]["physicalLocation"]
    job = next(r for r in run["results"] if r["ruleId"] == "OG201")
    assert [r["physicalLocation"]["artifactLocation"]["uri"] for r in job["relatedLocations"]] == [
        "app/scheduling.py", "app/tasks.py", "app/tasks.py"]


def test_sarif_without_related_has_neither_key(tmp_path: Path) -> None:
    from onceguard.surfaces.report import ReportOptions
    from onceguard.surfaces.report import sarif

    plain = Diagnostic("OG201", "unguarded-scheduled-job", 3, 1, 3, 9, "message", "").with_path("jobs.py")
    log = json.loads(sarif.render([plain], ReportOptions()))
    validate_sarif(log)
    (result,) = log["runs"][0]["results"]
    assert "relatedLocations" not in result and "codeFlows" not in result


# --- the result cache ---------------------------------------------------------------------------------

def cache_file(project: Path) -> Path:
    (found,) = list((project / ".onceguard_cache").glob("results-*.json"))
    return found


def test_cache_keeps_related_and_drops_a_result_when_a_related_file_changes(project: Path) -> None:
    first = by_code(_cached(project))
    assert first["OG603"]["related"] == SEEDING_PATH

    # The second run answers from the cache: mark the stored related message to see it come back.
    store = cache_file(project)
    entries = json.loads(store.read_text(encoding="utf-8"))
    (key,) = [k for k in entries if k.endswith(os.path.join("app", "db", "seed.py"))]
    stored = entries[key][3][0]["related"]
    assert [place["path"] for place in stored] == [
        str(project / "app" / "main.py"), str(project / "app" / "db" / "bootstrap.py")]  # absolute in the cache
    stored[0]["message"] = "read from the cache"
    store.write_text(json.dumps(entries), encoding="utf-8")
    second = by_code(_cached(project))
    assert second["OG603"]["related"][0]["message"] == "read from the cache"
    assert second["OG603"]["related"][0]["path"] == "app/main.py"  # made relative on the way out

    # A related file changes (two lines above the call): the result is computed again, with the new line.
    bootstrap = project / "app" / "db" / "bootstrap.py"
    bootstrap.write_text("# seeding\n\n" + bootstrap.read_text(encoding="utf-8"), encoding="utf-8")
    third = by_code(_cached(project))
    assert third["OG603"]["related"] == [SEEDING_PATH[0], {**SEEDING_PATH[1], "line": 7}]


def _cached(project: Path) -> List[dict]:
    result = subprocess.run([*onceguard_command(), "check", "--format", "json"], cwd=project,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and result.stdout, result.stderr
    return json.loads(result.stdout)


class _PointsElsewhere(Rule):
    """A finding whose verdict names a file the rule never read through the project index."""

    code = "OG201"
    name = "unguarded-scheduled-job"
    summary = "test rule"
    triggers = (b"job",)

    def __init__(self, other: str) -> None:
        self.other = other

    def check(self, facts):
        yield self.finding(facts.tree.body[0], "m", "s", related=[Related(self.other, 1, 1, "there")])


def test_a_related_file_is_a_dependency_even_when_the_index_never_read_it(tmp_path: Path, monkeypatch) -> None:
    checked = tmp_path / "job.py"
    checked.write_text("job = 1\n", encoding="utf-8")
    other = tmp_path / "other.py"
    other.write_text("x = 1\n", encoding="utf-8")
    monkeypatch.setattr(runner, "_rules_for", lambda config: [_PointsElsewhere(str(other))])
    path, _, _, found, others = runner.check_one((str(checked), from_mapping({}, root=str(tmp_path)), None))
    assert [place.path for d in found for place in d.related] == [str(other)]
    assert others == (str(other),)
