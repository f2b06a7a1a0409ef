"""The pre-commit hook, for real: ``pre-commit try-repo <onceguard> onceguard --all-files`` in a
scratch git repository, as a user would try it before adding it to .pre-commit-config.yaml.

pre-commit builds the hook's own virtualenv from the onceguard repository (pip install, so PyPI is
needed). try-repo on a checkout with uncommitted work only sees HEAD plus changes to tracked
files; so the hook repository here is a scratch commit of the working tree as it is now (tracked
and untracked files, without the ignored ones), which is what a clean CI clone holds anyway.
Both runs share one fixture repository; each try-repo installs the hook environment afresh.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import pytest
from samples import CLEAN, HAZARD

ROOT = Path(__file__).resolve().parents[1]


_IGNORED_PARTS = {".git", ".venv", "__pycache__", ".onceguard_cache", ".pytest_cache", ".hypothesis", "build", "dist"}


def pre_commit_command() -> Optional[List[str]]:
    try:
        import pre_commit  # noqa: F401
    except ImportError:
        found = shutil.which("pre-commit")
        return [found] if found else None
    return [sys.executable, "-m", "pre_commit"]


def git_env(home: Path) -> Dict[str, str]:
    env = dict(os.environ)
    env.update({
        "GIT_AUTHOR_NAME": "onceguard tests", "GIT_AUTHOR_EMAIL": "tests@example.invalid",
        "GIT_COMMITTER_NAME": "onceguard tests", "GIT_COMMITTER_EMAIL": "tests@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
        "PRE_COMMIT_HOME": str(home / "pre-commit-home"),
        "PRE_COMMIT_COLOR": "never",
    })
    env.pop("GIT_DIR", None)
    env.pop("GIT_INDEX_FILE", None)
    env.pop("GIT_WORK_TREE", None)
    return env


def git(cwd: Path, env: Dict[str, str], *args: str) -> str:
    result = subprocess.run(["git", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
                            cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"git {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def working_tree_files(env: Dict[str, str]) -> List[str]:
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, env=env, capture_output=True, timeout=60)
    if listed.returncode == 0 and listed.stdout:
        names = [n for n in listed.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
    else:  # an unpacked sdist: no git metadata
        names = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file()]
    return [n for n in names if (ROOT / n).is_file() and not _IGNORED_PARTS.intersection(Path(n).parts)]


def snapshot_of_this_repository(destination: Path, env: Dict[str, str]) -> Path:
    for name in working_tree_files(env):
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    git(destination, env, "init", "-q")
    git(destination, env, "add", "-A")
    git(destination, env, "commit", "-q", "-m", "snapshot of the working tree")
    return destination


def try_repo(command: List[str], hook_repo: Path, project: Path, env: Dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([*command, "try-repo", str(hook_repo), "onceguard", "--all-files"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=900)


def test_manifest_declares_both_hooks() -> None:
    yaml = pytest.importorskip("yaml")
    hooks = {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"onceguard", "onceguard-fix"}
    assert hooks["onceguard"]["entry"] == "onceguard check --force-exclude"
    assert hooks["onceguard-fix"]["entry"] == "onceguard check --fix --force-exclude"
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert hook["types"] == ["python"]
        assert hook["require_serial"] is True  # one run, one report, whatever the number of files


def test_try_repo_fails_on_a_finding_and_passes_when_clean(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed: pre-commit needs it")
    command = pre_commit_command()
    if command is None:
        pytest.skip("pre-commit is not installed (pip install 'onceguard[test]')")
    env = git_env(tmp_path)
    hook_repo = snapshot_of_this_repository(tmp_path / "onceguard-hook", env)

    project = tmp_path / "service"
    (project / "jobs").mkdir(parents=True)
    (project / "jobs" / "nightly.py").write_text(HAZARD, encoding="utf-8")
    (project / "jobs" / "cleanup.py").write_text(CLEAN, encoding="utf-8")
    for index in range(6):  # enough files for pre-commit to split them into batches, were it allowed to
        (project / "jobs" / f"extra_{index}.py").write_text(HAZARD, encoding="utf-8")
    (project / "README.md").write_text("not python, not checked\n", encoding="utf-8")
    git(project, env, "init", "-q")
    git(project, env, "add", "-A")
    git(project, env, "commit", "-q", "-m", "a service with a hazard")

    failing = try_repo(command, hook_repo, project, env)
    output = failing.stdout + failing.stderr
    assert failing.returncode == 1, output
    hook_output = output.split("- hook id: onceguard", 1)[-1]
    assert "jobs/nightly.py:4:11: OG101" in hook_output, output
    assert "cleanup.py" not in hook_output, output
    assert hook_output.count("Found ") == 1, f"one report per run:\n{output}"
    for index in range(6):
        (project / "jobs" / f"extra_{index}.py").unlink()
    git(project, env, "add", "-A")
    git(project, env, "commit", "-q", "-m", "one hazard left")

    # The README's .pre-commit-config.yaml as written, its repository pointed at a local clone that has the
    # README's `rev:` as a tag: the tag must exist and match the package version.
    config, rev = readme_pre_commit_config(str(hook_repo))
    from onceguard import __version__

    assert rev == f"v{__version__}", f"the README pins rev {rev}, the package is {__version__}"
    git(hook_repo, env, "tag", rev)
    (project / ".pre-commit-config.yaml").write_text(config, encoding="utf-8")
    git(project, env, "add", ".pre-commit-config.yaml")
    git(project, env, "commit", "-q", "-m", "onceguard hook")
    configured = subprocess.run([*command, "run", "--all-files"], cwd=project, env=env, capture_output=True,
                                text=True, timeout=900)
    output = configured.stdout + configured.stderr
    assert configured.returncode == 1 and "jobs/nightly.py:4:11: OG101" in output, output

    (project / "jobs" / "nightly.py").write_text(CLEAN, encoding="utf-8")
    git(project, env, "commit", "-q", "-am", "take the lock on one connection")
    passing = subprocess.run([*command, "run", "--all-files"], cwd=project, env=env, capture_output=True,
                             text=True, timeout=900)
    output = passing.stdout + passing.stderr
    assert passing.returncode == 0, output
    assert "Passed" in output, output


def readme_pre_commit_config(local_repo: str):
    """The first ``.pre-commit-config.yaml`` of the README that uses this repository's hooks, with its
    ``repo:`` replaced by ``local_repo``; and the ``rev:`` it pins."""
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for block in re.findall(r"```yaml\n(.*?)```", readme, re.DOTALL):
        if "id: onceguard" in block and "rev:" in block:
            rev = re.search(r"rev:\s*(\S+)", block).group(1)
            config = re.sub(r"(- repo:\s*)\S+", lambda m: m.group(1) + local_repo, block, count=1)
            return config, rev
    raise AssertionError("the README shows no pre-commit configuration for the onceguard hook")
