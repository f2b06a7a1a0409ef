"""Every ``.py`` file of the installed site-packages through the CLI: zero internal errors.

About 2,000 files and 750,000 lines of other people's code (pytest, hypothesis, libcst, flake8,
pglast, pygls, jsonschema...), far more varied than any fixture. A file onceguard cannot parse
must be one CPython cannot parse either.
"""
from __future__ import annotations

import ast
import json
import os
import sysconfig
import time
import warnings
from pathlib import Path

from onceguard.config import config_for
from onceguard.engine.discovery import discover
from samples import UNSTABLE_KEY

PURELIB = sysconfig.get_paths()["purelib"]


def _python_files(root: str) -> list:
    return sorted(
        os.path.join(directory, name)
        for directory, _, files in os.walk(root)
        for name in files
        if name.endswith(".py") and os.path.isfile(os.path.join(directory, name))
    )


def test_site_packages_has_no_internal_errors(onceguard, tmp_path):
    every = _python_files(PURELIB)
    assert len(every) > 500, f"{PURELIB} looks empty: {len(every)} .py files"
    problems: list = []
    walked = list(discover([PURELIB], config_for, problems))
    # Only the default excludes (__pycache__, build, ...) may leave files out of the run.
    assert len(walked) > 0.9 * len(every), (len(walked), len(every))

    # A hazard among them: the run must report it, so a run where no rule runs cannot pass.
    sentinel = tmp_path / "sentinel" / "keys.py"
    sentinel.parent.mkdir()
    sentinel.write_text(UNSTABLE_KEY, encoding="utf-8")
    started = time.perf_counter()
    result = onceguard("check", PURELIB, str(sentinel), "--no-cache", "--format", "json", "--exit-zero",
                       cwd=tmp_path, timeout=900)
    elapsed = time.perf_counter() - started
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert ("sentinel/keys.py", 3, "OG104") in {(f["path"], f["line"], f["code"]) for f in found}
    assert len({f["path"] for f in found}) > 1, "no finding anywhere in site-packages: did the rules run?"
    internal = [f for f in found if f["code"] == "OG001"]
    assert not internal, "\n".join(f"{f['path']}:{f['line']}: {f['message']}" for f in internal[:20])

    for finding in (f for f in found if f["code"] == "OG000" and f["message"].startswith("cannot parse")):
        path = Path(tmp_path, finding["path"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                ast.parse(path.read_bytes(), filename=str(path))
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
        raise AssertionError(f"onceguard cannot parse a file CPython parses: {finding}")
    print(f"site-packages: {len(walked)} files in {elapsed:.1f} s, {len(found)} findings")
