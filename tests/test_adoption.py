"""What a team trips over once it uses the tool for real: reports that cannot be written, a setting of the
wrong type, and files the project does not own (ignored by git, installed libraries)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from samples import HAZARD


def _project(root: Path) -> Path:
    (root / "pyproject.toml").write_text("[project]\nname = 'app'\n", encoding="utf-8")
    (root / "app").mkdir()
    (root / "app" / "jobs.py").write_text(HAZARD, encoding="utf-8")
    return root


def _checked(result) -> set:
    assert result.returncode in (0, 1), result.stderr
    return {finding["path"] for finding in json.loads(result.stdout)}


# -- the report cannot be written: one line, exit 2 ---------------------------------------------------------


@pytest.mark.parametrize("target, reason", [
    ("/proc/nope/x.json", "No such file or directory"),
    ("/dev/full", "No space left on device"),
    ("{tmp}", "Is a directory"),
])
def test_an_output_file_that_cannot_be_written_is_one_line_and_exit_2(onceguard, tmp_path, target, reason):
    root = _project(tmp_path)
    target = target.format(tmp=tmp_path)
    result = onceguard("check", ".", "--format", "json", "--output-file", target, cwd=root)
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and target in lines[0] and reason in lines[0], result.stderr


def test_an_output_file_that_can_be_written_gets_the_report(onceguard, tmp_path):
    root = _project(tmp_path)
    result = onceguard("check", ".", "--format", "json", "--output-file", "out/report.json", cwd=root)
    assert result.returncode == 1, result.stderr
    assert {f["code"] for f in json.loads((root / "out" / "report.json").read_text())} == {"OG101", "OG103"}


# -- a setting of the wrong type ----------------------------------------------------------------------------


@pytest.mark.parametrize("setting", ['select = "OG201"', 'extend-exclude = "scripts"',
                                     'per-file-ignores = { "scripts/*" = "OG201" }'])
def test_a_string_where_a_list_is_expected_is_a_config_error(onceguard, tmp_path, setting):
    root = _project(tmp_path)
    (root / "pyproject.toml").write_text(f"[tool.onceguard]\n{setting}\n", encoding="utf-8")
    result = onceguard("check", ".", cwd=root)
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert len(result.stderr.strip().splitlines()) == 1 and "list" in result.stderr, result.stderr


# -- what the project does not own is not linted -------------------------------------------------------------


def _git_init(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)


def test_gitignored_files_and_directories_are_not_checked(onceguard, tmp_path):
    root = _project(tmp_path)
    _git_init(root)
    (root / ".gitignore").write_text("generated/\n*_local.py\n", encoding="utf-8")
    for rel in ("generated/jobs.py", "app/jobs_local.py", "app/sub/deep/generated/jobs.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(HAZARD, encoding="utf-8")
    # a nested .gitignore re-includes what an outer one left out, for its own folder only
    (root / "app" / "sub").mkdir(exist_ok=True)
    (root / "app" / "sub" / ".gitignore").write_text("!keep_local.py\n", encoding="utf-8")
    (root / "app" / "sub" / "keep_local.py").write_text(HAZARD, encoding="utf-8")
    checked = _checked(onceguard("check", ".", "--format", "json", "--no-cache", cwd=root))
    assert checked == {"app/jobs.py", "app/sub/keep_local.py"}, checked


def test_a_gitignore_outside_a_git_work_tree_means_nothing_but_dot_ignore_does(onceguard, tmp_path):
    root = _project(tmp_path)
    (root / ".gitignore").write_text("generated/\n", encoding="utf-8")
    (root / "generated").mkdir()
    (root / "generated" / "jobs.py").write_text(HAZARD, encoding="utf-8")
    assert "generated/jobs.py" in _checked(onceguard("check", ".", "--format", "json", "--no-cache", cwd=root))
    (root / ".ignore").write_text("generated/\n", encoding="utf-8")
    assert _checked(onceguard("check", ".", "--format", "json", "--no-cache", cwd=root)) == {"app/jobs.py"}


def test_respect_gitignore_false_checks_ignored_files_and_a_named_file_is_always_checked(onceguard, tmp_path):
    root = _project(tmp_path)
    _git_init(root)
    (root / ".gitignore").write_text("generated/\n", encoding="utf-8")
    (root / "generated").mkdir()
    (root / "generated" / "jobs.py").write_text(HAZARD, encoding="utf-8")
    named = _checked(onceguard("check", "generated/jobs.py", "--format", "json", "--no-cache", cwd=root))
    assert named == {"generated/jobs.py"}
    (root / "pyproject.toml").write_text("[tool.onceguard]\nrespect-gitignore = false\n", encoding="utf-8")
    checked = _checked(onceguard("check", ".", "--format", "json", "--no-cache", cwd=root))
    assert checked == {"app/jobs.py", "generated/jobs.py"}, checked


@pytest.mark.parametrize("folder", ["env-3.12", "tools/pyenv", "vendor/lib/python3.12/site-packages"])
def test_virtual_environments_and_site_packages_are_not_checked(onceguard, tmp_path, folder):
    root = _project(tmp_path)
    installed = root / folder
    installed.mkdir(parents=True)
    if not folder.endswith("site-packages"):
        (installed / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    (installed / "lib").mkdir()
    (installed / "lib" / "jobs.py").write_text(HAZARD, encoding="utf-8")
    (installed / "jobs.py").write_text(HAZARD, encoding="utf-8")
    assert _checked(onceguard("check", ".", "--format", "json", "--no-cache", cwd=root)) == {"app/jobs.py"}


# -- one truth in every surface: a noqa in any letter case ---------------------------------------------------


@pytest.mark.parametrize("comment, silenced", [
    ("# NOQA: og101, OG103", {"OG101", "OG103"}),
    ("# noqa: og1", {"OG101", "OG103"}),
    ("# noqa: Og103", {"OG103"}),
])
def test_a_noqa_code_in_any_case_means_the_same_to_flake8_and_the_cli(onceguard, flake8, tmp_path, comment, silenced):
    root = _project(tmp_path)
    marked = HAZARD.replace('pg_advisory_lock(42)")', f'pg_advisory_lock(42)")  {comment}')
    (root / "app" / "jobs.py").write_text(marked, encoding="utf-8")
    cli = {f["code"] for f in json.loads(onceguard("check", "app/jobs.py", "--format", "json", "--no-cache",
                                                   cwd=root).stdout)}
    result = flake8("--select", "OG", "app/jobs.py", cwd=root)
    from_flake8 = {line.split()[1] for line in result.stdout.splitlines() if " OG" in line}
    assert cli == from_flake8 == {"OG101", "OG103"} - silenced, (cli, from_flake8)


# -- living beside ruff ------------------------------------------------------------------------------------


def test_the_readme_ruff_setting_keeps_ruff_from_deleting_onceguard_noqa(tmp_path):
    import re
    import shutil
    import sys

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    setting = re.search(r"### Beside ruff\n.*?```toml\n(.*?)```", readme, re.DOTALL).group(1)
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is a test dependency"
    source = "import asyncpg\n\n\nasync def nightly(pool: asyncpg.Pool):\n" \
             "    await pool.execute('SELECT pg_advisory_lock(42)')  # noqa: OG101\n"
    for configured in (False, True):
        root = tmp_path / str(configured)
        root.mkdir()
        (root / "pyproject.toml").write_text(setting if configured else "[tool.ruff]\n", encoding="utf-8")
        (root / "jobs.py").write_text(source, encoding="utf-8")
        subprocess.run([ruff, "check", "--preview", "--select", "RUF100,RUF102", "--fix", "--quiet", "jobs.py"],
                       cwd=root)
        kept = "# noqa: OG101" in (root / "jobs.py").read_text(encoding="utf-8")
        assert kept is configured, (configured, (root / "jobs.py").read_text(encoding="utf-8"))


# -- a change that causes a finding in another file ----------------------------------------------------------


def test_a_finding_a_named_file_causes_in_another_file_is_reported(onceguard, tmp_path):
    """pre-commit hands over the staged files only: a job registered in scheduler.py and defined in tasks.py
    loses its claim in tasks.py, and the finding lands at the registration, in a file that is not staged."""
    root = _project(tmp_path)
    (root / "app" / "jobs.py").unlink()
    (root / "app" / "__init__.py").write_text("", encoding="utf-8")
    (root / "app" / "scheduler.py").write_text(
        "from apscheduler.schedulers.background import BackgroundScheduler\nfrom onceguard import guards\n\n"
        "from app.tasks import purge\n\nguards.configure(redis='redis://redis:6379/0')\n"
        "scheduler = BackgroundScheduler(timezone='UTC')\nscheduler.add_job(purge, 'interval', minutes=10)\n"
        "scheduler.start()\n", encoding="utf-8")
    guarded = ("from onceguard.guards import claim_period\n\nfrom app.store import delete_expired\n\n\n"
               "def purge():\n    if not claim_period('app.tasks.purge', 600):\n        return\n    delete_expired()\n")
    (root / "app" / "tasks.py").write_text(guarded, encoding="utf-8")
    assert onceguard("check", ".", "--format", "json", cwd=root).returncode == 0  # the whole project, cached
    (root / "app" / "tasks.py").write_text(
        guarded.replace("    if not claim_period('app.tasks.purge', 600):\n        return\n", ""), encoding="utf-8")
    result = onceguard("check", "--force-exclude", "--format", "json", "app/tasks.py", cwd=root)
    found = [(f["path"], f["code"]) for f in json.loads(result.stdout)]
    assert ("app/scheduler.py", "OG201") in found, (found, result.stderr)
