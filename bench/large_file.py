#!/usr/bin/env python3
"""The cost of one large file: time and peak memory of ``onceguard check --no-cache`` on a single dense
generated module of 1, 2, 4 and 8 MiB (``onceguard.testing.generated_module``: handlers, a class larger
than a window, a table of literals, three hazards), against ``ruff check --select ALL --no-cache``.

Run by hand from the repository root (never from the test suite)::

    .venv/bin/python bench/large_file.py            # prints a Markdown table
    .venv/bin/python bench/large_file.py --sizes 1 4

A file over 1 MiB is checked a window at a time (``onceguard.analysis.large_files``), so the time grows
with the size and the memory stays flat; each run's peak resident set is measured by a wrapper process
whose only child is the run.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

_MEASURE = ("import resource, subprocess, sys\n"
            "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")


def _run(command, cwd):
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _MEASURE, *command], cwd=cwd, capture_output=True, text=True,
                          check=True)
    return time.perf_counter() - started, int(done.stdout.split()[-1]) / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 4, 8], help="module sizes in MiB")
    args = parser.parse_args()
    from onceguard.testing import expected_findings, generated_module

    onceguard = shutil.which("onceguard") or os.path.join(os.path.dirname(sys.executable), "onceguard")
    ruff = shutil.which("ruff")
    print("| size | lines | onceguard cold | per MiB | peak RSS | ruff --select ALL | hazards found |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as directory:
            text = generated_module(size << 20)
            with open(os.path.join(directory, "module.py"), "w", encoding="utf-8") as handle:
                handle.write(text)
            with open(os.path.join(directory, "pyproject.toml"), "w", encoding="utf-8") as handle:
                handle.write("[tool.onceguard]\n")
            seconds, peak = _run([onceguard, "check", "--no-cache", "--exit-zero", "."], directory)
            found = subprocess.run([onceguard, "check", "--no-cache", "--format", "json", "--exit-zero", "."],
                                   cwd=directory, capture_output=True, text=True, check=True).stdout
            wanted = expected_findings(text)
            reported = {(d["line"], d["code"]) for d in json.loads(found)}
            hits = sum(pair in reported for pair in wanted)
            ruff_seconds = "n/a"
            if ruff:
                ruff_seconds = f"{_run([ruff, 'check', '--select', 'ALL', '--no-cache', '--silent', '.'], directory)[0]:.2f} s"
            print(f"| {size} MiB | {text.count(chr(10)):,} | {seconds:.2f} s | {seconds / size:.2f} s | "
                  f"{peak:.0f} MiB | {ruff_seconds} | {hits}/{len(wanted)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
