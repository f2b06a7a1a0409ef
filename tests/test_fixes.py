"""--fix, --unsafe-fixes and --diff: through the installed CLI on real files, and fix_source on bytes."""
from __future__ import annotations

import ast
import codecs
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import warnings
from typing import Callable, List

import pytest

from onceguard.config import Config
from onceguard.engine.fixes import TRANSFORMS, FixResult, apply_fixes, fix_files, fix_source
from onceguard.model import Diagnostic, Fix
from onceguard.rules.registry import all_codes

LOUD = Fix("log-level-debug", "log the skip at debug level", "safe")
HASH = Fix("stable-lock-key", "replace hash() with zlib.crc32() of the encoded value", "unsafe")


def _cli() -> List[str]:
    script = os.path.join(os.path.dirname(sys.executable), "onceguard")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "onceguard"]


def run_cli(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([*_cli(), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def findings_at(source: str, fix: Fix, code: str, is_target: Callable[[ast.Call], bool]) -> List[Diagnostic]:
    """Diagnostics placed the way Rule.finding places them: the call's ast range, 1-based columns."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and is_target(node):
            found.append(Diagnostic(code, fix.kind, node.lineno, node.col_offset + 1, node.end_lineno,
                                    node.end_col_offset + 1, "message", "suggestion", fix))
    assert found, "the test source has no target call"
    return sorted(found, key=lambda d: (d.line, d.column))


def loud_logs(source: str) -> List[Diagnostic]:
    methods = {"warning", "error", "critical", "exception", "log"}
    return findings_at(source, LOUD, "OG203",
                       lambda n: isinstance(n.func, ast.Attribute) and n.func.attr in methods)


def hash_calls(source: str) -> List[Diagnostic]:
    return findings_at(source, HASH, "OG104", lambda n: isinstance(n.func, ast.Name) and n.func.id == "hash")


def fixed(source: str, diagnostics: List[Diagnostic], unsafe: bool = True) -> str:
    result = fix_source(source.encode("utf-8"), diagnostics, unsafe=unsafe)
    assert result.applied, "nothing was fixed"
    text = result.new_source.decode("utf-8")
    ast.parse(text)
    return text


JOB = textwrap.dedent('''\
    """Nightly invoice run, scheduled in every replica."""
    from __future__ import annotations

    import logging

    from apscheduler.schedulers.background import BackgroundScheduler
    from sqlalchemy import create_engine, text

    log = logging.getLogger(__name__)
    engine = create_engine("postgresql+psycopg://app@db/app")
    scheduler = BackgroundScheduler(timezone="UTC")


    def send_invoices() -> None:
        with engine.begin() as conn:
            acquired = conn.execute(text("SELECT pg_try_advisory_xact_lock(42)")).scalar()
            if not acquired:
                log.warning("another replica has the lock")
                return
            conn.execute(text("UPDATE invoices SET sent_at = now() WHERE sent_at IS NULL"))


    scheduler.add_job(send_invoices, "cron", hour=2)
    ''')


# ------------------------------------------------------------------------------------------------ fix_source


def test_loud_log_becomes_debug_and_nothing_else_changes():
    result = fixed(JOB, loud_logs(JOB))
    assert 'log.debug("another replica has the lock")' in result
    assert result.replace("log.debug(", "log.warning(") == JOB


def test_every_loud_spelling_is_lowered():
    source = textwrap.dedent('''\
        import logging
        from logging import ERROR

        logger = logging.getLogger("jobs")


        def skip(job_id):
            logger.error("job %s claimed elsewhere", job_id)
            logging.warning("job %s claimed elsewhere", job_id)
            logging.getLogger(__name__).critical("claimed elsewhere")
            logger.log(logging.WARNING, "claimed elsewhere")
            logger.log(ERROR, "claimed elsewhere")
            logger.log(level=40, msg="claimed elsewhere")
        ''')
    result = fixed(source, loud_logs(source))
    assert 'logger.debug("job %s claimed elsewhere", job_id)' in result
    assert 'logging.debug("job %s claimed elsewhere", job_id)' in result
    assert 'logging.getLogger(__name__).debug("claimed elsewhere")' in result
    assert 'logger.log(logging.DEBUG, "claimed elsewhere")' in result
    assert result.count("logger.log(logging.DEBUG,") == 2
    assert 'logger.log(level=logging.DEBUG, msg="claimed elsewhere")' in result
    assert "import logging" in result and result.count("import logging") == 1


def test_level_name_without_logging_module_imports_it():
    source = (
        'from logging import WARNING, getLogger\n\nlog = getLogger(__name__)\nlog.log(WARNING, "claimed elsewhere")\n'
    )
    result = fixed(source, loud_logs(source))
    assert result.startswith("import logging\nfrom logging import WARNING, getLogger\n")
    assert 'log.log(logging.DEBUG, "claimed elsewhere")' in result


def test_exception_keeps_its_traceback_at_debug():
    source = textwrap.dedent('''\
        import logging

        log = logging.getLogger(__name__)
        try:
            pass
        except TimeoutError:
            log.exception("lock busy")
            log.exception(
                "lock busy",
            )
            log.exception("lock busy", exc_info=False)
        ''')
    result = fixed(source, loud_logs(source))
    assert 'log.debug("lock busy", exc_info=True)' in result
    assert '    log.debug(\n        "lock busy",\n        exc_info=True,\n    )\n' in result
    assert 'log.debug("lock busy", exc_info=False)' in result


def test_hash_of_a_literal_becomes_crc32_of_its_bytes_and_imports_zlib():
    source = textwrap.dedent('''\
        """Jobs."""
        from __future__ import annotations

        import psycopg


        def run(conn: psycopg.Connection) -> None:
            conn.execute("SELECT pg_try_advisory_lock(%s)", (hash("nightly"),))
        ''')
    result = fixed(source, hash_calls(source))
    assert '(zlib.crc32(b"nightly"),)' in result
    # isort's sections: the standard library's zlib above the third-party psycopg, a blank line between
    assert result.startswith('"""Jobs."""\nfrom __future__ import annotations\n\nimport zlib\n\nimport psycopg\n')


@pytest.mark.parametrize(
    "expression, expected",
    [
        ("hash(name)", "zlib.crc32(str(name).encode())"),
        ("hash(f'job:{name}')", "zlib.crc32(f'job:{name}'.encode())"),
        ("hash('caf\u00e9')", "zlib.crc32('caf\u00e9'.encode())"),
        ("hash('a\\tb')", "zlib.crc32('a\\tb'.encode())"),
        ("hash(b'nightly')", "zlib.crc32(b'nightly')"),
        ("hash(u'nightly')", "zlib.crc32(b'nightly')"),
        ("hash('job' ':nightly')", "zlib.crc32(('job' ':nightly').encode())"),
        ("hash((tenant, 'nightly'))", "zlib.crc32(str((tenant, 'nightly')).encode())"),
        ("hash(name) & 0x7FFFFFFF", "zlib.crc32(str(name).encode()) & 0x7FFFFFFF"),
    ],
)
def test_hash_variants(expression, expected):
    source = f"import zlib\n\n\ndef key(name, tenant):\n    return {expression}\n"
    result = fixed(source, hash_calls(source))
    assert result == f"import zlib\n\n\ndef key(name, tenant):\n    return {expected}\n"


def test_the_stable_key_is_the_same_in_every_process():
    source = 'import zlib\nKEY = hash("nightly")\n'
    result = fixed(source, hash_calls(source))
    namespace: dict = {}
    exec(compile(result, "<fixed>", "exec"), namespace)
    import zlib

    assert namespace["KEY"] == zlib.crc32(b"nightly") < 2**63  # fits PostgreSQL's bigint key


def test_unsafe_fix_needs_unsafe():
    source = 'KEY = hash("nightly")\n'
    result = fix_source(source.encode(), hash_calls(source), unsafe=False)
    assert result == FixResult(source.encode(), [])


def test_both_fixes_in_one_call_and_a_non_ascii_line():
    source = textwrap.dedent('''\
        import logging

        log = logging.getLogger(__name__)


        def skip(conn):
            prefix = "réplica"; log.warning("%s busy: %s", prefix, hash("nightly"))
        ''')
    diagnostics = loud_logs(source) + hash_calls(source)
    result = fix_source(source.encode(), diagnostics, unsafe=True)
    assert len(result.applied) == 2
    text = result.new_source.decode()
    assert 'prefix = "réplica"; log.debug("%s busy: %s", prefix, zlib.crc32(b"nightly"))' in text


def test_crlf_is_kept():
    source = JOB.replace("\n", "\r\n")
    result = fix_source(source.encode(), loud_logs(source), unsafe=False)
    assert result.applied
    assert result.new_source.count(b"\r\n") == source.count("\r\n")
    assert b"\n" not in result.new_source.replace(b"\r\n", b"")
    # ...also for the line the fixer adds
    hashed = 'KEY = hash("nightly")\r\nOTHER = 1\r\n'
    added = fix_source(hashed.encode(), hash_calls(hashed), unsafe=True).new_source
    assert added == b'import zlib\r\n\r\nKEY = zlib.crc32(b"nightly")\r\nOTHER = 1\r\n'


def test_latin1_file_keeps_encoding_cookie_and_bytes():
    source = (
        "# -*- coding: latin-1 -*-\n"
        '"""Relevé nocturne."""\n'
        "import logging\n"
        "log = logging.getLogger('relevé')\n"
        "def skip():\n"
        "    log.warning('déjà pris par une autre réplique')\n"
    )
    raw = source.encode("latin-1")
    result = fix_source(raw, loud_logs(source), unsafe=False)
    assert result.applied
    assert result.new_source == raw.replace(b"log.warning(", b"log.debug(")
    assert b"d\xe9j\xe0" in result.new_source  # still latin-1, not UTF-8


def test_utf8_bom_is_kept():
    source = JOB
    raw = codecs.BOM_UTF8 + source.encode("utf-8")
    result = fix_source(raw, loud_logs(source), unsafe=False)
    assert result.applied
    assert result.new_source.startswith(codecs.BOM_UTF8)
    assert not result.new_source[3:].startswith(codecs.BOM_UTF8)
    assert result.new_source == raw.replace(b"log.warning(", b"log.debug(")


def test_second_fix_changes_nothing():
    source = JOB.replace('log.warning("another', 'log.warning("%s another') + 'KEY = hash("x")\n'
    diagnostics = loud_logs(source) + hash_calls(source)
    once = fix_source(source.encode(), diagnostics, unsafe=True)
    assert len(once.applied) == 2
    # The same (now stale) findings and freshly computed ones both find nothing left to change.
    again = fix_source(once.new_source, diagnostics, unsafe=True)
    assert again == FixResult(once.new_source, [])
    ast.parse(once.new_source)


def test_a_file_libcst_cannot_reproduce_is_left_alone():
    # libcst drops a form feed that starts a statement line; bytes outside the edit must not change.
    source = 'import logging\n\x0clog = logging.getLogger(__name__)\nlog.warning("busy")\n'
    assert fix_source(source.encode(), loud_logs(source), unsafe=False) == FixResult(source.encode(), [])
    tabs = 'if busy:\n\tlog.warning("busy")\n'
    assert fixed(tabs, loud_logs(tabs)) == 'if busy:\n\tlog.debug("busy")\n'


def test_a_file_that_does_not_parse_is_left_alone():
    source = JOB + "def broken(:\n"
    diagnostics = loud_logs(JOB)
    assert fix_source(source.encode(), diagnostics, unsafe=True) == FixResult(source.encode(), [])


def test_pathological_nesting_never_reaches_libcst():
    source = "x = " + "(" * 5000 + "1" + ")" * 5000 + '\nlog.warning("busy")\n'
    diagnostic = Diagnostic("OG203", "loud-skip-log", 2, 1, 2, 20, "m", "", LOUD)
    result = fix_source(source.encode(), [diagnostic], unsafe=False)
    assert result == FixResult(source.encode(), [])


def test_undecodable_and_nul_bytes_are_left_alone():
    diagnostic = Diagnostic("OG203", "loud-skip-log", 1, 1, 1, 20, "m", "", LOUD)
    for raw in (b'log.warning("\xff")\n', b'log.warning("x")\x00\n'):
        assert fix_source(raw, [diagnostic], unsafe=False) == FixResult(raw, [])


def test_a_finding_whose_node_is_not_what_the_fix_expects_is_not_applied():
    source = 'import warnings\nwarnings.warn("x")\nprint("y")\n'
    wrong = [
        Diagnostic("OG203", "loud-skip-log", 2, 1, 2, 19, "m", "", Fix("log-level-debug", "d", "safe")),
        Diagnostic("OG203", "loud-skip-log", 3, 1, 3, 11, "m", "", Fix("log-level-debug", "d", "safe")),
        Diagnostic("OG104", "unstable-lock-key", 3, 1, 3, 11, "m", "", HASH),
        Diagnostic("OG999", "made-up", 3, 1, 3, 11, "m", "", Fix("no-such-kind", "d", "safe")),
    ]
    assert fix_source(source.encode(), wrong, unsafe=True) == FixResult(source.encode(), [])


def test_existing_zlib_import_is_reused_and_comments_stay_put():
    source = '"""Keys."""\n\n# keys for the lock table\nKEY = hash("a")\nOTHER = hash("b")\n'
    result = fixed(source, hash_calls(source))
    assert result == (
        '"""Keys."""\n\nimport zlib\n\n# keys for the lock table\nKEY = zlib.crc32(b"a")\nOTHER = zlib.crc32(b"b")\n'
    )
    assert fixed(result + 'THIRD = hash("c")\n', hash_calls(result + 'THIRD = hash("c")\n')).count("import zlib") == 1


def test_every_transform_has_a_fix_kind_row():
    assert set(TRANSFORMS) >= {"log-level-debug", "stable-lock-key"}


# ------------------------------------------------------------------------------------------------ apply_fixes


def test_apply_fixes_without_writing_returns_a_diff_and_what_remains(tmp_path):
    path = tmp_path / "jobs.py"
    path.write_text(JOB)
    loud = [d.with_path(str(path)) for d in loud_logs(JOB)]
    other = Diagnostic("OG201", "unguarded-scheduled-job", 14, 1, 14, 18, "m").with_path(str(path))
    remaining, diff = apply_fixes(loud + [other], {str(path): Config(root=str(tmp_path))}, unsafe=False, write=False)
    assert remaining == [other]
    assert path.read_text() == JOB
    assert '-            log.warning("another replica has the lock")' in diff
    assert '+            log.debug("another replica has the lock")' in diff
    assert diff.startswith(f"--- {path}\n+++ {path}\n@@ ")


def test_apply_fixes_writes_atomically_and_keeps_the_mode(tmp_path):
    path = tmp_path / "jobs.py"
    path.write_text(JOB)
    os.chmod(path, 0o640)
    loud = [d.with_path(str(path)) for d in loud_logs(JOB)]
    remaining, diff = apply_fixes(loud, {str(path): Config(root=str(tmp_path))}, unsafe=False, write=True)
    assert diff == ""
    assert 'log.debug("another replica has the lock")' in path.read_text()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert sorted(os.listdir(tmp_path)) == ["jobs.py"]  # no temporary file left behind
    assert all(d.code != "OG203" for d in remaining)


def test_apply_fixes_passes_other_files_through(tmp_path):
    untouched = Diagnostic("OG201", "unguarded-scheduled-job", 3, 1, 3, 9, "m").with_path(str(tmp_path / "a.py"))
    engine = Diagnostic("OG000", "cannot-parse", 1, 1, 1, 1, "cannot read").with_path(str(tmp_path / "gone.py"))
    unsafe_only = Diagnostic("OG104", "unstable-lock-key", 1, 7, 1, 22, "m", "", HASH).with_path(str(tmp_path / "b.py"))
    remaining, diff = apply_fixes([untouched, engine, unsafe_only], {}, unsafe=False, write=True)
    assert remaining == [untouched, engine, unsafe_only] and diff == ""


def _breaking_transform():
    """A transform that turns a loud log call into ``lambda(...)``: code that does not parse."""
    import libcst as cst

    from onceguard.engine.fix_transforms import Rewrite, Transform

    return Transform(cst.Call, lambda node: True, lambda node: Rewrite(node.with_changes(func=cst.Name("lambda"))))


def test_a_fix_that_would_not_parse_is_dropped_reported_and_the_file_unchanged(tmp_path, monkeypatch, capsys):
    from onceguard.surfaces import cli
    from onceguard.engine import fix_transforms

    monkeypatch.setitem(fix_transforms.TRANSFORMS, "log-level-debug", _breaking_transform())
    path = tmp_path / "jobs.py"
    path.write_bytes(JOB.encode())
    outcome = fix_files([d.with_path(str(path)) for d in loud_logs(JOB)], {str(path): Config(root=str(tmp_path))},
                        unsafe=False, write=True)
    assert path.read_bytes() == JOB.encode()
    assert outcome.fixed == [] and [d.code for d in outcome.rejected] == ["OG203"]
    assert [d.code for d in outcome.remaining] == ["OG203"]

    # Through the command line: the file stays byte for byte, the dropped fix is named on stderr.
    (tmp_path / "pyproject.toml").write_text("[tool.onceguard]\n")
    (tmp_path / "invoices.py").write_bytes(SCHEDULED_JOB.encode())
    monkeypatch.chdir(tmp_path)
    assert cli.main(["check", "--fix", "--no-cache", "--jobs", "1", "invoices.py"]) == 1
    captured = capsys.readouterr()
    assert (tmp_path / "invoices.py").read_bytes() == SCHEDULED_JOB.encode()
    assert "invoices.py:17:13: OG203 fix not applied: the fixed file would not parse" in captured.err
    assert "Fixed 0 findings (1 remaining)." in captured.out


def test_a_breaking_fix_does_not_hold_back_the_good_ones(tmp_path, monkeypatch):
    from onceguard.engine import fix_transforms

    monkeypatch.setitem(fix_transforms.TRANSFORMS, "stable-lock-key", _breaking_transform())
    source = JOB + "\nKEY = hash('nightly')\n"
    result = fix_source(source.encode(), loud_logs(source) + hash_calls(source), unsafe=True)
    assert [d.code for d in result.applied] == ["OG203"] and [d.code for d in result.rejected] == ["OG104"]
    text = result.new_source.decode()
    ast.parse(text)
    assert 'log.debug("another replica has the lock")' in text and "KEY = hash('nightly')" in text


def test_a_failed_rename_leaves_the_original_intact(tmp_path, monkeypatch):
    from onceguard.engine import fixes

    path = tmp_path / "jobs.py"
    path.write_bytes(JOB.encode())

    def refuse(source, target):
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(fixes.os, "replace", refuse)
    remaining, _ = apply_fixes([d.with_path(str(path)) for d in loud_logs(JOB)], {str(path): Config(root=str(tmp_path))},
                               unsafe=False, write=True)
    assert path.read_bytes() == JOB.encode()
    assert sorted(os.listdir(tmp_path)) == ["jobs.py"]  # the temporary file is gone too
    assert any(d.code == "OG000" and "cannot write fixes" in d.message for d in remaining)


def test_a_full_disk_leaves_the_original_intact(tmp_path, monkeypatch):
    import errno

    from onceguard.engine import fixes

    path = tmp_path / "jobs.py"
    path.write_bytes(JOB.encode())
    real_fdopen = os.fdopen

    class FullDisk:
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def write(self, data):
            self.handle.write(data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fixes.os, "fdopen", lambda fd, mode: FullDisk(real_fdopen(fd, mode)))
    remaining, _ = apply_fixes([d.with_path(str(path)) for d in loud_logs(JOB)], {str(path): Config(root=str(tmp_path))},
                               unsafe=False, write=True)
    assert path.read_bytes() == JOB.encode()
    assert sorted(os.listdir(tmp_path)) == ["jobs.py"]
    assert any(d.code == "OG000" and "No space left" in d.message for d in remaining)


def test_a_fixed_file_is_a_new_inode(tmp_path):
    """Written beside and renamed over: a reader holding the old file never sees it half written."""
    path = tmp_path / "jobs.py"
    path.write_bytes(JOB.encode())
    link = tmp_path / "jobs-link.py"
    os.link(path, link)
    before = os.stat(path).st_ino
    apply_fixes([d.with_path(str(path)) for d in loud_logs(JOB)], {str(path): Config(root=str(tmp_path))},
                unsafe=False, write=True)
    assert "log.debug(" in path.read_text()
    assert os.stat(path).st_ino != before
    assert link.read_bytes() == JOB.encode()  # the old inode was never written to


# ------------------------------------------------------------------------------------------------ the CLI

ADVISORY_JOB = textwrap.dedent('''\
    """Nightly report, run by every replica's scheduler."""
    import psycopg


    def nightly_report() -> None:
        with psycopg.connect("postgresql://app@db/app") as conn:
            acquired = conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (hash("nightly"),)).fetchone()[0]
            if not acquired:
                return
            conn.execute("INSERT INTO reports (kind) VALUES ('nightly')")
    ''')

SCHEDULED_JOB = textwrap.dedent('''\
    """Invoice run: APScheduler fires it in every replica; the advisory lock picks one."""
    import logging

    from apscheduler.schedulers.background import BackgroundScheduler
    from sqlalchemy import create_engine, text

    log = logging.getLogger(__name__)
    engine = create_engine("postgresql+psycopg://app@db/app")
    scheduler = BackgroundScheduler(timezone="UTC")


    @scheduler.scheduled_job("cron", hour=2, timezone="UTC")
    def send_invoices() -> None:
        with engine.begin() as conn:
            acquired = conn.execute(text("SELECT pg_try_advisory_xact_lock(4242)")).scalar()
            if not acquired:
                log.warning("another replica has the lock")
                return
            conn.execute(text("UPDATE invoices SET sent_at = now() WHERE sent_at IS NULL"))
    ''')


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "billing"\n\n[tool.onceguard]\n')
    return tmp_path


def _codes(result: subprocess.CompletedProcess) -> List[str]:
    return [word for line in result.stdout.splitlines() for word in line.split() if word.startswith("OG") and
            word[2:5].isdigit()]


def test_the_rules_that_carry_fixes_exist():
    assert {"OG104", "OG203"} <= set(all_codes())


def test_cli_fix_applies_safe_fixes_only(project):
    (project / "report.py").write_text(ADVISORY_JOB)
    (project / "invoices.py").write_text(SCHEDULED_JOB)
    before = run_cli("check", "--no-cache", ".", cwd=project)
    assert before.returncode == 1 and {"OG104", "OG203"} <= set(_codes(before)), before.stdout + before.stderr

    result = run_cli("check", "--fix", ".", cwd=project)
    assert result.returncode == 1, result.stderr  # OG104's fix is unsafe: still reported
    assert "OG104" in _codes(result) and "OG203" not in _codes(result)
    assert (project / "invoices.py").read_text() == SCHEDULED_JOB.replace("log.warning(", "log.debug(")
    assert (project / "report.py").read_text() == ADVISORY_JOB


def test_cli_unsafe_fixes(project):
    (project / "report.py").write_text(ADVISORY_JOB)
    (project / "invoices.py").write_text(SCHEDULED_JOB)
    result = run_cli("check", "--fix", "--unsafe-fixes", ".", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    fixed_report = (project / "report.py").read_text()
    assert '(zlib.crc32(b"nightly"),)' in fixed_report
    assert fixed_report.startswith(
        '"""Nightly report, run by every replica\'s scheduler."""\nimport zlib\n\nimport psycopg\n'
    )
    ast.parse(fixed_report)

    # A second run has nothing left to do and leaves the bytes alone.
    snapshot = {name: (project / name).read_bytes() for name in ("report.py", "invoices.py")}
    again = run_cli("check", "--fix", "--unsafe-fixes", ".", cwd=project)
    assert again.returncode == 0, again.stdout
    assert {name: (project / name).read_bytes() for name in snapshot} == snapshot


def test_cli_diff_shows_the_change_and_writes_nothing(project):
    path = project / "invoices.py"
    path.write_text(SCHEDULED_JOB)
    mtime = os.stat(path).st_mtime_ns
    result = run_cli("check", "--diff", "invoices.py", cwd=project)
    # ruff's contract: a pending fix is a failed check (exit 1), and standard output is the diff alone.
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("--- a/invoices.py\n+++ b/invoices.py\n@@ "), result.stdout
    assert "OG203" not in result.stdout and "Found " not in result.stdout
    patched = project / "patched"
    patched.mkdir()
    (patched / "invoices.py").write_text(SCHEDULED_JOB)
    applied = subprocess.run(["patch", "-p1", "--quiet"], input=result.stdout, cwd=patched, capture_output=True,
                             text=True, timeout=60)
    assert applied.returncode == 0, applied.stderr
    assert (patched / "invoices.py").read_text() == SCHEDULED_JOB.replace("log.warning(", "log.debug(")
    shutil.rmtree(patched)
    assert '-            log.warning("another replica has the lock")' in result.stdout
    assert '+            log.debug("another replica has the lock")' in result.stdout
    assert path.read_text() == SCHEDULED_JOB and os.stat(path).st_mtime_ns == mtime

    unsafe = run_cli("check", "--diff", "--unsafe-fixes", ".", cwd=project)
    assert "zlib" not in unsafe.stdout  # nothing unsafe in this file
    (project / "report.py").write_text(ADVISORY_JOB)
    safe_only = run_cli("check", "--diff", "report.py", cwd=project)
    assert safe_only.stdout == "" and safe_only.returncode == 0  # the only fix there is unsafe
    assert "1 more with --unsafe-fixes" in safe_only.stderr
    with_unsafe = run_cli("check", "--diff", "--unsafe-fixes", "report.py", cwd=project)
    assert '+import zlib' in with_unsafe.stdout
    assert (project / "report.py").read_text() == ADVISORY_JOB


@pytest.mark.parametrize("which", ["OG203 safe", "OG104 unsafe"])
def test_cli_fix_keeps_mode_newlines_and_encoding(project, which):
    path = project / "jobs.py"
    if which == "OG203 safe":
        source = SCHEDULED_JOB.replace("another replica", "une autre réplique")
        options = ["--fix"]
        edits = [(b"log.warning(", b"log.debug(")]
    else:
        source = ADVISORY_JOB.replace("every replica's", "chaque réplique:")
        options = ["--fix", "--unsafe-fixes"]
        edits = [(b'hash("nightly")', b'zlib.crc32(b"nightly")'),
                 (b'"""\r\nimport psycopg', b'"""\r\nimport zlib\r\n\r\nimport psycopg')]
    raw = ("# -*- coding: latin-1 -*-\n" + source).replace("\n", "\r\n").encode("latin-1")
    path.write_bytes(raw)
    os.chmod(path, 0o750)
    result = run_cli("check", *options, "jobs.py", cwd=project)
    assert which.split()[0] not in _codes(result), result.stdout + result.stderr
    expected = raw
    for old, new in edits:
        assert old in expected
        expected = expected.replace(old, new)
    assert path.read_bytes() == expected
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o750
    assert sorted(os.listdir(project)) == ["jobs.py", "pyproject.toml"]


def test_cli_never_fixes_a_suppressed_finding(project):
    path = project / "invoices.py"
    source = SCHEDULED_JOB.replace('has the lock")', 'has the lock")  # noqa: OG203')
    path.write_text(source)
    result = run_cli("check", "--fix", "invoices.py", cwd=project)
    assert "OG203" not in _codes(result)
    assert path.read_text() == source


def test_cli_fix_leaves_a_broken_file_alone_and_fixes_the_rest(project):
    (project / "invoices.py").write_text(SCHEDULED_JOB)
    broken = SCHEDULED_JOB + "def oops(:\n"
    (project / "broken.py").write_text(broken)
    result = run_cli("check", "--fix", ".", cwd=project)
    assert "OG000" in _codes(result), result.stdout + result.stderr
    assert (project / "broken.py").read_text() == broken
    assert "log.debug(" in (project / "invoices.py").read_text()


def test_cli_unsafe_fix_of_a_suppressed_hash_is_not_applied(project):
    path = project / "report.py"
    line_end = '(hash("nightly"),)).fetchone()[0]'
    source = ADVISORY_JOB.replace(line_end, line_end + "  # noqa: OG104")
    path.write_text(source)
    run_cli("check", "--fix", "--unsafe-fixes", "report.py", cwd=project)
    assert path.read_text() == source


# ------------------------------------------------------------------------------------------------ robustness

def test_generated_programs_never_crash_the_fixer():
    """Findings on every call of a generated program: the fixer either fixes and still parses, or gives up.
    Only this test needs hypothesmith; without it, only this test is skipped."""
    hypothesmith = pytest.importorskip("hypothesmith")
    from hypothesis import HealthCheck, given, settings

    property_test = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))(
        given(hypothesmith.from_grammar())(_fixer_survives))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        property_test()


def _fixer_survives(source):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    diagnostics = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for fix, code in ((LOUD, "OG203"), (HASH, "OG104")):
                diagnostics.append(Diagnostic(code, fix.kind, node.lineno, node.col_offset + 1, node.end_lineno,
                                              node.end_col_offset + 1, "m", "", fix))
    raw = source.encode("utf-8", "surrogatepass")
    result = fix_source(raw, diagnostics, unsafe=True)
    if result.applied:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(result.new_source)
    else:
        assert result.new_source == raw


def test_findings_on_every_call_of_real_code():
    """The package's own modules, a finding on every call: only the loud log calls and hash() change."""
    import onceguard

    package = os.path.dirname(onceguard.__file__)
    for name in sorted(os.listdir(package)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(package, name), "rb") as handle:
            raw = handle.read()
        source = raw.decode("utf-8")
        diagnostics = []
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Call):
                diagnostics.append(Diagnostic("OG203", "loud-skip-log", node.lineno, node.col_offset + 1,
                                              node.end_lineno, node.end_col_offset + 1, "m", "", LOUD))
        result = fix_source(raw, diagnostics, unsafe=True)
        new = result.new_source.decode("utf-8")
        ast.parse(new)
        assert len(new.splitlines()) == len(source.splitlines()), name
        changed = [(a, b) for a, b in zip(source.splitlines(), new.splitlines()) if a != b]
        assert len(changed) <= len(result.applied), name
        for before, after in changed:
            assert ".debug(" in after or "logging.DEBUG" in after or "exc_info=True" in after, (name, before, after)
