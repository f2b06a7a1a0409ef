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
# (its function has a name of its own: a job's verdict reads the project's callers of the job's name, and a file
# holding a def of that name is a dependency of the job's file, re-checked with it)
CLEAN = textwrap.dedent(
    """\
    import asyncpg


    async def purge_sessions(pool: asyncpg.Pool):
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
                            "suggestion", "fix", "related"}
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


def test_configured_ignore_reaches_flake8_too(flake8, tmp_path):
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


# --- what ruff and flake8 users expect ----------------------------------------------------------------------
# These use the two findings whose behaviour on their input is settled: OG104 (a lock key from hash(); its fix
# is unsafe) and OG203 (the skip logged at warning; its fix is safe).

from samples import UNSTABLE_KEY as KEYS  # noqa: E402

LOUD = textwrap.dedent(
    """\
    import logging

    import psycopg

    log = logging.getLogger(__name__)


    def send_invoices(conn: psycopg.Connection) -> None:
        with conn.transaction():
            acquired = conn.execute("SELECT pg_try_advisory_xact_lock(4242)").fetchone()[0]
            if not acquired:
                log.warning("another replica has the lock")
                return
            conn.execute("UPDATE invoices SET sent_at = now() WHERE sent_at IS NULL")
    """
)
LOUD_AT = ("loud.py", 12, "OG203")
KEYS_AT = ("keys.py", 3, "OG104")


def service(tmp_path: Path, pyproject: str = "[tool.onceguard]\n") -> Path:
    write(tmp_path, "pyproject.toml", pyproject)
    write(tmp_path, "loud.py", LOUD)
    write(tmp_path, "keys.py", KEYS)
    return tmp_path


def found(result) -> set:
    assert result.returncode in (0, 1), result.stderr
    data = json.loads(result.stdout)
    return {(f["path"], f["line"], f["code"]) for f in data}


def test_the_two_settled_findings(onceguard, tmp_path):
    service(tmp_path)
    assert found(onceguard("check", "--format", "json", "--no-cache", cwd=tmp_path)) == {LOUD_AT, KEYS_AT}


def test_repeated_select_accumulates_and_extend_select_adds(onceguard, tmp_path):
    service(tmp_path, '[tool.onceguard]\nselect = ["OG104"]\n')
    args = ("check", "--format", "json", "--no-cache")
    assert found(onceguard(*args, cwd=tmp_path)) == {KEYS_AT}
    assert found(onceguard(*args, "--select", "OG203", cwd=tmp_path)) == {LOUD_AT}  # replaces the file's select
    assert found(onceguard(*args, "--select", "OG203", "--select", "OG104", cwd=tmp_path)) == {LOUD_AT, KEYS_AT}
    assert found(onceguard(*args, "--extend-select", "OG203", cwd=tmp_path)) == {LOUD_AT, KEYS_AT}


def test_ignore_and_extend_ignore_add_to_the_file(onceguard, tmp_path):
    service(tmp_path, '[tool.onceguard]\nignore = ["OG104"]\n')
    args = ("check", "--format", "json", "--no-cache")
    assert found(onceguard(*args, cwd=tmp_path)) == {LOUD_AT}
    assert found(onceguard(*args, "--ignore", "OG2", cwd=tmp_path)) == set()
    assert found(onceguard(*args, "--extend-ignore", "OG203", cwd=tmp_path)) == set()
    # The file's ignore still holds under a command-line --select (ruff carries it over too).
    assert found(onceguard(*args, "--select", "OG1,OG2", cwd=tmp_path)) == {LOUD_AT}


def test_exclude_and_extend_exclude_on_the_command_line(onceguard, tmp_path):
    service(tmp_path, '[tool.onceguard]\nextend-exclude = ["vendor"]\n')
    write(tmp_path, "vendor/keys.py", KEYS)
    args = ("check", "--format", "json", "--no-cache")
    assert found(onceguard(*args, cwd=tmp_path)) == {LOUD_AT, KEYS_AT}
    assert found(onceguard(*args, "--extend-exclude", "keys.py", cwd=tmp_path)) == {LOUD_AT}
    # --exclude replaces the configured list (and the file's extend-exclude with it).
    assert found(onceguard(*args, "--exclude", "loud.py", cwd=tmp_path)) == {KEYS_AT, ("vendor/keys.py", 3, "OG104")}


def test_per_file_ignores_in_the_file_and_on_the_command_line(onceguard, tmp_path):
    service(tmp_path, '[tool.onceguard]\nper-file-ignores = { "keys.py" = ["OG1"] }\n')
    args = ("check", "--format", "json", "--no-cache")
    assert found(onceguard(*args, cwd=tmp_path)) == {LOUD_AT}
    # --per-file-ignores replaces the file's table; --extend-per-file-ignores adds to it.
    assert found(onceguard(*args, "--per-file-ignores", "loud.py:OG203", cwd=tmp_path)) == {KEYS_AT}
    assert found(onceguard(*args, "--extend-per-file-ignores", "loud.py:OG2", cwd=tmp_path)) == set()
    bad = onceguard(*args, "--per-file-ignores", "loud.py:XX1", cwd=tmp_path)
    assert bad.returncode == 2 and "XX1" in bad.stderr


def test_per_file_ignores_hold_under_flake8(flake8, tmp_path):
    service(tmp_path, '[tool.onceguard]\nper-file-ignores = { "legacy/*" = ["OG104"] }\n')
    write(tmp_path, "legacy/keys.py", KEYS)
    result = flake8("--isolated", "--select", "OG", "--format", "%(path)s|%(row)d|%(code)s", ".", cwd=tmp_path)
    rows = {tuple(line.split("|")) for line in result.stdout.splitlines()}
    assert rows == {("./keys.py", "3", "OG104"), ("./loud.py", "12", "OG203")}, result.stdout + result.stderr


def test_noqa_with_a_prefix_suppresses_the_family(onceguard, tmp_path):
    write(tmp_path, "keys.py", KEYS.replace('hash("nightly-report")', 'hash("nightly-report")  # noqa: OG1'))
    write(tmp_path, "loud.py", LOUD.replace('has the lock")', 'has the lock")  # noqa: OG1'))
    assert found(onceguard("check", "--format", "json", "--no-cache", cwd=tmp_path)) == {LOUD_AT}


def test_file_level_flake8_noqa_is_honoured(onceguard, tmp_path):
    write(tmp_path, "keys.py", "# flake8: noqa\n" + KEYS)
    write(tmp_path, "loud.py", "# flake8: noqa: OG104\n" + LOUD)
    result = onceguard("check", "--format", "json", "--no-cache", cwd=tmp_path)
    assert found(result) == {("loud.py", 13, "OG203")}


def test_a_clean_run_says_so_unless_quiet(onceguard, tmp_path):
    write(tmp_path, "ok.py", CLEAN)
    result = onceguard("check", "--no-cache", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "All checks passed.\n", "")
    quiet = onceguard("check", "--no-cache", "-q", cwd=tmp_path)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    machine = onceguard("check", "--no-cache", "--format", "json", cwd=tmp_path)
    assert json.loads(machine.stdout) == [] and machine.stderr == ""


def test_fix_hints_under_the_report_and_quiet(onceguard, tmp_path):
    service(tmp_path)
    result = onceguard("check", "--no-cache", cwd=tmp_path)
    assert result.returncode == 1
    tail = result.stdout.splitlines()[-3:]
    assert tail == ["Found 2 findings.", "[*] 1 fixable with --fix.", "1 more with --unsafe-fixes."], tail
    with_unsafe = onceguard("check", "--no-cache", "--unsafe-fixes", cwd=tmp_path)
    assert with_unsafe.stdout.splitlines()[-1] == "[*] 2 fixable with --fix --unsafe-fixes."
    quiet = onceguard("check", "--no-cache", "-q", cwd=tmp_path)
    assert quiet.returncode == 1
    assert [line.split(":")[0] for line in quiet.stdout.splitlines() if not line.startswith(" ")] == ["keys.py",
                                                                                                      "loud.py"]
    assert "Found" not in quiet.stdout and "[*]" not in quiet.stdout and "more with" not in quiet.stdout


def test_fix_summary_and_show_fixes(onceguard, tmp_path):
    service(tmp_path)
    result = onceguard("check", "--fix", "--show-fixes", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "Fixed 1 finding (1 remaining).", lines
    assert lines[-4:-1] == ["Fixed 1 finding:", "- loud.py:", "    1 \u00d7 OG203 (loud-skip-log)"], lines
    assert "log.debug(" in (tmp_path / "loud.py").read_text()
    # Machine formats keep standard output for the program; the summary goes to standard error.
    machine = onceguard("check", "--fix", "--unsafe-fixes", "--format", "json", cwd=tmp_path)
    assert json.loads(machine.stdout) == [] and machine.returncode == 0
    assert "Fixed 1 finding (0 remaining)." in machine.stderr


def test_add_noqa_silences_every_current_finding(onceguard, tmp_path):
    service(tmp_path)
    (tmp_path / "keys.py").write_bytes(KEYS.replace("\n", "\r\n").encode())
    result = onceguard("check", "--add-noqa", "--no-cache", cwd=tmp_path)
    assert result.returncode == 0 and "Added 2 noqa directives." in result.stderr, result.stderr
    keys = (tmp_path / "keys.py").read_bytes()
    assert b'NIGHTLY_KEY = hash("nightly-report")  # noqa: OG104\r\n' in keys and b"\n\n" not in keys
    assert '            log.warning("another replica has the lock")  # noqa: OG203\n' in (tmp_path / "loud.py").read_text()
    after = onceguard("check", "--no-cache", cwd=tmp_path)
    assert after.returncode == 0 and after.stdout == "All checks passed.\n"
    again = onceguard("check", "--add-noqa", "--no-cache", cwd=tmp_path)
    assert "Added 0 noqa directives." in again.stderr


def test_baseline_holds_the_line(onceguard, tmp_path):
    service(tmp_path)
    wrote = onceguard("check", "--baseline", "onceguard-baseline.json", "--write-baseline", "--no-cache", cwd=tmp_path)
    assert wrote.returncode == 0 and "Wrote 2 findings" in wrote.stderr, wrote.stderr
    quiet = onceguard("check", "--baseline", "onceguard-baseline.json", "--no-cache", cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stdout == "All checks passed.\n", quiet.stdout
    # Lines moving does not bring a recorded finding back; a new one (a copy) is reported.
    write(tmp_path, "keys.py", "# moved down\n\n" + KEYS)
    write(tmp_path, "more/keys.py", KEYS)
    result = onceguard("check", "--baseline", "onceguard-baseline.json", "--format", "json", "--no-cache",
                       cwd=tmp_path)
    assert found(result) == {("more/keys.py", 3, "OG104")}
    # From another directory the baseline still matches (paths are relative to the baseline file).
    sub = tmp_path / "sub"
    sub.mkdir()
    elsewhere = onceguard("check", "..", "--baseline", "../onceguard-baseline.json", "--format", "json", "--no-cache",
                          cwd=sub)
    assert ("../loud.py", 12, "OG203") not in found(elsewhere) and ("../keys.py", 5, "OG104") not in found(elsewhere)
    missing = onceguard("check", "--baseline", "nope.json", cwd=tmp_path)
    assert missing.returncode == 2 and "nope.json" in missing.stderr


def test_malformed_pyproject_is_one_line_and_exit_2(onceguard, flake8, tmp_path):
    write(tmp_path, "keys.py", KEYS + "import os\n")
    cases = {
        "utf-16": '[tool.onceguard]\nignore = ["OG104"]\n'.encode("utf-16"),
        "tool-not-table": b"tool = 3\n",
        "onceguard-not-table": b'[tool]\nonceguard = "OG1"\n',
        "bad-toml": b"[tool.onceguard\n",
    }
    for case, data in cases.items():
        (tmp_path / "pyproject.toml").write_bytes(data)
        result = onceguard("check", "keys.py", cwd=tmp_path)
        assert result.returncode == 2, (case, result.stdout, result.stderr)
        assert result.stdout == "" and len(result.stderr.strip().splitlines()) == 1, (case, result.stderr)
        assert "pyproject.toml" in result.stderr, (case, result.stderr)
        # flake8: one OG000 at the file; the run and the other plugins go on.
        under_flake8 = flake8("--isolated", "--select", "OG,F", "keys.py", cwd=tmp_path)
        lines = under_flake8.stdout.splitlines()
        assert [line for line in lines if " OG" in line] == [line for line in lines if "OG000" in line], lines
        assert len([line for line in lines if "OG000" in line]) == 1 and "pyproject.toml" in lines[0], (case, lines)
        assert any(" F401 " in line for line in lines), (case, lines)


def test_claim_functions_that_never_resolve_are_named(onceguard, tmp_path):
    write(tmp_path, "pyproject.toml",
          '[tool.onceguard]\nclaim-functions = ["claim_period", "app.leases.claim_perod", "app.leases.claim_period"]\n')
    write(tmp_path, "app/__init__.py", "")
    write(tmp_path, "app/leases.py", "def claim_period(name, seconds):\n    return True\n")
    write(tmp_path, "loud.py", LOUD)
    result = onceguard("check", "--no-cache", cwd=tmp_path)
    assert result.returncode == 1  # the warning does not change the exit code
    warnings = [line for line in result.stderr.splitlines() if "claim-functions" in line]
    assert len(warnings) == 1, result.stderr
    assert "'claim_period'" in warnings[0] and "'app.leases.claim_perod'" in warnings[0]
    assert "'app.leases.claim_period'" not in warnings[0]
    write(tmp_path, "pyproject.toml", '[tool.onceguard]\nclaim-functions = ["app.leases.claim_period"]\n')
    assert "claim-functions" not in onceguard("check", "--no-cache", cwd=tmp_path).stderr


def test_config_directory_and_jobs_validation(onceguard, tmp_path):
    service(tmp_path / "svc", '[tool.onceguard]\nignore = ["OG104"]\n')
    result = onceguard("check", "svc", "--config", "svc", "--format", "json", "--no-cache", cwd=tmp_path)
    assert found(result) == {("svc/loud.py", 12, "OG203")}
    empty = tmp_path / "empty"
    empty.mkdir()
    result = onceguard("check", "svc", "--config", "empty", cwd=tmp_path)
    assert result.returncode == 2 and "empty" in result.stderr and "no such file" not in result.stderr
    for bad in ("-3", "x"):
        result = onceguard("check", "svc", "-j", bad, cwd=tmp_path)
        assert result.returncode == 2 and "--jobs" in result.stderr, bad


def test_statistics_keep_json_and_sarif_parseable(onceguard, tmp_path):
    service(tmp_path)
    result = onceguard("check", "--statistics", "--format", "json", "--no-cache", cwd=tmp_path)
    data = json.loads(result.stdout)
    assert {(f["path"], f["line"], f["code"]) for f in data["findings"]} == {LOUD_AT, KEYS_AT}
    assert sorted((s["code"], s["count"], s["fixable"]) for s in data["statistics"]) == [("OG104", 1, 0),
                                                                                            ("OG203", 1, 1)]
    report = tmp_path / "out" / "report.sarif"
    result = onceguard("check", "--statistics", "--format", "sarif", "--output-file", str(report), "--no-cache",
                       cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    log = json.loads(report.read_text(encoding="utf-8"))
    assert {s["code"] for s in log["runs"][0]["properties"]["statistics"]} == {"OG104", "OG203"}
    github = onceguard("check", "--statistics", "--format", "github", "--no-cache", cwd=tmp_path)
    assert all(line.startswith("::") for line in github.stdout.splitlines())
    assert "OG203  loud-skip-log" in github.stderr


def test_diff_prints_only_the_diff_and_exits_1(onceguard, tmp_path):
    service(tmp_path)
    result = onceguard("check", "--diff", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith("--- a/loud.py\n+++ b/loud.py\n"), result.stdout
    assert "OG104" not in result.stdout and "Found" not in result.stdout and "help:" not in result.stdout
    assert (tmp_path / "loud.py").read_text() == LOUD
    nothing = onceguard("check", "--diff", "keys.py", cwd=tmp_path)
    assert (nothing.returncode, nothing.stdout) == (0, "")


def test_rules_list_engine_codes_and_json(onceguard):
    from onceguard.rules.registry import all_codes

    listing = onceguard("rules").stdout.splitlines()
    assert listing[0].startswith("OG000  cannot-parse") and listing[1].startswith("OG001  internal-error")
    rows = json.loads(onceguard("rules", "--format", "json").stdout)
    assert [row["code"] for row in rows] == ["OG000", "OG001", *all_codes()]
    assert all(row["name"] and row["summary"] for row in rows)


def test_rule_by_name_and_all(onceguard):
    by_name = onceguard("rule", "unstable-lock-key")
    assert by_name.returncode == 0 and by_name.stdout.startswith("# OG104 unstable-lock-key")
    engine = onceguard("rule", "OG000")
    assert engine.returncode == 0 and engine.stdout.startswith("# OG000 cannot-parse")
    every = onceguard("rule", "--all")
    from onceguard.rules.registry import all_codes

    headings = [line.split()[1] for line in every.stdout.splitlines() if line.startswith("# OG")]
    assert headings == [*all_codes(), "OG000", "OG001"]
    assert onceguard("rule", "no-such-rule").returncode == 2


def test_editing_pyproject_between_cached_runs_changes_the_findings(onceguard, tmp_path):
    service(tmp_path)
    args = ("check", "--format", "json")
    assert found(onceguard(*args, cwd=tmp_path)) == {LOUD_AT, KEYS_AT}
    assert (tmp_path / ".onceguard_cache").is_dir()
    write(tmp_path, "pyproject.toml", '[tool.onceguard]\nignore = ["OG203"]\n')
    assert found(onceguard(*args, cwd=tmp_path)) == {KEYS_AT}
    write(tmp_path, "pyproject.toml", '[tool.onceguard]\nper-file-ignores = { "keys.py" = ["OG104"] }\n')
    assert found(onceguard(*args, cwd=tmp_path)) == {LOUD_AT}


def _readme_commands(section: str) -> list:
    """The ``onceguard``/``flake8`` command lines of the README's ``sh`` blocks in ``section``, comments cut."""
    import re

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    body = readme.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", body, re.DOTALL):
        for line in block.splitlines():
            line = line.split("  #", 1)[0].strip()
            if line.startswith(("onceguard ", "flake8 ")):
                commands.append(line)
    return commands


def test_the_readme_commands_run_as_written(onceguard, flake8, tmp_path):
    import shlex

    commands = _readme_commands("Install")
    assert len(commands) >= 10, commands
    service(tmp_path)
    write(tmp_path, "src/app/keys.py", KEYS)
    write(tmp_path, "src/app/loud.py", LOUD)
    for command in commands:
        program, *args = shlex.split(command)
        result = (onceguard if program == "onceguard" else flake8)(*args, cwd=tmp_path)
        assert result.returncode in (0, 1), (command, result.stdout, result.stderr)
        assert "error" not in result.stderr.lower() or program == "flake8", (command, result.stderr)
    assert "log.debug(" in (tmp_path / "loud.py").read_text()  # `--fix` ran
    assert (tmp_path / "onceguard-baseline.json").is_file()  # the baseline was written
