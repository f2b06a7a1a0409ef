"""Shared helpers: run the installed console scripts, never an in-process shortcut."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def script(name: str) -> list:
    """The console script installed next to this interpreter (the venv under test), else on PATH."""
    beside = Path(sys.executable).with_name(name)
    if beside.exists():
        return [str(beside)]
    found = shutil.which(name)
    if found:
        return [found]
    if name == "onceguard":
        return [sys.executable, "-m", "onceguard"]
    return [sys.executable, "-m", name]


def run(command: list, cwd=ROOT, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.setdefault("PYTHONIOENCODING", "utf-8")
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env, **kwargs)
    assert "Traceback" not in result.stderr, result.stderr
    return result


@pytest.fixture
def onceguard():
    def invoke(*args, cwd=ROOT, timeout: float = 300):
        return run(script("onceguard") + list(args), cwd=cwd, timeout=timeout)

    return invoke


@pytest.fixture
def flake8():
    def invoke(*args, cwd=ROOT, timeout: float = 300):
        return run(script("flake8") + list(args), cwd=cwd, timeout=timeout)

    return invoke


# ---------------------------------------------------------------------------------------------------------
# Real servers for the guards' tests: from the environment, else started here when installed.


def pytest_configure(config):
    from servers import start_missing_servers

    if not hasattr(config, "workerinput"):
        start_missing_servers()


def pytest_unconfigure(config):
    from servers import stop_servers

    stop_servers()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    from servers import summary_line

    terminalreporter.write_line(summary_line())
