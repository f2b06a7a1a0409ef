#!/usr/bin/env python3
"""What each rule adds to a cold run, measured inside one run so the machine's drift cancels out.

Run by hand from the repository root (never from the test suite)::

    python bench/rule_cost.py bench/.work/trees/full OG601 OG602 OG603
    python bench/rule_cost.py bench/corpus                 # every enabled rule

Dropping a rule and timing two runs measures its cost as the difference of two numbers that each vary
by ten percent or more between identical runs on a shared machine. Here each rule is measured in a run of
its own (a fresh process: nothing cached from another rule's run): ``onceguard check --no-cache --jobs 1``
with the rule moved to the end of the rule list, so every analysis another rule would have built for a
file is already built when it runs. What it costs is then

- the CPU time inside its own ``check`` for each file, which is what it adds to that file, and
- the whole time of every file that only its trigger words let past the prefilter (the read, parse and
  facts other rules would never have paid for).

Both are divided by the same run's CPU time. It over-counts, never under-counts: project-wide analyses
the rule builds first, which a later file's other rules would have built anyway, are charged to it.

``--ablate N`` measures the other way, for a rule whose share above is near a limit: N rounds, each a run
with every rule and a run without the rule (in fresh processes, the order alternating between rounds), and
the median of the rounds' differences. It counts exactly what the rule adds, shared analyses included, but
each round's difference carries the machine's drift between two runs.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def _measure(root: str, code: str) -> dict:
    """In this process: one cold run over ``root`` with ``code`` last, and what it cost."""
    from onceguard.engine import check, runner

    own = {"check": 0.0, "alone": 0.0, "alone_files": 0}
    state = {"alone": False}

    original_rules_for = runner._rules_for

    def rules_for(config):
        rules = original_rules_for(config)
        measured = [r for r in rules if r.code == code]
        if not measured:
            raise SystemExit(f"{code} is not an enabled rule")
        rule = measured[0]
        if not getattr(rule, "_timed", False):
            inner = rule.check

            def timed(facts, _inner=inner):
                start = time.process_time()
                try:
                    return list(_inner(facts))
                finally:
                    if not state["alone"]:
                        own["check"] += time.process_time() - start

            rule.check = timed
            rule._timed = True
        return [r for r in rules if r.code != code] + [rule]

    original_applicable = check.applicable_rules

    def applicable(source, rules, context=None):
        found = original_applicable(source, rules, context)
        state["alone"] = len(found) == 1 and found[0].code == code
        return found

    original_check_one = runner.check_one

    def check_one(item):
        state["alone"] = False
        start = time.process_time()
        try:
            return original_check_one(item)
        finally:
            if state["alone"]:
                own["alone"] += time.process_time() - start
                own["alone_files"] += 1
            state["alone"] = False

    runner._rules_for = rules_for
    check.applicable_rules = applicable
    runner.check_one = check_one
    total, out = _cold_run(root)
    findings = json.loads(out or "[]")
    return {
        "code": code,
        "total_s": round(total, 2),
        "check_s": round(own["check"], 3),
        "alone_s": round(own["alone"], 3),
        "alone_files": own["alone_files"],
        "share": round((own["check"] + own["alone"]) / total, 4) if total else 0.0,
        "findings": sum(1 for f in findings if f.get("code") == code),
    }


def _cold_run(root: str) -> tuple:
    """In this process: ``onceguard check --no-cache --jobs 1`` over ``root``, its CPU time and its JSON."""
    import contextlib
    import io

    from onceguard.surfaces.cli import main

    sys.argv = ["onceguard", "check", "--no-cache", "--exit-zero", "--jobs", "1", "--format", "json", root]
    out = io.StringIO()
    start = time.process_time()
    with contextlib.redirect_stdout(out):
        try:
            main()
        except SystemExit:
            pass
    return time.process_time() - start, out.getvalue()


def _run_without(root: str, code: str) -> float:
    """In this process: one cold run over ``root`` (without ``code`` when given), its CPU time."""
    from onceguard.engine import runner

    if code:
        original = runner._rules_for
        runner._rules_for = lambda config: [r for r in original(config) if r.code != code]
    return _cold_run(root)[0]


def _ablate(root: str, code: str, rounds: int) -> None:
    def run(without: str) -> float:
        child = subprocess.run([sys.executable, __file__, root, "--run-without", without or "-"],
                               capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
        if child.returncode != 0:
            raise SystemExit(f"run failed\n{child.stderr.strip()}")
        return float(child.stdout.strip().splitlines()[-1])

    shares = []
    for index in range(rounds):
        order = ("", code) if index % 2 == 0 else (code, "")
        times = {without: run(without) for without in order}
        with_rule, without_rule = times[""], times[code]
        shares.append((with_rule - without_rule) / with_rule)
        print(f"{code}  round {index + 1}: with {with_rule:.1f}s, without {without_rule:.1f}s, "
              f"adds {100 * shares[-1]:+.1f}%", flush=True)
    print(f"{code}  median over {rounds} rounds: adds {100 * statistics.median(shares):+.1f}%")


def _enabled_codes() -> list:
    from onceguard.config import from_mapping
    from onceguard.engine.check import enabled_rules

    return [r.code for r in enabled_rules(from_mapping({}))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", help="the tree to check (the bench corpus or one of its trees)")
    parser.add_argument("codes", nargs="*", help="rules to measure (default: every enabled rule)")
    parser.add_argument("--ablate", type=int, metavar="N", help="N rounds of runs with and without each rule")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # the child process's own measurement
    parser.add_argument("--run-without", help=argparse.SUPPRESS)  # a child's whole run, without a rule
    args = parser.parse_args()
    if args.one:
        print(json.dumps(_measure(os.path.abspath(args.root), args.one)))
        return 0
    if args.run_without:
        print(_run_without(os.path.abspath(args.root), "" if args.run_without == "-" else args.run_without))
        return 0
    if not os.path.isdir(args.root):
        parser.error(f"{args.root}: no such directory")
    codes = args.codes or _enabled_codes()
    if args.ablate:
        for code in codes:
            _ablate(args.root, code, args.ablate)
        return 0
    print(f"{'rule':6}  {'share':>6}  {'in check':>9}  {'alone':>7}  {'files':>5}  {'run':>7}  findings")
    for code in codes:
        child = subprocess.run(
            [sys.executable, __file__, args.root, "--one", code],
            capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        if child.returncode != 0:
            print(f"{code}: failed\n{child.stderr.strip()}", file=sys.stderr)
            return 1
        r = json.loads(child.stdout.strip().splitlines()[-1])
        print(f"{r['code']:6}  {100 * r['share']:5.1f}%  {r['check_s']:8.2f}s  {r['alone_s']:6.2f}s  "
              f"{r['alone_files']:5}  {r['total_s']:6.1f}s  {r['findings']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
