"""Bad input never hangs or crashes onceguard: odd files, broken code, pathological nesting, huge files.

Everything here goes through the surfaces a user runs: the installed ``onceguard`` console script and a
real ``flake8`` subprocess (the conftest helpers fail on any "Traceback" in stderr and put a timeout on
every run, so a hang fails the test instead of the suite), and ``check_source``, the engine entry the
language server calls.
"""
from __future__ import annotations

import ast
import json
import os
import socket
import sys
import textwrap
from pathlib import Path

import pytest

from onceguard.config import Config, config_for
from onceguard.engine.discovery import discover
from onceguard.engine.check import check_source, enabled_rules, passes_prefilter, trigger_words
from onceguard.surfaces.flake8_plugin import OnceguardChecker
from onceguard.surfaces.report import format_names
from onceguard.engine.runner import check_files

TIMEOUT = 120

HAZARD = textwrap.dedent(
    """\
    import asyncpg


    async def nightly(dsn):
        pool = await asyncpg.create_pool(dsn)
        await pool.execute("SELECT pg_advisory_lock(42)")
    """
)
HAZARD_LINE = 6

#: A comment that keeps a broken file past the prefilter, so that it is really parsed (and fails).
PAST_PREFILTER = "# this job takes a pg_advisory_lock\n"


def write(directory: Path, name, data) -> Path:
    path = directory / name if isinstance(name, str) else Path(os.fsdecode(os.path.join(os.fsencode(directory), name)))
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return path


def project(tmp_path: Path) -> Path:
    """A project root of its own: no pyproject.toml from further up applies."""
    (tmp_path / "pyproject.toml").write_text("[tool.onceguard]\n", encoding="utf-8")
    return tmp_path


def findings(result) -> list:
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def by_path(found: list) -> dict:
    table: dict = {}
    for f in found:
        table.setdefault(f["path"], []).append(f)
    return table


def test_the_marker_comment_really_reaches_the_parser():
    words = trigger_words(enabled_rules(Config()))
    assert passes_prefilter(PAST_PREFILTER.encode(), words)
    assert passes_prefilter(HAZARD.encode(), words)


# -- files that are not regular files -----------------------------------------------------------


def _non_regular_tree(root: Path) -> None:
    write(root, "jobs.py", HAZARD)
    os.mkfifo(root / "fifo.py")
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(root / "sock.py"))
    finally:
        server.close()  # the socket file stays
    (root / "pkg.py").mkdir()
    write(root / "pkg.py", "inner.py", HAZARD)
    os.symlink("nowhere.py", root / "dangling.py")
    os.symlink("loop_b.py", root / "loop_a.py")
    os.symlink("loop_a.py", root / "loop_b.py")
    os.symlink(".", root / "self_loop")
    os.symlink("/dev/zero", root / "zero.py")  # reading it would never end
    os.symlink("fifo.py", root / "link_to_fifo.py")


def test_non_regular_files_in_a_walked_tree_are_skipped(onceguard, tmp_path):
    root = project(tmp_path)
    _non_regular_tree(root)
    result = onceguard("check", ".", "--format", "json", "--no-cache", cwd=root, timeout=TIMEOUT)
    table = by_path(findings(result))
    assert {f["code"] for f in table.pop("jobs.py")} >= {"OG101"}
    assert {f["code"] for f in table.pop("pkg.py/inner.py")} >= {"OG101"}  # a directory named *.py is walked
    # Nothing else is checked, and nothing else is an internal error.
    assert all(f["code"] == "OG000" for found in table.values() for f in found), table


def test_non_regular_files_named_on_the_command_line_are_reported(onceguard, tmp_path):
    root = project(tmp_path)
    _non_regular_tree(root)
    named = ["fifo.py", "sock.py", "dangling.py", "loop_a.py", "zero.py", "link_to_fifo.py", "gone.py", "/dev/null"]
    result = onceguard("check", *named, "jobs.py", "pkg.py", "--format", "json", "--no-cache", cwd=root,
                       timeout=TIMEOUT)
    table = by_path(findings(result))
    for name in named:
        assert [f["code"] for f in table[name]] == ["OG000"], (name, table.get(name))
        assert table[name][0]["message"].startswith("cannot read: "), table[name]
    assert "OG101" in {f["code"] for f in table["jobs.py"]}
    assert "OG101" in {f["code"] for f in table["pkg.py/inner.py"]}


def test_unreadable_files_are_reported_and_the_run_goes_on(onceguard, tmp_path):
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        pytest.skip("running as root: chmod 000 does not stop root from reading a file")
    root = project(tmp_path)
    secret = write(root, "secret.py", HAZARD)
    write(root, "jobs.py", HAZARD)
    locked = root / "locked"
    write(locked, "inner.py", HAZARD)
    secret.chmod(0)
    locked.chmod(0)
    try:
        walked = by_path(findings(onceguard("check", ".", "--format", "json", "--no-cache", cwd=root,
                                            timeout=TIMEOUT)))
        named = by_path(findings(onceguard("check", "secret.py", "--format", "json", "--no-cache", cwd=root,
                                           timeout=TIMEOUT)))
    finally:
        secret.chmod(0o644)
        locked.chmod(0o755)
    assert "OG101" in {f["code"] for f in walked["jobs.py"]}
    assert [f["code"] for f in walked["secret.py"]] == ["OG000"]
    assert "locked/inner.py" not in walked
    assert [f["code"] for f in named["secret.py"]] == ["OG000"]


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="needs Linux's /proc")
def test_a_file_not_even_root_can_read_is_reported(onceguard, tmp_path):
    """chmod 000 does not stop root (CI containers often run as root); reading /proc/self/mem at offset 0
    fails for every user (nothing is mapped there), so a link to it is a .py file no one can read."""
    root = project(tmp_path)
    write(root, "jobs.py", HAZARD)
    (root / "secret.py").symlink_to("/proc/self/mem")
    walked = by_path(findings(onceguard("check", ".", "--format", "json", "--no-cache", cwd=root, timeout=TIMEOUT)))
    named = by_path(findings(onceguard("check", "secret.py", "jobs.py", "--format", "json", "--no-cache", cwd=root,
                                       timeout=TIMEOUT)))
    for table in (walked, named):
        assert "OG101" in {f["code"] for f in table["jobs.py"]}
        assert [f["code"] for f in table["secret.py"]] == ["OG000"]
        assert table["secret.py"][0]["message"].startswith("cannot read: ")


@pytest.mark.parametrize("output_format", format_names())
def test_undecodable_file_names_are_checked_and_printed(onceguard, tmp_path, output_format):
    root = project(tmp_path)
    directory = os.path.join(os.fsencode(root), b"d\xfeir")
    os.mkdir(directory)
    with open(os.path.join(directory, b"j\xffob.py"), "wb") as handle:
        handle.write(HAZARD.encode())
    write(root, "jobs.py", HAZARD)
    result = onceguard("check", ".", "--format", output_format, "--no-cache", "--exit-zero", cwd=root,
                       timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr
    assert "OG101" in result.stdout
    if output_format == "json":
        paths = {f["path"] for f in json.loads(result.stdout) if f["code"] == "OG101"}
        assert paths == {"jobs.py", os.fsdecode(b"d\xfeir/j\xffob.py")}
    # The same file named on the command line, as pre-commit would pass it.
    named = onceguard("check", os.fsdecode(b"d\xfeir/j\xffob.py"), "--format", output_format, "--no-cache",
                      "--exit-zero", cwd=root, timeout=TIMEOUT)
    assert named.returncode == 0 and "OG101" in named.stdout, named.stderr


def test_a_file_that_vanishes_after_discovery_is_reported(tmp_path):
    root = project(tmp_path)
    for index in range(60):  # enough files for the process pool
        write(root, f"pkg/mod_{index:02}.py", HAZARD)
    problems: list = []
    files = [(path, config_for(path)) for path in discover([str(root / "pkg")], config_for, problems)]
    assert len(files) == 60 and not problems
    vanished = files[7][0]
    os.unlink(vanished)
    for jobs in (1, 2):
        found = check_files(files, jobs, None)
        assert [d.code for d in found if d.path == vanished] == ["OG000"]
        assert "cannot read" in next(d.message for d in found if d.path == vanished)
        assert sum(d.code == "OG101" for d in found) == 59


def test_a_pool_started_before_the_files_are_known_gives_the_same_findings(tmp_path):
    from onceguard.engine.runner import POOL_THRESHOLD, WorkerPool

    root = project(tmp_path)
    for index in range(POOL_THRESHOLD + 2):
        write(root, f"pkg/mod_{index:02}.py", HAZARD if index % 2 else "x = 1\n")
    files = [(path, config_for(path)) for path in discover([str(root / "pkg")], config_for, [])]
    alone = check_files(files, 1, None)
    with WorkerPool(2) as pool:
        pooled = check_files(files, 2, None, pool)
    assert sorted(map(repr, (d.to_json() for d in pooled))) == sorted(map(repr, (d.to_json() for d in alone)))
    assert sum(d.code == "OG101" for d in pooled) == (POOL_THRESHOLD + 2) // 2
    # Fewer files than make a pool worth it: the pool started early stays unused, the work is done here.
    with WorkerPool(2) as pool:
        few = check_files(files[:3], 2, None, pool)
    assert [d.path for d in few] == [d.path for d in check_files(files[:3], 1, None)]


def test_a_file_that_vanishes_mid_run_with_the_cache(tmp_path, monkeypatch):
    from onceguard.engine import runner
    from onceguard.engine.cache import ResultCache

    root = project(tmp_path)
    paths = [write(root, f"mod_{index}.py", HAZARD) for index in range(3)]
    files = [(str(path), config_for(str(path))) for path in paths]
    cache = ResultCache(str(root))
    check_files(files, 1, cache)
    cache.save()
    # Changed since the cached run (so the file must be read again), then gone before it is read.
    paths[1].write_text(HAZARD + "\n", encoding="utf-8")
    real_read = runner.read_source

    def read_then_vanish(path):
        if path == str(paths[1]):
            os.unlink(path)
        return real_read(path)

    monkeypatch.setattr(runner, "read_source", read_then_vanish)
    found = check_files(files, 1, ResultCache(str(root)))
    assert [d.code for d in found if d.path == str(paths[1])] == ["OG000"]
    assert sum(d.code == "OG101" for d in found) == 2


def test_a_path_that_does_not_exist_is_reported_not_raised(onceguard, tmp_path):
    root = project(tmp_path)
    write(root, "jobs.py", HAZARD)
    result = onceguard("check", "jobs.py", "missing.py", "missing_dir/", "--format", "json", "--no-cache",
                       cwd=root, timeout=TIMEOUT)
    table = by_path(findings(result))
    assert [f["code"] for f in table["missing.py"]] == ["OG000"]
    assert "OG101" in {f["code"] for f in table["jobs.py"]}


# -- code that does not parse ----------------------------------------------------------------


BROKEN = {
    "syntax_error.py": (PAST_PREFILTER + "def nightly(:\n    pass\n", "invalid syntax"),
    "undecodable.py": (PAST_PREFILTER.encode() + b"name = 'caf\xe9 \xff\xfe'\n", "encoding"),
    "undecodable_late.py": (PAST_PREFILTER.encode() + b"x = 1\ny = 2\nname = 'caf\xe9'\n", "decode"),
    "latin1_without_cookie.py": (PAST_PREFILTER.encode() + b"# r\xe9sum\xe9\nx = 1\n", "encoding"),
    "unknown_cookie.py": ("# -*- coding: klingon -*-\n" + PAST_PREFILTER + "x = 1\n", "klingon"),
    "nul_bytes.py": (PAST_PREFILTER.encode() + b"x = 1\x00\ny = 2\n", "null bytes"),
    "python2_print.py": (PAST_PREFILTER + "print 'nightly job done'\n", "Python 2"),
    "tab_error.py": (PAST_PREFILTER + "if True:\n\tx = 1\n        y = 2\n", "tabs and spaces"),
    "unterminated.py": (PAST_PREFILTER + "query = '''SELECT 1\n", "unterminated"),
}
if sys.version_info < (3, 14):
    # Python 3.14 parses it (as "except (A, B)"); a lower-case second name is a Python 2 binding.
    BROKEN["python2_except.py"] = (
        PAST_PREFILTER + "try:\n    run()\nexcept ValueError, error:\n    pass\n", "Python 2"
    )


def test_each_broken_file_gives_exactly_one_og000_with_its_reason(onceguard, tmp_path):
    root = project(tmp_path)
    for name, (data, _) in BROKEN.items():
        write(root, name, data)
    write(root, "jobs.py", HAZARD)
    table = by_path(findings(onceguard("check", ".", "--format", "json", "--no-cache", cwd=root, timeout=TIMEOUT)))
    for name, (_, reason) in BROKEN.items():
        assert [f["code"] for f in table.get(name, [])] == ["OG000"], (name, table.get(name))
        message = table[name][0]["message"]
        assert message.startswith("cannot parse: ") and reason.lower() in message.lower(), (name, message)
    assert "OG101" in {f["code"] for f in table["jobs.py"]}  # and the run went on


def test_broken_files_through_the_engine_api(tmp_path):
    for name, (data, reason) in BROKEN.items():
        source = data if isinstance(data, bytes) else data.encode()
        found = check_source(source, str(tmp_path / name), Config())
        assert [d.code for d in found] == ["OG000"], (name, found)
        assert reason.lower() in found[0].message.lower(), (name, found[0].message)


def test_broken_files_under_flake8_do_not_crash_it(flake8, tmp_path):
    root = project(tmp_path)
    for name, (data, _) in BROKEN.items():
        write(root, name, data)
    write(root, "jobs.py", HAZARD)
    result = flake8("--isolated", "--select", "OG,E9", ".", cwd=root, timeout=TIMEOUT)
    assert result.returncode == 1, result.stderr
    assert "failed during execution" not in result.stdout + result.stderr
    assert f"jobs.py:{HAZARD_LINE}:" in result.stdout and "OG101" in result.stdout


# -- pathological nesting --------------------------------------------------------------------

#: Inside an async def that also takes an advisory lock, so every rule really looks at the expression.
def _deep_program(expression: str) -> str:
    return (
        "import asyncpg\n\n\n"
        "async def nightly(dsn, a, b, y, f, log, obj):\n"
        "    pool = await asyncpg.create_pool(dsn)\n"
        f"    await pool.execute({expression})\n"
        '    await pool.execute("SELECT pg_advisory_lock(42)")\n'
        f"    if {expression}:\n"
        "        log.error('another replica has it')\n"
        f"    obj.count = {expression}\n"
        "    obj.save()\n"
    )


DEEP = {
    # Far beyond what CPython's parser accepts: each must be an OG000, not a crash.
    "brackets_5000.py": "(" * 5000 + "1" + ")" * 5000,
    "calls_5000.py": "f(" * 5000 + "1" + ")" * 5000,
    "lists_5000.py": "[" * 5000 + "]" * 5000,
    "sum_100k.py": "+".join(["1"] * 100_000),
    "attribute_50k.py": "a" + ".b" * 50_000,
    "subscript_20k.py": "a" + "[0]" * 20_000,
    "unary_20k.py": "-" * 20_000 + "1",
    "strings_5000.py": " + ".join(['"SELECT pg_advisory_lock(1)"'] * 5000),
    # Near CPython's own limit, so the tree is built: the rules must walk it without recursing.
    "sum_2500.py": "+".join(["b"] * 2500),
    "attribute_2500.py": "a" + ".b" * 2500,
    "calls_chain_2500.py": "a" + "()" * 2500,
    "subscript_2500.py": "a" + "[0]" * 2500,
    "unary_2500.py": "-" * 2500 + "y",
    "not_2500.py": "not " * 2500 + "y",
    "ifexp_2500.py": "1 if y else " * 2500 + "2",
    "and_100k.py": " and ".join(["y"] * 100_000),
    "sql_concat_2500.py": " + ".join(['"SELECT pg_advisory_lock(1)"'] * 2500),
}


def _assert_survived(found, name):
    codes = [d.code if hasattr(d, "code") else d["code"] for d in found]
    assert "OG001" not in codes, (name, found)


@pytest.mark.parametrize("name", sorted(DEEP))
def test_deep_nesting_through_the_engine_api(name):
    source = _deep_program(DEEP[name]).encode()
    found = check_source(source, f"app/{name}", Config())
    _assert_survived(found, name)
    if any(d.code == "OG000" for d in found):
        assert [d.code for d in found] == ["OG000"], found
        assert found[0].message.startswith("cannot parse: ")
    else:
        assert "OG101" in {d.code for d in found}, found


def test_deep_nesting_in_the_cli(onceguard, tmp_path):
    root = project(tmp_path)
    for name, expression in DEEP.items():
        write(root, name, _deep_program(expression))
    write(root, "zz_jobs.py", HAZARD)
    for jobs in ("1", "2"):
        table = by_path(findings(onceguard("check", ".", "--format", "json", "--no-cache", "--jobs", jobs,
                                           cwd=root, timeout=TIMEOUT)))
        for name in DEEP:
            codes = [f["code"] for f in table.get(name, [])]
            assert codes == ["OG000"] or "OG101" in codes, (name, codes)
            assert "OG001" not in codes, (name, table[name])
        assert "OG101" in {f["code"] for f in table["zz_jobs.py"]}


def test_deep_nesting_as_the_flake8_plugin_sees_it():
    """The plugin gets the tree flake8 built: the deepest trees CPython builds must not break it."""
    for name, expression in DEEP.items():
        text = _deep_program(expression)
        try:
            tree = ast.parse(text)
        except (SyntaxError, RecursionError, MemoryError, ValueError):
            continue  # flake8 reports E999 itself and never calls the plugin
        lines = text.splitlines(keepends=True)
        results = list(OnceguardChecker(tree, f"app/{name}", lines).run())
        messages = [message for _, _, message, _ in results]
        assert not any(m.startswith("OG001") for m in messages), (name, messages)
        assert any(m.startswith("OG101") for m in messages), (name, messages)


#: flake8's own pyflakes and mccabe recurse over the tree, and flake8 builds the tree without catching
#: RecursionError: deeper than this, flake8 fails whether or not onceguard is installed.
FLAKE8_DEEP = {
    "brackets_5000.py": DEEP["brackets_5000.py"],
    "calls_5000.py": DEEP["calls_5000.py"],
    "lists_5000.py": DEEP["lists_5000.py"],
    "sum_200.py": "+".join(["b"] * 200),
    "attribute_200.py": "a" + ".b" * 200,
    "and_20k.py": " and ".join(["y"] * 20_000),
    "sql_concat_200.py": " + ".join(['"SELECT pg_advisory_lock(1)"'] * 200),
}


def test_deep_nesting_under_flake8(flake8, tmp_path):
    root = project(tmp_path)
    for name, expression in FLAKE8_DEEP.items():
        write(root, name, _deep_program(expression))
    result = flake8("--isolated", "--select", "OG,E999", ".", cwd=root, timeout=TIMEOUT)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "failed during execution" not in output, output
    for name in FLAKE8_DEEP:
        mine = [line for line in result.stdout.splitlines() if line.startswith(f"./{name}:")]
        assert any(" E999 " in line or " OG101 " in line for line in mine), (name, mine)
        assert not any(" OG001 " in line for line in mine), mine


# -- size ------------------------------------------------------------------------------------


def _big_module(functions: int) -> str:
    block = textwrap.dedent(
        '''\
        def order_total_{i}(request, items):
            """Sum the prices of the order lines."""
            total = 0
            for item in items:
                if item.get("price") is None:
                    logger.error("item %s has no price", item)
                    continue
                total += item["price"] * item.get("quantity", 1)
            return {{"order": request.id, "total": total}}

        '''
    )
    head = "import logging\n\nimport asyncpg\n\nlogger = logging.getLogger(__name__)\n\n\n"
    tail = (
        "async def nightly(dsn):\n"
        "    pool = await asyncpg.create_pool(dsn)\n"
        '    await pool.execute("SELECT pg_advisory_lock(42)")\n'
    )
    return head + "".join(block.format(i=i) for i in range(functions)) + tail


def test_a_200k_line_file_with_one_hazard_at_its_end(onceguard, tmp_path):
    root = project(tmp_path)
    text = _big_module(20_000)
    assert text.count("\n") >= 200_000
    path = write(root, "big.py", text)
    hazard_line = text.count("\n")
    result = onceguard("check", "big.py", "--format", "json", "--no-cache", cwd=root, timeout=300)
    found = findings(result)
    assert any(f["code"] == "OG101" and f["line"] == hazard_line for f in found), found
    assert not any(f["code"] in ("OG000", "OG001") for f in found), found
    assert path.stat().st_size > 4_000_000


# -- never imports or runs the checked code ---------------------------------------------------


def test_checked_code_is_never_imported_or_run(onceguard, flake8, tmp_path):
    root = project(tmp_path)
    marker = tmp_path / "MARKER"
    payload = (
        f"open({str(marker)!r}, 'w').write('ran')\n"
        "import os\nos._exit(97)\n"
    )
    # Names that an importing tool would pick up by itself, and a module the checked file imports.
    write(root, "jobs.py", "import side_effects\nfrom helpers import nightly\n" + payload + HAZARD)
    write(root, "helpers.py", payload + HAZARD)
    write(root, "side_effects.py", payload + "raise SystemExit(3)\n")
    write(root, "conftest.py", payload)
    write(root, "__main__.py", payload + HAZARD)
    write(root, "sitecustomize.py", payload)
    write(root, "pkg/__init__.py", payload)
    write(root, "pkg/tasks.py", "from . import nightly\n" + payload + HAZARD)

    cli = onceguard("check", ".", "--format", "json", "--no-cache", cwd=root, timeout=TIMEOUT)
    assert "OG101" in {f["code"] for f in findings(cli)}
    named = onceguard("check", "jobs.py", "pkg/tasks.py", "--no-cache", cwd=root, timeout=TIMEOUT)
    assert named.returncode == 1
    plugin = flake8("--isolated", "--select", "OG", ".", cwd=root, timeout=TIMEOUT)
    assert "OG101" in plugin.stdout
    for path in ("jobs.py", "helpers.py", "side_effects.py"):
        assert not any(d.code in ("OG000", "OG001") for d in check_source((root / path).read_bytes(), path, Config()))
    assert not marker.exists()
