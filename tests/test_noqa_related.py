"""A finding that spans several places is answered by a ``noqa`` at any of them: its own line, or the line
of one of its related places, in this file or another.  The result cache follows such a comment in a related
file, ``--add-noqa`` still writes at the finding's own line, and a ``noqa`` naming another code answers
nothing."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import List

import pytest

from onceguard.config import from_mapping
from onceguard.engine.check import check_source
from onceguard.model import Related
from onceguard.project.index import clear_cache, recording
from onceguard.rules.base import Rule

from test_related_outputs import write_project
from test_report_formats import check, onceguard_command


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path / "svc")


def findings(project: Path, *args: str) -> List[tuple]:
    result = check(project, "--format", "json", *args)
    assert result.returncode in (0, 1), result.stderr
    return sorted((d["path"], d["line"], d["code"]) for d in json.loads(result.stdout or "[]"))


def cached(project: Path) -> List[tuple]:
    result = subprocess.run([*onceguard_command(), "check", "--format", "json"], cwd=project,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode in (0, 1), result.stderr
    return sorted((d["path"], d["line"], d["code"]) for d in json.loads(result.stdout or "[]"))


def comment(path: Path, line: int, text: str) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[line - 1] = lines[line - 1].rstrip("\n") + f"  {text}\n"
    path.write_text("".join(lines), encoding="utf-8")


SEEDING = ("app/db/seed.py", 16, "OG603")
JOB = ("app/jobs.py", 4, "OG201")


def test_the_project_reports_both_cross_file_findings(project: Path) -> None:
    # The starting point of every test here: each finding names places in other files.
    assert findings(project) == sorted([SEEDING, JOB])


@pytest.mark.parametrize("where, line", [("app/main.py", 10), ("app/db/bootstrap.py", 5)])
def test_a_noqa_naming_the_code_on_a_related_line_in_another_file(project: Path, where: str, line: int) -> None:
    comment(project / where, line, "# noqa: OG603")
    assert findings(project) == [JOB]


def test_a_bare_noqa_on_a_related_line(project: Path) -> None:
    comment(project / "app" / "scheduling.py", 3, "# noqa")
    assert findings(project) == [SEEDING]


def test_a_noqa_on_the_finding_line_still_works(project: Path) -> None:
    comment(project / "app" / "db" / "seed.py", 16, "# noqa: OG603")
    assert findings(project) == [JOB]


def test_a_noqa_for_another_code_on_a_related_line_answers_nothing(project: Path) -> None:
    comment(project / "app" / "main.py", 10, "# noqa: OG201")
    comment(project / "app" / "scheduling.py", 3, "# noqa: OG603")
    assert findings(project) == sorted([SEEDING, JOB])


def test_a_noqa_on_a_line_next_to_the_related_place_answers_nothing(project: Path) -> None:
    comment(project / "app" / "main.py", 9, "# noqa: OG603")
    assert findings(project) == sorted([SEEDING, JOB])


def test_a_file_wide_noqa_in_a_related_file_does_not_reach_the_finding(project: Path) -> None:
    main = project / "app" / "main.py"
    main.write_text("# onceguard: noqa\n" + main.read_text(encoding="utf-8"), encoding="utf-8")
    # The call moved one line down and the file-wide comment is that file's own business.
    assert findings(project) == sorted([SEEDING, JOB])


def test_the_cache_follows_a_noqa_added_and_removed_on_a_related_line(project: Path) -> None:
    assert cached(project) == sorted([SEEDING, JOB])
    assert cached(project) == sorted([SEEDING, JOB])  # answered from the cache
    main = project / "app" / "main.py"
    original = main.read_text(encoding="utf-8")
    comment(main, 10, "# noqa: OG603")
    assert cached(project) == [JOB]
    assert cached(project) == [JOB]
    # The suppressed finding's related file is still a dependency of the (now empty) result.
    store = json.loads(next((project / ".onceguard_cache").glob("results-*.json")).read_text(encoding="utf-8"))
    (entry,) = [v for k, v in store.items() if k.endswith(os.path.join("app", "db", "seed.py"))]
    assert entry[3] == [] and str(main) in entry[4]
    main.write_text(original, encoding="utf-8")
    assert cached(project) == sorted([SEEDING, JOB])


def test_add_noqa_writes_at_the_finding_line_only(project: Path) -> None:
    before = {p: p.read_text(encoding="utf-8") for p in project.rglob("*.py")}
    result = subprocess.run([*onceguard_command(), "check", "--no-cache", "--add-noqa"], cwd=project,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    changed = {p.relative_to(project).as_posix() for p, text in before.items() if p.read_text(encoding="utf-8") != text}
    assert changed == {"app/db/seed.py", "app/jobs.py"}
    assert (project / "app" / "db" / "seed.py").read_text(encoding="utf-8").splitlines()[15].endswith("# noqa: OG603")
    assert (project / "app" / "jobs.py").read_text(encoding="utf-8").splitlines()[3].endswith("# noqa: OG201")
    assert findings(project) == []


# --- the engine, with a rule that names places directly ----------------------------------------------------

class _Names(Rule):
    code = "OG201"
    name = "unguarded-scheduled-job"
    summary = "test rule"
    triggers = (b"job",)

    def __init__(self, *places: Related) -> None:
        self.places = places

    def check(self, facts):
        yield self.finding(facts.tree.body[0], "m", "s", related=self.places)


def run_rule(path: Path, source: str, *places: Related):
    clear_cache()
    config = from_mapping({}, root=str(path.parent))
    return check_source(source.encode(), str(path), config, rules=[_Names(*places)], cross_file=True)


def test_a_related_place_in_the_same_file_reads_the_text_being_checked(tmp_path: Path) -> None:
    # An editor's unsaved text: the comment is in the buffer, not on disk.
    checked = tmp_path / "job.py"
    checked.write_text("job = 1\nhelper = 2\n", encoding="utf-8")
    place = Related(str(checked), 2, 1, "here")
    assert run_rule(checked, "job = 1\nhelper = 2\n", place)
    assert run_rule(checked, "job = 1\nhelper = 2  # noqa: OG201\n", place) == []
    assert run_rule(checked, "job = 1\nhelper = 2  # noqa: OG1\n", place)


def test_a_related_place_given_relative_to_the_working_directory(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "other.py").write_text("x = 1\ny = 2  # noqa: OG2\n", encoding="utf-8")
    checked = tmp_path / "job.py"
    assert run_rule(checked, "job = 1\n", Related("other.py", 2, 1, "there")) == []
    assert run_rule(checked, "job = 1\n", Related("other.py", 1, 1, "there"))


def test_related_places_that_cannot_be_read_suppress_nothing(tmp_path: Path) -> None:
    checked = tmp_path / "job.py"
    (tmp_path / "broken.py").write_text("def (:\n  # noqa\n", encoding="utf-8")  # not Python: lines still read
    (tmp_path / "other.py").write_text("x = 1\n", encoding="utf-8")
    assert run_rule(checked, "job = 1\n", Related(str(tmp_path / "broken.py"), 2, 1, "there")) == []
    for place in (Related(str(tmp_path / "missing.py"), 1, 1, "gone"), Related(str(tmp_path / "other.py"), 7, 1, "past the end"),
                  Related(str(tmp_path / "other.py"), 0, 1, "no line"), Related(str(tmp_path), 1, 1, "a directory")):
        assert len(run_rule(checked, "job = 1\n", place)) == 1, place


def test_a_related_file_read_for_its_noqa_is_a_dependency(tmp_path: Path) -> None:
    other = tmp_path / "other.py"
    other.write_text("x = 1  # noqa\n", encoding="utf-8")
    checked = tmp_path / "job.py"
    clear_cache()
    config = from_mapping({}, root=str(tmp_path))
    with recording() as read:
        found = check_source(b"job = 1\n", str(checked), config, rules=[_Names(Related(str(other), 1, 1, "x"))],
                             cross_file=True)
    assert found == [] and str(other) in read
