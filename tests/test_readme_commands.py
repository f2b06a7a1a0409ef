"""The README's two set-up commands, as written: the first installs onceguard into a fresh virtual environment
and runs it on the bundled example app; the second is the command CI runs."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _commands() -> list:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Try it\n", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", section, re.DOTALL)]


def test_the_readme_has_exactly_two_set_up_commands_and_ci_runs_the_second():
    install_and_try, tests = _commands()
    assert "\n" not in install_and_try and "\n" not in tests
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ci.split("# The README's test command:\n", 1)[1].strip().splitlines()[0] == tests


def test_the_first_command_installs_and_reports_on_the_example_app(tmp_path):
    install_and_try, _ = _commands()
    copy = tmp_path / "onceguard"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(
        ".git", ".venv", "*.egg-info", "__pycache__", ".onceguard_cache", "build", "dist", "corpus", ".work",
        ".pytest_cache", ".hypothesis"))
    result = subprocess.run(["bash", "-c", install_and_try], cwd=copy, capture_output=True, text=True, timeout=900)
    assert result.returncode == 1, result.stdout + result.stderr  # findings: exit 1
    assert "fixtures/fastapi_tickers/tickets/main.py" in result.stdout and "OG201" in result.stdout, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
