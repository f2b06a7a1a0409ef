"""Test code is not deployed: findings in it are off unless ``check-tests = true`` turns them on."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from onceguard.config import ConfigError, from_mapping
from onceguard.engine.check import check_source

# A session advisory lock through a pool: OG101 wherever it is deployed.
LOCK_THROUGH_POOL = textwrap.dedent(
    """\
    import asyncpg


    async def settle_invoices(dsn):
        pool = await asyncpg.create_pool(dsn)
        await pool.execute("SELECT pg_advisory_lock(11)")
    """
).encode()

TEST_PATHS = ["tests/helpers.py", "billing/test_invoices.py", "billing/invoices_test.py", "conftest.py",
              "billing/tests/factories.py"]


@pytest.mark.parametrize("relative", TEST_PATHS)
def test_findings_in_test_code_are_off_by_default_and_on_when_asked(tmp_path, relative):
    path = tmp_path / relative
    default = check_source(LOCK_THROUGH_POOL, str(path), from_mapping({}, root=str(tmp_path)))
    asked = check_source(LOCK_THROUGH_POOL, str(path), from_mapping({"check-tests": True}, root=str(tmp_path)))
    assert default == []
    assert "OG101" in {d.code for d in asked}


def test_application_code_is_checked_either_way(tmp_path):
    path = tmp_path / "billing" / "invoices.py"
    found = check_source(LOCK_THROUGH_POOL, str(path), from_mapping({}, root=str(tmp_path)))
    assert "OG101" in {d.code for d in found}


def test_the_setting_must_be_a_boolean():
    with pytest.raises(ConfigError):
        from_mapping({"check-tests": "yes"})


def test_the_cli_reads_the_setting_from_pyproject(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_settle.py").write_bytes(LOCK_THROUGH_POOL)
    console = shutil.which("onceguard", path=os.path.dirname(sys.executable))
    assert console

    def codes() -> set:
        result = subprocess.run([console, "check", ".", "--format", "json", "--no-cache"], cwd=tmp_path,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode in (0, 1), result.stderr
        rows = json.loads(result.stdout)
        rows = rows if isinstance(rows, list) else rows.get("findings", [])
        return {row["code"] for row in rows}

    (tmp_path / "pyproject.toml").write_text("[tool.onceguard]\n")
    assert codes() == set()
    (tmp_path / "pyproject.toml").write_text("[tool.onceguard]\ncheck-tests = true\n")
    assert "OG101" in codes()
