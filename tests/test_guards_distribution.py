"""The guards as a dependency a service can take: their own wheel, without the linter, typed.

Builds ``guards/`` (the ``onceguard-guards`` distribution) into a wheel, installs it alone into a fresh
virtual environment with no index, and checks what a service sees: the same import name, none of the
linter's dependencies, and annotations that ``mypy --strict`` accepts in a module that uses every form.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINTER_ONLY = ("flake8", "libcst", "pglast", "pygls", "lsprotocol", "pyyaml", "ahocorasick_rs", "pathspec")

USES_EVERY_FORM = textwrap.dedent('''
    from __future__ import annotations

    import datetime as dt

    from onceguard.guards import (Lease, aclaim_period, aexclusive, arun_exclusive, claim_once, claim_period,
                                  claimed_period, configure, exclusive, last_success, run_exclusive, run_once)


    @claimed_period("billing.renew", "5m")
    def renew(count: int) -> int:
        return count + 1


    @claimed_period("reports.daily", "day", tz="America/New_York")
    async def report(name: str) -> str:
        return name


    def reindex(lease: Lease) -> None:
        lease.check()


    async def areindex(lease: Lease) -> None:
        lease.check()


    async def main() -> None:
        sent: str | None = await report("weekly")
        ok: bool = await aclaim_period("sweep", dt.timedelta(minutes=5), tz="UTC")
        async with aexclusive("reindex", ttl=60) as lease:
            if lease is not None:
                fence: int = lease.fence
                print(fence)
        await arun_exclusive("reindex", 60, areindex)
        print(sent, ok)


    def start() -> None:
        configure(redis="redis://localhost:6379/0", timeout=3)
        value: int | None = renew(3)
        assert claim_period("sweep", 300) or claim_once("event:1", 60)
        with exclusive("reindex", ttl=60) as lease:
            if lease is None:
                return
            lease.check()
        run_exclusive("reindex", 10, reindex)
        run_once("backup", "1h", lambda: None)
        when: float | None = last_success("backup")
        print(value, when)
''')


@pytest.fixture(scope="module")
def guards_only_env(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("guards-dist")
    wheels = where / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                            "-w", str(wheels), str(ROOT / "guards")], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    [wheel] = wheels.glob("onceguard_guards-*.whl")
    env = where / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    installed = subprocess.run([str(python), "-m", "pip", "install", "--no-index", "--no-deps", str(wheel)],
                               capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return python


def test_the_guards_install_and_import_without_the_linter(guards_only_env):
    probe = ("import importlib.metadata as m, importlib.util as u, onceguard.guards as g\n"
             "names = {d.metadata['Name'].lower() for d in m.distributions()}\n"
             "print(sorted(names)); print(g.claim_period.__module__)\n"
             f"print([n for n in {LINTER_ONLY!r} if u.find_spec(n) is not None])\n"
             "print(u.find_spec('onceguard.surfaces') is None)\n")
    result = subprocess.run([str(guards_only_env), "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    distributions, module, linter_modules, no_linter = result.stdout.splitlines()
    assert "onceguard-guards" in distributions and "onceguard" not in eval(distributions)
    assert module == "onceguard.guards"
    assert linter_modules == "[]"
    assert no_linter == "True"


def test_a_module_using_every_form_passes_mypy_strict(guards_only_env, tmp_path):
    pytest.importorskip("mypy")
    user = tmp_path / "service.py"
    user.write_text(USES_EVERY_FORM)
    result = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                             "--python-executable", str(guards_only_env), str(user)],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_guards_themselves_pass_mypy_strict():
    pytest.importorskip("mypy")
    result = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                             str(ROOT / "src" / "onceguard" / "guards")],
                            capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
