"""The ``onceguard`` console script: exit codes, formats, selection, config, noqa, cache, rule docs."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

HAZARD = textwrap.dedent(
    """\
    import asyncpg


    async def nightly(dsn):
        pool = await asyncpg.create_pool(dsn)
        await pool.execute("SELECT pg_advisory_lock(42)")
    """
)
CLEAN = textwrap.dedent(
    """\
    import asyncpg


    async def nightly(pool: asyncpg.Pool):
        async with pool.acquire() as conn:
            async with conn.transaction():
                if not await conn.fetchval("SELECT pg_try_advisory_xact_lock(42)"):
                    return
                await conn.execute("DELETE FROM sessions WHERE expires_at < now()")
    """
)


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_exit_codes_and_text_format(onceguard, tmp_path):
    write(tmp_path, "jobs.py", HAZARD)
    write(tmp_path, "ok.py", CLEAN)
    result = onceguard("check", "jobs.py", cwd=tmp_path)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("jobs.py:6:11: OG101 ")
    assert any(line.strip().startswith("help: ") for line in lines), "the suggestion follows the finding"
    assert onceguard("check", "ok.py", cwd=tmp_path).returncode == 0


def test_default_path_is_current_directory(onceguard, tmp_path):
    write(tmp_path, "pkg/jobs.py", HAZARD)
    result = onceguard("check", "--format", "concise", "--no-cache", cwd=tmp_path)
    assert result.returncode == 1
    assert "pkg/jobs.py:6:11: OG101" in result.stdout


def test_json_format_keys(onceguard, tmp_path):
    write(tmp_path, "jobs.py", HAZARD)
    result = onceguard("check", "jobs.py", "--format", "json", cwd=tmp_path)
    findings = json.loads(result.stdout)
    codes = {f["code"] for f in findings}
    assert "OG101" in codes
    finding = next(f for f in findings if f["code"] == "OG101")
    assert set(finding) == {"path", "line", "column", "end_line", "end_column", "code", "name", "message",
                            "suggestion", "fix"}
    assert (finding["path"], finding["line"], finding["column"]) == ("jobs.py", 6, 11)
    assert finding["end_line"] == 6 and finding["end_column"] > finding["column"]
    assert finding["name"] == "session-lock-on-pool"
    assert finding["suggestion"] and finding["fix"] is None


def test_select_and_ignore(onceguard, tmp_path):
    write(tmp_path, "jobs.py", HAZARD)
    everything = {f["code"] for f in json.loads(onceguard("check", "jobs.py", "--format", "json", cwd=tmp_path).stdout)}
    assert {"OG101", "OG103"} <= everything
    only = json.loads(onceguard("check", "jobs.py", "--format", "json", "--select", "OG103", cwd=tmp_path).stdout)
    assert {f["code"] for f in only} == {"OG103"}
    ignored = onceguard("check", "jobs.py", "--format", "json", "--ignore", "OG1", cwd=tmp_path)
    assert json.loads(ignored.stdout) == [] and ignored.returncode == 0


def test_pyproject_config_is_read(onceguard, tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.onceguard]\nignore = ["OG103"]\nper-file-ignores = {"legacy/*" = ["OG101"]}\n')
    write(tmp_path, "jobs.py", HAZARD)
    write(tmp_path, "legacy/old.py", HAZARD)
    findings = json.loads(onceguard("check", ".", "--format", "json", "--no-cache", cwd=tmp_path).stdout)
    assert {(f["path"], f["code"]) for f in findings} == {("jobs.py", "OG101")}


def test_per_file_ignores_reach_flake8_too(flake8, tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.onceguard]\nignore = ["OG103"]\n')
    write(tmp_path, "jobs.py", HAZARD)
    result = flake8("--isolated", "--select", "OG", "jobs.py", cwd=tmp_path)
    assert "OG101" in result.stdout and "OG103" not in result.stdout


def test_config_errors_exit_2_with_a_message(onceguard, tmp_path):
    write(tmp_path, "jobs.py", HAZARD)
    write(tmp_path, "pyproject.toml", '[tool.onceguard]\nselect = ["OG101"]\ncolour = "red"\n')
    result = onceguard("check", "jobs.py", cwd=tmp_path)
    assert result.returncode == 2 and "unknown key 'colour'" in result.stderr
    write(tmp_path, "pyproject.toml", '[tool.onceguard]\nignore = ["OG999"]\n')
    result = onceguard("check", "jobs.py", cwd=tmp_path)
    assert result.returncode == 2 and "OG999" in result.stderr
    result = onceguard("check", "jobs.py", "--select", "XX1", cwd=tmp_path)
    assert result.returncode == 2 and "XX1" in result.stderr
    write(tmp_path, "pyproject.toml", "[tool.onceguard\n")
    result = onceguard("check", "jobs.py", cwd=tmp_path)
    assert result.returncode == 2 and "pyproject.toml" in result.stderr


def test_noqa_line_and_file(onceguard, tmp_path):
    line_noqa = HAZARD.replace('lock(42)")', 'lock(42)")  # noqa: OG101')
    write(tmp_path, "a.py", line_noqa)
    codes = {f["code"] for f in json.loads(onceguard("check", "a.py", "--format", "json", cwd=tmp_path).stdout)}
    assert "OG101" not in codes and "OG103" in codes
    write(tmp_path, "b.py", HAZARD.replace('lock(42)")', 'lock(42)")  # noqa'))
    assert onceguard("check", "b.py", cwd=tmp_path).returncode == 0
    write(tmp_path, "c.py", "# onceguard: noqa: OG103\n" + HAZARD)
    codes = {f["code"] for f in json.loads(onceguard("check", "c.py", "--format", "json", cwd=tmp_path).stdout)}
    assert codes == {"OG101"}


def test_unparsable_file_is_a_finding_and_the_run_goes_on(onceguard, tmp_path):
    write(tmp_path, "broken.py", "def f(:\n    pass\n")
    write(tmp_path, "jobs.py", HAZARD)
    # 'advisory' keeps the broken file past the prefilter.
    write(tmp_path, "broken2.py", "# advisory\nclass (:\n")
    result = onceguard("check", ".", "--format", "json", "--no-cache", cwd=tmp_path)
    findings = json.loads(result.stdout)
    by_path = {}
    for f in findings:
        by_path.setdefault(f["path"], set()).add(f["code"])
    assert by_path["broken2.py"] == {"OG000"}
    assert "OG101" in by_path["jobs.py"]
    message = next(f["message"] for f in findings if f["path"] == "broken2.py")
    assert message.startswith("cannot parse: ")


def test_cache_gives_the_same_answer_and_notices_changes(onceguard, tmp_path):
    path = write(tmp_path, "jobs.py", HAZARD)
    cold = onceguard("check", ".", "--format", "json", cwd=tmp_path)
    assert (tmp_path / ".onceguard_cache").is_dir()
    warm = onceguard("check", ".", "--format", "json", cwd=tmp_path)
    assert json.loads(cold.stdout) == json.loads(warm.stdout)
    path.write_text(CLEAN, encoding="utf-8")
    assert onceguard("check", ".", cwd=tmp_path).returncode == 0
    assert onceguard("clean", cwd=tmp_path).returncode == 0
    assert not (tmp_path / ".onceguard_cache").exists()


def test_parallel_run_matches_serial_run(onceguard, tmp_path):
    for index in range(120):
        write(tmp_path, f"pkg/mod_{index:03}.py", HAZARD if index % 7 == 0 else CLEAN)
    serial = json.loads(onceguard("check", "pkg", "--format", "json", "--no-cache", "--jobs", "1", cwd=tmp_path).stdout)
    parallel = json.loads(onceguard("check", "pkg", "--format", "json", "--no-cache", "--jobs", "2", cwd=tmp_path).stdout)
    assert serial == parallel
    assert len({f["path"] for f in serial}) == len(range(0, 120, 7))


def test_rule_and_rules_commands(onceguard):
    listing = onceguard("rules")
    assert listing.returncode == 0
    assert "OG101  session-lock-on-pool" in listing.stdout
    doc = onceguard("rule", "og101")
    assert doc.returncode == 0 and doc.stdout.startswith("# OG101 session-lock-on-pool")
    assert "## Use instead" in doc.stdout
    missing = onceguard("rule", "OG999")
    assert missing.returncode == 2 and "OG999" in missing.stderr


def test_version_and_usage_errors(onceguard):
    assert onceguard("--version").stdout.startswith("onceguard ")
    assert onceguard("check", "--format", "xml").returncode == 2
    assert onceguard("check", "does-not-exist.py", "--format", "json").returncode == 1


def test_flake8_lists_the_plugin(flake8):
    result = flake8("--version")
    assert "onceguard:" in result.stdout


def test_flake8_and_cli_agree_on_a_file(onceguard, flake8, tmp_path):
    write(tmp_path, "jobs.py", HAZARD)
    cli = {(f["line"], f["column"], f["code"]) for f in json.loads(onceguard("check", "jobs.py", "--format", "json", cwd=tmp_path).stdout)}
    result = flake8("--isolated", "--select", "OG", "--format", "%(row)d|%(col)d|%(code)s", "jobs.py", cwd=tmp_path)
    plugin = {tuple(int(x) if x.isdigit() else x for x in line.split("|")) for line in result.stdout.splitlines()}
    assert cli == plugin and cli


def test_cache_notices_changes_in_files_a_finding_depends_on(onceguard, tmp_path):
    write(tmp_path, "pyproject.toml", "[tool.onceguard]\n")
    write(tmp_path, "shop/__init__.py", "")
    write(tmp_path, "shop/jobs.py", "from shop.mail import send_email\n\n\ndef send_digest():\n    send_email('digest')\n")
    write(tmp_path, "shop/scheduler.py", textwrap.dedent(
        """\
        from apscheduler.schedulers.background import BackgroundScheduler

        from shop.jobs import send_digest

        scheduler = BackgroundScheduler(timezone="UTC")
        scheduler.add_job(send_digest, "interval", minutes=5)
        """
    ))
    first = json.loads(onceguard("check", "shop", "--format", "json", cwd=tmp_path).stdout)
    assert [(f["path"], f["code"]) for f in first] == [("shop/scheduler.py", "OG201")]
    write(tmp_path, "shop/jobs.py", textwrap.dedent(
        """\
        from shop.leases import claim_period
        from shop.mail import send_email


        def send_digest():
            if not claim_period("shop:digest", 300):
                return
            send_email('digest')
        """
    ))
    second = onceguard("check", "shop/scheduler.py", "--format", "json", cwd=tmp_path)
    assert json.loads(second.stdout) == [] and second.returncode == 0


def test_force_exclude_applies_excludes_to_named_files(onceguard, tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.onceguard]\nextend-exclude = ["generated"]\n')
    write(tmp_path, "generated/jobs.py", HAZARD)
    assert onceguard("check", "generated/jobs.py", cwd=tmp_path).returncode == 1
    result = onceguard("check", "--force-exclude", "generated/jobs.py", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == "All checks passed.\n"
