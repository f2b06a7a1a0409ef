#!/usr/bin/env python3
"""onceguard's speed evidence: the same real Python files through onceguard, flake8, Fixit and ruff.

Run by hand from the repository root (never from the test suite)::

    .venv/bin/python bench/run.py                 # corpus, tools, every measurement
    .venv/bin/python bench/run.py --rounds 3      # fewer rounds
    .venv/bin/python bench/run.py --corpus-only   # just download and unpack
    .venv/bin/python bench/run.py --results bench/RESULTS.md

What it does:

1. Corpus: pinned source distributions from PyPI (``pip download --no-deps
   --no-binary :all:``), unpacked into ``bench/corpus/`` (ignored by git; kept
   between runs, never downloaded twice).
2. Trees: the ``.py`` files of the corpus, minus the directories any of the
   tools skips by default (so every tool sees exactly the same files), hard
   linked into ``bench/.work/trees/{quarter,half,full,fixit-slice}``.  The
   quarter and half are nested prefixes of one deterministic shuffle, so each
   mixes every package.  Each tree root has its own ``pyproject.toml`` so no
   configuration from the corpus or from this repository applies.
3. Tools: two virtual environments under ``bench/.work/`` with the same
   flake8 version, one with onceguard installed (editable) and one without;
   ruff and Fixit from the running interpreter's environment.
4. Measurements (wall clock and CPU time, median of several rounds, the tools taking turns
   within each round): ``onceguard check
   --no-cache`` (cold), ``onceguard check`` with a filled cache (warm), flake8
   with and without onceguard, ``ruff check --select ALL --no-cache
   --silent``, Fixit with one rule (on a fixed slice only: it is too slow for
   the whole corpus), and onceguard's peak memory (resident set of the whole
   process tree, sampled every 20 ms, and the largest single process).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
CORPUS = BENCH / "corpus"
WORK = BENCH / ".work"
SDISTS = WORK / "sdists"
TREES = WORK / "trees"

#: Pinned so the numbers of two runs are about the same files.
PACKAGES: Tuple[Tuple[str, str], ...] = (
    ("django", "5.0.6"),
    ("sqlalchemy", "2.0.30"),
    ("celery", "5.4.0"),
    ("apache-airflow", "2.9.1"),
    ("mlflow", "2.13.0"),
    ("prefect", "2.19.3"),
)

#: Directory names that ruff, flake8, Fixit or onceguard skip by default.  A file below one of them
#: is left out of every tree, so that no tool checks a file another one skips.
SKIPPED_DIRECTORIES = frozenset({
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache",
    ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv",
    ".vscode", "__pypackages__", "_build", "buck-out", "build", "dist", "node_modules", "site-packages",
    "venv", "CVS", "__pycache__", ".onceguard_cache",
})

FIXIT_RULE = "fixit.rules:NoRedundantFString"
FIXIT_SLICE_LINES = 60_000
FRACTIONS = (("quarter", 0.25), ("half", 0.5), ("full", 1.0))


# --------------------------------------------------------------------------------------------------
# corpus

def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def fetch_corpus() -> None:
    CORPUS.mkdir(parents=True, exist_ok=True)
    SDISTS.mkdir(parents=True, exist_ok=True)
    for name, version in PACKAGES:
        target = CORPUS / f"{name}-{version}"
        if (target / ".complete").exists():
            continue
        archive = _find_sdist(name, version)
        if archive is None:
            log(f"downloading {name}=={version}")
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                 "--dest", str(SDISTS), f"{name}=={version}"],
                check=True,
            )
            archive = _find_sdist(name, version)
            if archive is None:
                raise SystemExit(f"pip download {name}=={version} left no source archive in {SDISTS}")
        log(f"unpacking {archive.name}")
        if target.exists():
            shutil.rmtree(target)
        target.mkdir()
        _unpack(archive, target)
        (target / ".complete").write_text(archive.name + "\n")


def _normalise(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")


def _find_sdist(name: str, version: str) -> Optional[Path]:
    wanted = f"{_normalise(name)}_{version}"
    for candidate in sorted(SDISTS.glob("*")):
        stem = candidate.name
        for suffix in (".tar.gz", ".zip", ".tar.bz2"):
            if stem.endswith(suffix):
                stem = stem[: -len(suffix)]
                if _normalise(stem.rsplit("-", 1)[0]) + "_" + stem.rsplit("-", 1)[-1] == wanted:
                    return candidate
    return None


def _unpack(archive: Path, target: Path) -> None:
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as handle:
            for member in handle.namelist():
                resolved = (target / member).resolve()
                if not str(resolved).startswith(str(target.resolve())):
                    raise SystemExit(f"{archive}: member {member!r} escapes the target directory")
            handle.extractall(target)
        return
    with tarfile.open(archive) as handle:
        try:
            handle.extractall(target, filter="data")
        except TypeError:  # Python without extraction filters
            handle.extractall(target)


# --------------------------------------------------------------------------------------------------
# trees

@dataclass
class Tree:
    name: str
    root: Path
    files: List[str]
    lines: int
    note: str = ""


def corpus_files() -> List[Tuple[str, int]]:
    """(path relative to the corpus, line count) of every checked .py file, in a fixed shuffled order."""
    found = []
    for directory, subdirectories, files in os.walk(CORPUS):
        subdirectories[:] = sorted(d for d in subdirectories if d not in SKIPPED_DIRECTORIES
                                   and not d.endswith(".egg-info"))
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(directory, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, "rb") as handle:
                lines = handle.read().count(b"\n")
            found.append((os.path.relpath(path, CORPUS), lines))
    # A shuffle that does not depend on the Python version or on hash randomisation.
    found.sort(key=lambda item: hashlib.sha1(item[0].encode("utf-8", "surrogateescape")).hexdigest())
    return found


def prefix_by_lines(files: Sequence[Tuple[str, int]], budget: int) -> List[Tuple[str, int]]:
    chosen, total = [], 0
    for path, lines in files:
        if total >= budget:
            break
        chosen.append((path, lines))
        total += lines
    return chosen


def build_tree(name: str, files: Sequence[Tuple[str, int]], pyproject: str = "") -> Tree:
    root = TREES / name
    listing = "\n".join(path for path, _ in files)
    stamp = hashlib.sha1((listing + pyproject).encode("utf-8", "surrogateescape")).hexdigest()
    marker = root / ".bench-tree"
    if not (marker.exists() and marker.read_text() == stamp):
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        for path, _ in files:
            destination = root / path
            destination.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(CORPUS / path, destination)
            except OSError:
                shutil.copy2(CORPUS / path, destination)
        marker.write_text(stamp)
    # Anchors onceguard's (and Fixit's) project root here: no configuration from outside applies.
    # The trees live in a folder this repository's .gitignore leaves out: every tool is told to read them
    # anyway (ruff with --no-respect-gitignore).
    (root / "pyproject.toml").write_text(pyproject or "[tool.onceguard]\nrespect-gitignore = false\n")
    return Tree(name, root, sorted(path for path, _ in files), sum(lines for _, lines in files))


def build_trees(files: Sequence[Tuple[str, int]]) -> Tuple[List[Tree], Tree]:
    total = sum(lines for _, lines in files)
    trees = [build_tree(name, prefix_by_lines(files, int(total * share)) if share < 1 else files)
             for name, share in FRACTIONS]
    fixit_config = (
        "[tool.onceguard]\nrespect-gitignore = false\n\n[tool.fixit]\nroot = true\n"
        f"disable = [\"fixit.rules\"]\nenable = [\"{FIXIT_RULE}\"]\n"
    )
    slice_tree = build_tree("fixit-slice", prefix_by_lines(files, FIXIT_SLICE_LINES), fixit_config)
    return trees, slice_tree


def warm_page_cache(tree: Tree) -> None:
    for path in tree.files:
        with open(tree.root / path, "rb") as handle:
            handle.read()


# --------------------------------------------------------------------------------------------------
# tools

def venv_bin(venv: Path, name: str) -> Path:
    return venv / "bin" / name


def flake8_version() -> str:
    from importlib.metadata import version

    return version("flake8")


def ensure_venv(venv: Path, requirements: Sequence[str]) -> Path:
    stamp = venv / ".bench-requirements"
    wanted = "\n".join(requirements)
    if stamp.exists() and stamp.read_text() == wanted and venv_bin(venv, "flake8").exists():
        return venv
    log(f"creating {venv.relative_to(REPO)}: {' '.join(requirements)}")
    if venv.exists():
        shutil.rmtree(venv)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv_bin(venv, "python")), "-m", "pip", "install", "--quiet", *requirements], check=True)
    stamp.write_text(wanted)
    return venv


def tool_paths() -> Dict[str, str]:
    here = Path(sys.executable).parent
    paths = {}
    for name in ("ruff", "fixit"):
        candidate = here / name
        found = str(candidate) if candidate.exists() else shutil.which(name)
        if not found:
            raise SystemExit(f"bench: `{name}` not found next to {sys.executable} or on PATH "
                             f"(install with: pip install -e '.[bench]')")
        paths[name] = found
    version = flake8_version()
    plain = ensure_venv(WORK / "venv-flake8", [f"flake8=={version}"])
    with_og = ensure_venv(WORK / "venv-flake8-onceguard", [f"flake8=={version}", str(REPO)])
    # A fresh, non-editable copy of the working tree: every measurement of this run uses the same
    # code and rules, whatever is edited while it runs.
    log("installing a snapshot of onceguard into the flake8 + onceguard environment")
    # First whatever the current pyproject asks for, then onceguard itself afresh.
    subprocess.run([str(venv_bin(with_og, "python")), "-m", "pip", "install", "--quiet", str(REPO)], check=True)
    subprocess.run([str(venv_bin(with_og, "python")), "-m", "pip", "install", "--quiet", "--no-deps",
                    "--force-reinstall", str(REPO)], check=True)
    paths["onceguard"] = str(venv_bin(with_og, "onceguard"))
    paths["python+onceguard"] = str(venv_bin(with_og, "python"))
    paths["flake8"] = str(venv_bin(plain, "flake8"))
    paths["flake8+onceguard"] = str(venv_bin(with_og, "flake8"))
    return paths


def version_of(command: Sequence[str]) -> str:
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return (result.stdout or result.stderr).strip().splitlines()[0] if (result.stdout or result.stderr) else "?"


# --------------------------------------------------------------------------------------------------
# measuring

class TreeMemory:
    """Samples the resident set of a process and all its descendants (a pool's workers included)."""

    def __init__(self, pid: int, interval: float = 0.02) -> None:
        self.pid = pid
        self.interval = interval
        self.peak = 0
        self.peak_single = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            total, single = self._sample()
            self.peak = max(self.peak, total)
            self.peak_single = max(self.peak_single, single)
            self._stop.wait(self.interval)

    def _sample(self) -> Tuple[int, int]:
        children: Dict[int, List[int]] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            parent = int(data[data.rindex(b")") + 2:].split()[1])
            children.setdefault(parent, []).append(int(entry))
        total, single, stack = 0, 0, [self.pid]
        while stack:
            pid = stack.pop()
            stack.extend(children.get(pid, ()))
            try:
                with open(f"/proc/{pid}/statm", "rb") as handle:
                    resident = int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, IndexError, ValueError):
                continue
            total += resident
            single = max(single, resident)
        return total, single

    def stop(self) -> Tuple[int, int]:
        self._stop.set()
        self._thread.join()
        return self.peak, self.peak_single


@dataclass
class Run:
    seconds: float
    tree_rss: int = 0
    max_process_rss: int = 0
    #: user + system time of the process and every descendant it waited for (pool workers included):
    #: far less sensitive than wall clock to other work on the machine.
    cpu_seconds: float = 0.0


def run_once(command: Sequence[str], cwd: Path, allowed: Sequence[int] = (0, 1), memory: bool = False) -> Run:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    sampler = TreeMemory(process.pid) if memory else None
    _, stderr = process.communicate()
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    tree_rss, single_rss = sampler.stop() if sampler else (0, 0)
    text = stderr.decode("utf-8", "replace")
    if process.returncode not in allowed or "Traceback" in text:
        raise SystemExit(f"bench: {' '.join(map(str, command))} in {cwd} exited {process.returncode}:\n{text[-3000:]}")
    return Run(seconds, tree_rss, single_rss, cpu)


@dataclass
class Measurement:
    label: str
    tree: str
    runs: List[Run] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(r.seconds for r in self.runs)

    @property
    def cpu_median(self) -> float:
        return statistics.median(r.cpu_seconds for r in self.runs)

    @property
    def peak_tree_rss(self) -> int:
        return max((r.tree_rss for r in self.runs), default=0)


def clear_onceguard_cache(tree: Tree) -> None:
    shutil.rmtree(tree.root / ".onceguard_cache", ignore_errors=True)


def bench_tree(tree: Tree, tools: Dict[str, str], rounds: int, slow_rounds: int) -> Dict[str, Measurement]:
    """Every tool once per round, in turn, so that load from elsewhere hits all of them alike."""
    warm_page_cache(tree)
    clear_onceguard_cache(tree)
    og, ruff = tools["onceguard"], tools["ruff"]
    commands = {
        "ruff": ("ruff --select ALL", [ruff, "check", "--select", "ALL", "--no-cache", "--silent", "--isolated",
                                       "--no-respect-gitignore", "--exit-zero", "."], False, rounds),
        "cold": ("onceguard cold", [og, "check", "--no-cache", "--exit-zero", "."], True, rounds),
        # The same run with each file judged alone: the difference is the project model's share.
        "alone": ("onceguard cold, files alone", [og, "check", "--no-cache", "--no-project", "--exit-zero", "."],
                  False, rounds),
        "warm": ("onceguard warm", [og, "check", "--exit-zero", "."], True, rounds),
        "flake8": ("flake8", [tools["flake8"], "--isolated", "--exit-zero", "."], False, slow_rounds),
        "flake8+og": ("flake8 + onceguard", [tools["flake8+onceguard"], "--isolated", "--exit-zero", "."], False,
                      slow_rounds),
    }
    run_once([og, "check", "--exit-zero", "."], tree.root)  # fills the cache the warm runs read
    results = interleaved(tree, commands)
    clear_onceguard_cache(tree)
    return results


def interleaved(tree: Tree, commands: Dict[str, tuple]) -> Dict[str, Measurement]:
    """``commands``: key -> (label, command, sample memory?, rounds)."""
    results = {key: Measurement(label, tree.name) for key, (label, _, _, _) in commands.items()}
    for round_number in range(max(wanted for _, _, _, wanted in commands.values())):
        for key, (label, command, memory, wanted) in commands.items():
            if round_number >= wanted:
                continue
            run = run_once(command, tree.root, memory=memory)
            results[key].runs.append(run)
            log(f"{tree.name:<11} {label:<26} round {round_number + 1}/{wanted}: {run.seconds:7.2f} s "
                f"({run.cpu_seconds:6.2f} s CPU)")
    return results


def bench_fixit(tree: Tree, tools: Dict[str, str], rounds: int, slow_rounds: int) -> Dict[str, Measurement]:
    warm_page_cache(tree)
    return interleaved(tree, {
        "fixit": ("fixit lint (1 rule)", [tools["fixit"], "lint", "."], False, slow_rounds),
        "cold": ("onceguard cold", [tools["onceguard"], "check", "--no-cache", "--exit-zero", "."], False, rounds),
        "ruff": ("ruff --select ALL", [tools["ruff"], "check", "--select", "ALL", "--no-cache", "--silent",
                                       "--isolated", "--no-respect-gitignore", "--exit-zero", "."], False, rounds),
    })


def check_same_files(tree: Tree, tools: Dict[str, str]) -> str:
    """ruff and onceguard must walk the same files (a finding-free check cannot show it, ruff can)."""
    listed = subprocess.run(
        [tools["ruff"], "check", "--isolated", "--no-respect-gitignore", "--show-files", "."],
        cwd=tree.root, capture_output=True, text=True,
    ).stdout
    ruff_files = sum(1 for line in listed.splitlines() if line.endswith(".py"))
    ours = in_snapshot(tools, tree, """
from onceguard.config import config_for
from onceguard.engine.discovery import discover
print(sum(1 for _ in discover(["."], config_for, [])))
""").strip()
    return f"{len(tree.files)} files in the tree, ruff walks {ruff_files}, onceguard walks {ours}"


def in_snapshot(tools: Dict[str, str], tree: Tree, code: str) -> str:
    result = subprocess.run([tools["python+onceguard"], "-c", code], cwd=tree.root, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"bench: onceguard's snapshot failed:\n{result.stderr[-3000:]}")
    return result.stdout


# --------------------------------------------------------------------------------------------------
# prefilter and machine

def prefilter_rate(tree: Tree, tools: Dict[str, str]) -> Tuple[int, int, int, int, int, List[str]]:
    """Files and lines that contain a trigger of an enabled rule (the rest is never parsed)."""
    result = subprocess.run(
        [tools["python+onceguard"], "-c", PREFILTER_SCRIPT], cwd=tree.root, input="\n".join(tree.files),
        capture_output=True, text=True,
    )
    if result.returncode != 0:
        raise SystemExit(f"bench: measuring the prefilter failed:\n{result.stderr[-3000:]}")
    data = json.loads(result.stdout)
    files_in = sum(1 for hit, _ in data["hits"] if hit)
    lines_in = sum(lines for hit, lines in data["hits"] if hit)
    return files_in, len(tree.files), lines_in, tree.lines, data["words"], data["codes"]


PREFILTER_SCRIPT = """
import json, sys
from onceguard.config import config_for
from onceguard.analysis.context import FileContext
from onceguard.engine.check import applicable_rules, enabled_rules, trigger_words
hits = []
rules = words = None
for path in sys.stdin.read().splitlines():
    config = config_for(path)
    if rules is None:
        rules = enabled_rules(config)
        words = trigger_words(rules)
    with open(path, "rb") as handle:
        source = handle.read()
    # The engine's own decision: the rules whose triggers occur and that apply to this path.
    hits.append([bool(applicable_rules(source, rules, FileContext(path, config))), source.count(b"\\n")])
print(json.dumps({"hits": hits, "words": len(words or ()), "codes": [r.code for r in rules or ()]}))
"""


def machine() -> List[str]:
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 1
    memory = "?"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory = f"{int(line.split()[1]) // 1024 // 1024} GiB"
    except OSError:
        pass
    return [
        f"CPU: {model}, {usable} cores usable ({os.cpu_count()} online), {memory} RAM",
        f"OS: {platform.platform()}",
        f"Python: {platform.python_implementation()} {platform.python_version()}",
    ]


# --------------------------------------------------------------------------------------------------
# report

def mib(value: int) -> str:
    return f"{value / 1024 / 1024:.0f} MiB" if value else "-"


def report(trees: List[Tree], results: Dict[str, Dict[str, Measurement]], fixit_tree: Tree,
           fixit_results: Dict[str, Measurement], prefilter, versions: Dict[str, str],
           same_files: str, rounds: int, slow_rounds: int, started: str) -> str:
    out: List[str] = []
    out.append(f"Run {started}, onceguard {versions['onceguard']}, rules present: "
               f"{', '.join(prefilter[5]) or '(none)'}.")
    out.append("")
    out.extend(f"- {line}" for line in machine())
    out.append("- Tools: " + "; ".join(f"{k} {v}" for k, v in versions.items() if k != "onceguard"))
    out.append(f"- Corpus: {', '.join(f'{n}=={v}' for n, v in PACKAGES)} (PyPI source distributions), "
               f"every `.py` file outside the directories the tools skip by default.")
    out.append(f"- Same files: {same_files} (full tree).")
    out.append(f"- Medians of {rounds} rounds ({slow_rounds} for flake8 and Fixit), page cache warm; in each round "
               f"every tool runs once, in turn. Wall clock first; CPU (user + system time of the process and all "
               f"its children) after it, which other work on the machine disturbs far less.")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    out.append(f"- Load average (1 min) when the run ended: {load:.2f}.")
    out.append("")
    out.append("| tree | files | lines | ruff `--select ALL --silent` | onceguard cold | cold / ruff | "
               "project model's share of cold | onceguard warm | warm / cold | flake8 | flake8 + onceguard | ratio | "
               "peak RSS cold (tree) |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")

    def cell(m: Measurement) -> str:
        return f"{m.median:.2f} s ({m.cpu_median:.2f} s CPU)"

    def ratio(a: Measurement, b: Measurement, digits: int = 2) -> str:
        return f"{a.median / b.median:.{digits}f}× ({a.cpu_median / max(b.cpu_median, 1e-9):.{digits}f}× CPU)"

    def share(whole: Measurement, alone: Measurement) -> str:
        """What reading across files adds: the cold run less the same run with each file alone."""
        wall = max(whole.median - alone.median, 0.0) / whole.median
        cpu = max(whole.cpu_median - alone.cpu_median, 0.0) / max(whole.cpu_median, 1e-9)
        return f"{100 * wall:.0f}% ({100 * cpu:.0f}% CPU)"

    for tree in trees:
        r = results[tree.name]
        out.append(
            f"| {tree.name} | {len(tree.files):,} | {tree.lines:,} | {cell(r['ruff'])} | {cell(r['cold'])} | "
            f"{ratio(r['cold'], r['ruff'])} | {share(r['cold'], r['alone'])} | {cell(r['warm'])} | "
            f"{ratio(r['warm'], r['cold'])} | "
            f"{cell(r['flake8'])} | {cell(r['flake8+og'])} | {ratio(r['flake8+og'], r['flake8'], 3)} | "
            f"{mib(r['cold'].peak_tree_rss)} |"
        )
    out.append("")
    f = fixit_results
    out.append(f"Fixit is too slow for the whole corpus; it ran on a fixed slice of the same files "
               f"({len(fixit_tree.files):,} files, {fixit_tree.lines:,} lines) with one rule "
               f"(`{FIXIT_RULE}`), and onceguard and ruff ran on the same slice:")
    out.append("")
    out.append("| slice | Fixit lint (1 rule) | onceguard cold | ruff `--select ALL --silent` | Fixit / onceguard |")
    out.append("|---|---:|---:|---:|---:|")
    out.append(f"| {fixit_tree.lines:,} lines | {cell(f['fixit'])} | {cell(f['cold'])} | {cell(f['ruff'])} | "
               f"{ratio(f['fixit'], f['cold'], 1)} |")
    out.append("")
    files_in, files_all, lines_in, lines_all, words, _ = prefilter
    out.append(f"Prefilter (`applicable_rules`: the {words} triggers of the enabled rules, and which rules apply to "
               f"the path — tests and migration code skip the rules that exempt them): {files_in:,} of "
               f"{files_all:,} files ({100 * files_in / max(files_all, 1):.1f}%) holding {lines_in:,} of "
               f"{lines_all:,} lines ({100 * lines_in / max(lines_all, 1):.1f}%) pass and are parsed; the rest "
               f"is never parsed. Only the rules whose own triggers occur run on a parsed file.")
    out.append("")
    full = results[trees[-1].name]
    out.append("Targets (full tree, wall clock): "
               f"cold ≤ 1.5× ruff: {full['cold'].median / full['ruff'].median:.2f}×; "
               f"flake8 + onceguard ≤ 1.10× flake8: {full['flake8+og'].median / full['flake8'].median:.3f}×; "
               f"warm ≤ 0.1× cold: {full['warm'].median / full['cold'].median:.2f}×; "
               f"peak memory < 300 MiB: {mib(full['cold'].peak_tree_rss)} (all processes together; largest "
               f"single process {mib(max(r.max_process_rss for r in full['cold'].runs))}, sampled every 20 ms); "
               f"≥ 20× faster than Fixit: {f['fixit'].median / f['cold'].median:.1f}×.")
    return "\n".join(out) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the fast tools (default 5)")
    parser.add_argument("--slow-rounds", type=int, default=3, help="rounds of flake8 and Fixit (default 3)")
    parser.add_argument("--corpus-only", action="store_true", help="download and unpack, then stop")
    parser.add_argument("--results", metavar="FILE", help="also write the report (Markdown) to FILE")
    args = parser.parse_args(argv)

    started = _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    fetch_corpus()
    files = corpus_files()
    log(f"corpus: {len(files):,} files, {sum(n for _, n in files):,} lines")
    if args.corpus_only:
        return 0
    if sum(n for _, n in files) < 1_000_000:
        log("warning: the corpus has fewer than 1 M lines")
    trees, fixit_tree = build_trees(files)
    tools = tool_paths()
    versions = {
        "onceguard": version_of([tools["onceguard"], "--version"]).replace("onceguard ", ""),
        "ruff": version_of([tools["ruff"], "--version"]).replace("ruff ", ""),
        "flake8": version_of([tools["flake8"], "--version"]).split(" ")[0],
        "fixit": version_of([tools["fixit"], "--version"]).split()[-1],
    }
    same_files = check_same_files(trees[-1], tools)
    log(same_files)
    prefilter = prefilter_rate(trees[-1], tools)
    results = {tree.name: bench_tree(tree, tools, args.rounds, args.slow_rounds) for tree in trees}
    fixit_results = bench_fixit(fixit_tree, tools, args.rounds, args.slow_rounds)
    text = report(trees, results, fixit_tree, fixit_results, prefilter, versions, same_files,
                  args.rounds, args.slow_rounds, started)
    print(text)
    if args.results:
        Path(args.results).write_text(text)
    with open(WORK / "last-run.json", "w") as handle:
        json.dump({tree: {k: [r.__dict__ for r in m.runs] for k, m in res.items()}
                   for tree, res in {**results, "fixit-slice": fixit_results}.items()}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
