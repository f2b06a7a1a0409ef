#!/usr/bin/env python3
"""Which findings on unlabelled corpus sites have no verdict in triage.tsv yet.

usage: untriaged.py [--unlabelled FILE] [--triage triage.tsv]

``run.py --unlabelled FILE`` (../shared/realworld/run.py) writes every finding that lands on no labelled
site; each must be judged here, in ``triage.tsv`` (package, version, path, line, code, verdict, reason;
verdict tp, fp or unsure).  A rule change that moves or adds findings shows up as rows printed by this
script; rows in triage.tsv that no finding matches any more are printed as stale.  Exit 1 when either
list is non-empty.
"""
import argparse
import csv
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RUN = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "realworld", "run.py"))
WINDOW = 3
VERDICTS = {"tp", "fp", "unsure"}


def read_unlabelled(path):
    with open(path) as fh:
        return [(r[0], r[1], r[2], int(r[3]), r[4]) for r in csv.reader(fh, delimiter="\t") if r]


def read_triage(path):
    with open(path) as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    for row in rows:
        if row["verdict"] not in VERDICTS:
            sys.exit(f"{path}: verdict {row['verdict']!r} is not one of {sorted(VERDICTS)}")
    return rows


def matches(row, finding):
    package, version, path, line, code = finding
    return (row["package"], row["version"], row["path"], row["code"]) == (package, version, path, code) \
        and abs(int(row["line"]) - line) <= WINDOW


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--unlabelled", help="run.py's --unlabelled output (default: run run.py now)")
    parser.add_argument("--triage", default=os.path.join(HERE, "triage.tsv"))
    args = parser.parse_args()
    unlabelled = args.unlabelled
    if unlabelled is None:
        unlabelled = os.path.join(tempfile.mkdtemp(), "unlabelled.tsv")
        subprocess.run([sys.executable, RUN, "--unlabelled", unlabelled], check=True, stdout=subprocess.DEVNULL)
    findings = read_unlabelled(unlabelled)
    triage = read_triage(args.triage)
    new = [f for f in findings if not any(matches(row, f) for row in triage)]
    stale = [row for row in triage if not any(matches(row, f) for f in findings)]
    for f in new:
        print("UNJUDGED\t" + "\t".join(map(str, f)))
    for row in stale:
        print("STALE\t" + "\t".join(row[k] for k in ("package", "version", "path", "line", "code")))
    counts = {v: sum(1 for row in triage if row["verdict"] == v and row not in stale) for v in sorted(VERDICTS)}
    print(f"{len(findings)} findings on unlabelled sites; judged: "
          + ", ".join(f"{n} {v}" for v, n in counts.items()) + f"; {len(new)} unjudged, {len(stale)} stale")
    return 1 if new or stale else 0


if __name__ == "__main__":
    sys.exit(main())
