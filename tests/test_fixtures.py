"""fixtures/ are small applications; every line marked ``# expect: OG###`` must be reported, nothing else.

The same tree goes through the CLI and through a real flake8 process, and both must give exactly the
annotated set (``# expect-cli:`` lines only in the CLI, which reads across files).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from onceguard.docs import expected_findings

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
FIXTURE_FILES = sorted(FIXTURES.rglob("*.py"))


def annotated(cross_file: bool) -> set:
    expected = set()
    for path in FIXTURE_FILES:
        relative = path.relative_to(ROOT).as_posix()
        for line, code in expected_findings(path.read_text(encoding="utf-8"), cross_file=cross_file):
            expected.add((relative, line, code))
    return expected


def test_fixtures_exist_and_are_annotated():
    apps = {p.relative_to(FIXTURES).parts[0] for p in FIXTURE_FILES}
    assert len(apps) >= 3, apps
    assert annotated(cross_file=False), "fixtures carry no # expect: annotations"


def test_cli_reports_exactly_the_annotated_findings(onceguard):
    result = onceguard("check", "fixtures", "--format", "json", "--no-cache")
    assert result.returncode == 1, result.stderr
    found = {(d["path"], d["line"], d["code"]) for d in json.loads(result.stdout)}
    expected = annotated(cross_file=True)
    assert found - expected == set(), "reported but not annotated"
    assert expected - found == set(), "annotated but not reported"


def test_flake8_reports_exactly_the_annotated_findings(flake8):
    result = flake8("--isolated", "--select", "OG", "--format", "%(path)s|%(row)d|%(code)s", "fixtures")
    assert result.returncode == 1, result.stderr
    found = set()
    for line in result.stdout.splitlines():
        path, row, code = line.split("|")
        found.add((Path(path).as_posix().removeprefix("./"), int(row), code))
    expected = annotated(cross_file=False)
    assert found - expected == set(), "reported but not annotated"
    assert expected - found == set(), "annotated but not reported"


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_annotations_name_known_codes(path):
    from onceguard.rules.registry import all_codes

    for match in re.finditer(r"#\s*expect(?:-cli|-file)?:\s*([^\n]+)", path.read_text(encoding="utf-8")):
        for code in re.findall(r"OG\d{3}", match.group(1)):
            assert code in all_codes(), f"{path}: unknown code {code}"


def test_no_project_reports_exactly_what_one_file_proves(onceguard):
    # each file judged alone, as flake8 judges it: the `# expect:` lines and none of the `# expect-cli:` ones
    result = onceguard("check", "fixtures", "--format", "json", "--no-cache", "--no-project")
    assert result.returncode == 1, result.stderr
    found = {(d["path"], d["line"], d["code"]) for d in json.loads(result.stdout)}
    assert found == annotated(cross_file=False)


def test_the_cache_keeps_whole_project_and_single_file_results_apart(onceguard, tmp_path):
    import shutil

    project = tmp_path / "service"
    shutil.copytree(FIXTURES / "layered_service", project)

    def codes(*extra):
        result = onceguard("check", ".", "--format", "json", *extra, cwd=project)
        return sorted((d["path"], d["line"], d["code"]) for d in json.loads(result.stdout))

    whole = codes()
    assert whole, "the layered service has cross-file findings"
    assert codes("--no-project") == []
    assert codes() == whole  # read back from the cache, not the single-file answer
    assert (project / ".onceguard_cache").is_dir()
