"""The CI-facing output of ``onceguard check``: github, sarif (validated against the SARIF 2.1.0
schema), grouped, concise, json, and the --exit-zero / --statistics / --output-file switches.
Run through the installed console script, as CI runs it."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List

import jsonschema
import pytest

from onceguard import docs
from onceguard.model import Diagnostic, Fix
from onceguard.rules.registry import ENGINE_CODES, all_codes
from onceguard.surfaces.report import ReportOptions, format_names
from onceguard.surfaces.report import github as github_format
from onceguard.surfaces.report import sarif as sarif_format
from samples import CLEAN, HAZARD, UNSTABLE_KEY

SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"


def onceguard_command() -> List[str]:
    script = Path(sys.executable).with_name("onceguard")
    if script.is_file():
        return [str(script)]
    found = shutil.which("onceguard")
    if found:
        return [found]
    return [sys.executable, "-m", "onceguard"]


def check(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*onceguard_command(), "check", "--no-cache", *args], cwd=project, capture_output=True, text=True, timeout=120,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "nightly"\n\n[tool.onceguard]\n', encoding="utf-8")
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "nightly.py").write_text(HAZARD, encoding="utf-8")
    (tmp_path / "jobs" / "keys.py").write_text(UNSTABLE_KEY, encoding="utf-8")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "cleanup.py").write_text(CLEAN, encoding="utf-8")
    return tmp_path


def findings(project: Path) -> List[dict]:
    result = check(project, "--format", "json")
    assert result.returncode == 1, result.stderr
    return json.loads(result.stdout)


def test_every_documented_format_is_offered() -> None:
    assert {"text", "json", "concise", "grouped", "github", "sarif"} <= set(format_names())


# --- github -------------------------------------------------------------------------------------

def test_github_annotations(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.onceguard]\nerror = ["OG104"]\n', encoding="utf-8")
    expected = findings(project)
    result = check(project, "--format", "github")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(expected)
    og101 = next(f for f in expected if f["code"] == "OG101")
    assert (
        f"::warning file=jobs/nightly.py,line={og101['line']},col={og101['column']},"
        f"endLine={og101['end_line']},endColumn={og101['end_column']},title=OG101 session-lock-on-pool::"
    ) in result.stdout
    og104 = [line for line in lines if "title=OG104 " in line]
    assert og104 and all(line.startswith("::error file=jobs/keys.py,") for line in og104)
    assert all(line.startswith(("::warning ", "::error ")) for line in lines)


def test_github_escaping() -> None:
    d = Diagnostic("OG101", "session-lock-on-pool", 3, 5, 3, 9, "50% of runs\r\nlose it", "use a: b, c",
                   path="app/we,ird:name%.py")
    line = github_format.annotation(d, ReportOptions())
    assert line.startswith("::warning file=app/we%2Cird%3Aname%25.py,line=3,col=5,endLine=3,endColumn=9,")
    assert line.endswith("::50%25 of runs%0D%0Alose it%0Ause a: b, c")
    assert "\n" not in line
    engine = Diagnostic("OG000", "cannot-parse", 1, 1, 1, 1, "cannot parse", path="x.py")
    assert github_format.annotation(engine, ReportOptions()).startswith("::error ")
    assert github_format.annotation(d, ReportOptions(error_codes=("OG1",))).startswith("::error ")


# --- sarif --------------------------------------------------------------------------------------

def validate_sarif(log: dict) -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    validator = jsonschema.Draft4Validator(schema)
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])


def test_sarif_is_valid_and_complete(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.onceguard]\nerror = ["OG103"]\n', encoding="utf-8")
    expected = findings(project)
    result = check(project, "--format", "sarif")
    assert result.returncode == 1, result.stderr
    log = json.loads(result.stdout)
    validate_sarif(log)
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]

    rules = run["tool"]["driver"]["rules"]
    ids = [rule["id"] for rule in rules]
    assert set(all_codes()) | set(ENGINE_CODES) == set(ids)
    for rule in rules:
        assert rule["name"] and rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
        if rule["id"] in ENGINE_CODES:
            continue
        assert rule["helpUri"].endswith(f"/{rule['id']}.md")
        text = docs.doc_text(rule["id"])
        if text is not None:  # a rule without its doc yet is test_rule_docs' business
            assert rule["help"]["markdown"] == text
            assert rule["fullDescription"]["text"] == " ".join(docs.sections(text)["What it flags"].split())
    assert "help" in rules[ids.index("OG101")]

    results = run["results"]
    assert len(results) == len(expected)
    by_rule = {r["ruleId"]: r for r in results}
    og101 = next(f for f in expected if f["code"] == "OG101")
    sarif101 = by_rule["OG101"]
    assert sarif101["level"] == "warning"
    assert ids[sarif101["ruleIndex"]] == "OG101"
    assert og101["message"] in sarif101["message"]["text"] and og101["suggestion"] in sarif101["message"]["text"]
    location = sarif101["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "jobs/nightly.py"
    assert location["region"] == {
        "startLine": og101["line"], "startColumn": og101["column"],
        "endLine": og101["end_line"], "endColumn": og101["end_column"],
    }
    if "OG103" in by_rule:
        assert by_rule["OG103"]["level"] == "error"

    # The OG104 finding has a fix: SARIF gets it as text replacements of keys.py.
    fixable = [r for r in results if r["ruleId"] == "OG104"]
    assert fixable, "OG104 example not reported; the test premise is wrong"
    (fix,) = fixable[0]["fixes"]
    assert fix["description"]["text"] == "replace hash() with zlib.crc32() of the encoded value"
    (change,) = fix["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "jobs/keys.py"
    # `import zlib` in its own section above `import psycopg`, and `hash(` -> `zlib.crc32(b` on line 3 (the rest of the call stays).
    assert change["replacements"] == [
        {"deletedRegion": {"startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 1},
         "insertedContent": {"text": "import zlib\n\n"}},
        {"deletedRegion": {"startLine": 3, "startColumn": 15, "endLine": 3, "endColumn": 20},
         "insertedContent": {"text": "zlib.crc32(b"}},
    ]
    assert "properties" not in fixable[0]


def test_sarif_as_code_scanning_reads_it(project: Path) -> None:
    """Fingerprints that survive edits elsewhere in the file, a precision per rule, help in markdown."""
    def results() -> dict:
        log = json.loads(check(project, "--format", "sarif").stdout)
        validate_sarif(log)
        (run,) = log["runs"]
        for rule in run["tool"]["driver"]["rules"]:
            assert rule["properties"]["precision"] in ("very-high", "high", "medium", "low"), rule
            assert rule["help"]["markdown"], rule
        return {(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]):
                (r["partialFingerprints"]["onceguardFindingHash/v1"], r["locations"][0]["physicalLocation"]["region"]["startLine"])
                for r in run["results"]}

    before = results()
    assert before and len({fingerprint for fingerprint, _ in before.values()}) == len(before)
    nightly = project / "jobs" / "nightly.py"
    nightly.write_text("# moved down by three lines\n\n\n" + nightly.read_text(encoding="utf-8"), encoding="utf-8")
    after = results()
    assert after.keys() == before.keys()
    for key, (fingerprint, line) in before.items():
        moved = 3 if key[1] == "jobs/nightly.py" else 0
        assert after[key] == (fingerprint, line + moved), key


def test_sarif_fix_without_a_computable_edit_is_still_valid(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    d = Diagnostic("OG101", "session-lock-on-pool", 2, 1, 2, 5, "m", "s", Fix("no-such-transform", "do it", "safe"),
                   path="missing.py")
    log = json.loads(sarif_format.render([d], ReportOptions()))
    validate_sarif(log)
    result = log["runs"][0]["results"][0]
    assert "fixes" not in result
    assert result["properties"]["fix"] == {"kind": "no-such-transform", "description": "do it", "applicability": "safe"}


def test_sarif_text_replacements() -> None:
    old = "import os\n\nKEY = hash('x')\n"
    new = "import os\nimport zlib\n\nKEY = zlib.crc32(b'x')\n"
    replacements = sarif_format.text_replacements(old, new)
    assert replacements[0]["deletedRegion"] == {"startLine": 2, "startColumn": 1, "endLine": 2, "endColumn": 1}
    assert replacements[0]["insertedContent"]["text"] == "import zlib\n"
    assert replacements[1]["deletedRegion"]["startLine"] == 3
    assert replacements[1]["insertedContent"]["text"] == "zlib.crc32(b"


# --- grouped, concise, json ---------------------------------------------------------------------

def test_grouped(project: Path) -> None:
    expected = findings(project)
    result = check(project, "--format", "grouped")
    assert result.returncode == 1
    out = result.stdout
    assert "jobs/keys.py:\n" in out and "jobs/nightly.py:\n" in out
    assert "app/cleanup.py" not in out
    og101 = next(f for f in expected if f["code"] == "OG101")
    section = out.split("jobs/nightly.py:\n", 1)[1].split("\n\n", 1)[0]
    assert f"{og101['line']}:{og101['column']}" in section and "OG101" in section
    assert f"\nFound {len(expected)} findings in 2 files.\n" in out
    fixable = sum(1 for f in expected if f["fix"] and f["fix"]["applicability"] == "unsafe")
    assert out.rstrip().endswith(f"{fixable} fixable with --fix --unsafe-fixes.")


def test_concise_is_one_line_per_finding(project: Path) -> None:
    expected = findings(project)
    result = check(project, "--format", "concise")
    lines = result.stdout.splitlines()
    assert len(lines) == len(expected)
    assert all(f["suggestion"] not in result.stdout for f in expected if f["suggestion"])


def test_json_keys_are_the_documented_ones(project: Path) -> None:
    keys = {"path", "line", "column", "end_line", "end_column", "code", "name", "message", "suggestion", "fix",
            "related"}
    for finding in findings(project):
        assert set(finding) == keys
    fix = next(f["fix"] for f in findings(project) if f["code"] == "OG104")
    assert set(fix) == {"kind", "description", "applicability"}


# --- switches -----------------------------------------------------------------------------------

def test_clean_tree_exits_zero(project: Path) -> None:
    result = check(project, "app")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == "All checks passed.\n" and result.stderr == ""
    for machine in ("json", "sarif", "github", "concise"):
        quiet = check(project, "app", "--format", machine)
        assert quiet.returncode == 0 and "All checks passed" not in quiet.stdout + quiet.stderr, machine


def test_exit_zero(project: Path) -> None:
    result = check(project, "--exit-zero")
    assert result.returncode == 0
    assert "OG101" in result.stdout


def test_statistics(project: Path) -> None:
    expected = findings(project)
    result = check(project, "--statistics", "--format", "concise")
    assert result.returncode == 1
    count101 = sum(1 for f in expected if f["code"] == "OG101")
    assert f"{count101:>5}  OG101  session-lock-on-pool" in result.stdout.splitlines()


def test_output_file(project: Path) -> None:
    target = project / "reports" / "onceguard.sarif"
    result = check(project, "--format", "sarif", "--output-file", str(target))
    assert result.returncode == 1
    assert result.stdout == ""
    log = json.loads(target.read_text(encoding="utf-8"))
    validate_sarif(log)
    assert {r["ruleId"] for r in log["runs"][0]["results"]} >= {"OG101", "OG104"}
