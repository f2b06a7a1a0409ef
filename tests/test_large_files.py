"""A file too large for one syntax tree is checked a window at a time, in bounded memory, with the findings
the whole file gives (``analysis.large_files``)."""
from __future__ import annotations

import ast
import glob
import json
import os
import subprocess
import sys
import textwrap

import pytest

from onceguard.analysis import large_files
from onceguard.config import from_mapping
from onceguard.engine import check
from onceguard.testing import expected_findings, generated_module

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
MIB = 1 << 20


def _layout(source: str) -> large_files.Layout:
    return large_files.layout(textwrap.dedent(source))


def test_a_decorated_definition_and_an_else_belong_to_their_statement():
    found = _layout('''\
        import os

        @app.task("interval")
        @retry
        def job():
            pass

        if os.environ.get("X"):
            A = 1
        else:
            A = 2
        B = [
            1,
        ]
        ''')
    assert [(s.first, s.last, s.kind) for s in found.statements] == [
        (1, 1, "import"), (3, 6, "definition"), (8, 11, "other"), (12, 14, "other")]


def test_a_class_lists_the_statements_of_its_body_after_its_header():
    found = _layout('''\
        @dataclass
        class Jobs(
            Base,
        ):
            """Doc."""
            name = "x"

            @staticmethod
            def first():
                return 1

            def second(self):
                if self:
                    pass
                else:
                    pass
        ''')
    (jobs,) = found.statements
    assert (jobs.first, jobs.header_last, jobs.last) == (1, 4, 16)
    assert [(s.first, s.last) for s in jobs.body] == [(5, 5), (6, 6), (8, 10), (12, 16)]


def test_only_displays_of_literals_over_many_lines_are_folded():
    rows = "".join(f"    ({n}, 'r{n}', -{n}.5, None),\n" for n in range(12))
    few = "".join(f"    {n},\n" for n in range(3))
    source = (f"TABLE = [\n{rows}]\nSHORT = [\n{few}]\nCALLS = [\n{rows}    str(1),\n]\n"
              f"LOOKUP = index[\n{rows}]\nTEXT = [\n{rows}    f'{{x}}',\n]\n")
    found = large_files.layout(source)
    lines = source.splitlines()
    folded = large_files.folded_lines(lines, found.folds)
    assert [lines[fold[0] - 1].split(" =")[0] for fold in found.folds] == ["TABLE", "LOOKUP"]
    tree = ast.parse("\n".join(folded))  # still Python, every statement on its own line
    assert [(node.lineno, node.end_lineno) for node in tree.body] == [
        (node.lineno, node.end_lineno) for node in ast.parse(source).body]
    assert "CALLS" in folded[len(rows.splitlines()) + len(few.splitlines()) + 4]


def test_every_window_is_python_with_each_line_where_it_was():
    lines = ["import os", "", "SIZE = 3", ""]
    for n in range(200):
        lines += [f"def f{n}(x):", f"    return os.path.join(x, '{n}')", ""]
    lines += ["class Big:", "    limit = SIZE"]
    for n in range(200):
        lines += [f"    def m{n}(self):", f"        return {n}", ""]
    found = large_files.layout("\n".join(lines) + "\n")
    seen = set()
    old = large_files.WINDOW_BYTES
    large_files.WINDOW_BYTES = 600
    try:
        windows = list(large_files.windows(lines, found))
    finally:
        large_files.WINDOW_BYTES = old
    assert len(windows) > 10
    for window in windows:
        tree = ast.parse(window)
        kept = window.splitlines()
        assert kept[0] == "import os" and kept[2] == "SIZE = 3"  # the context, in every window
        for number, text in enumerate(kept, 1):
            if text:
                assert text == lines[number - 1]
                seen.add(number)
        assert all(isinstance(node, (ast.Import, ast.Assign, ast.FunctionDef, ast.ClassDef)) for node in tree.body)
    assert seen == {n for n, text in enumerate(lines, 1) if text}


def _fixture_files():
    for root in sorted(glob.glob(os.path.join(FIXTURES, "*"))):
        for path in sorted(glob.glob(os.path.join(root, "**", "*.py"), recursive=True)):
            yield root, path


@pytest.mark.parametrize("root, path", list(_fixture_files()),
                         ids=[os.path.relpath(p, FIXTURES) for _, p in _fixture_files()])
def test_a_fixture_file_read_in_windows_gives_its_findings(root, path, monkeypatch):
    config = from_mapping({}, root=root)
    with open(path, "rb") as handle:
        source = handle.read()
    whole = {(d.line, d.code, d.message) for d in check.check_source(source, path, config, cross_file=True)}
    monkeypatch.setattr(large_files, "LARGE_FILE_BYTES", 0)
    windowed = {(d.line, d.code, d.message) for d in check.check_source(source, path, config, cross_file=True)}
    assert windowed == whole


def test_a_five_megabyte_module_is_checked_in_bounded_memory_with_its_findings(tmp_path):
    """The installed console script on a dense 5 MB module: every hazard found at its line, no fix attempted
    (a rewrite of such a file would take gigabytes: the summary says so) and the file left as it was, and
    the whole run's peak memory under 300 MiB (the whole file as one tree takes about 900 MiB)."""
    text = generated_module(5 * MIB)
    assert len(text.encode()) > 5 * MIB
    module = tmp_path / "jobs.py"
    module.write_text(text)
    script = os.path.join(os.path.dirname(sys.executable), "onceguard")
    # A wrapper whose only child is the run, so the children's peak is the run's own.
    measure = ("import resource, subprocess, sys\n"
               "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
               "print(done.stdout, file=sys.stdout)\n"
               "print(done.stderr, file=sys.stderr)\n"
               "print('PEAK', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n")
    done = subprocess.run(
        [sys.executable, "-c", measure, script, "check", "--no-cache", "--fix", "--unsafe-fixes",
         "--select", "OG104,OG201", "--format", "json", str(tmp_path)],
        capture_output=True, text=True, cwd=str(tmp_path), timeout=600)
    found = sorted((d["line"], d["code"]) for d in json.loads(done.stdout))
    assert found == expected_findings(text), done.stderr[-2000:]
    assert module.read_text() == text
    assert done.stderr.count("too large to rewrite") == 3
    peak_kib = int(done.stderr.rsplit("PEAK", 1)[1].split()[0])
    assert peak_kib < 300 * 1024, f"peak {peak_kib / 1024:.0f} MiB"


def test_a_window_that_does_not_parse_hands_the_file_to_the_whole_file_reading(tmp_path, monkeypatch):
    """Statements misread by the running Python's tokenizer (a newer grammar) never cost a finding nor make
    up an error: the file is then read whole, as a file under the size limit is."""
    path = tmp_path / "jobs.py"
    path.write_text(generated_module(64 << 10))
    source = path.read_bytes()
    config = from_mapping({}, root=str(tmp_path))
    whole = check.check_source(source, str(path), config)
    assert {(d.line, d.code) for d in whole} == set(expected_findings(path.read_text()))
    monkeypatch.setattr(large_files, "LARGE_FILE_BYTES", 0)
    monkeypatch.setattr(large_files, "windows", lambda lines, layout: iter(["def broken(:\n"]))
    assert check.check_source(source, str(path), config) == whole
