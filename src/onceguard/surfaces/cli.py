"""``onceguard``: check, rule, rules, clean, lsp. A thin surface over the engine."""
from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
from dataclasses import replace
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from .. import __version__
from ..config import Config, ConfigError, config_for, load_file, parse_per_file_ignores, unresolved_claim_functions, validate_selector

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _codes(value: str) -> List[str]:
    return [c for c in value.replace(",", " ").split() if c]


def _jobs(value: str) -> int:
    """``-j N`` (N >= 1) or ``-j auto`` / ``-j 0``: one worker per core."""
    if value.strip().lower() == "auto":
        return 0
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of processes or 'auto', got {value!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"must be at least 1 (or 0 / 'auto' for one per core), got {number}")
    return number


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="onceguard",
        description="Find the code that breaks when a Python service runs as two or more replicas.",
    )
    parser.add_argument("--version", action="version", version=f"onceguard {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = commands.add_parser("check", help="check files and directories (default: .)")
    check.add_argument("paths", nargs="*", default=["."], metavar="PATH")
    from .report import format_names

    check.add_argument("--format", "--output-format", dest="format", default="text", choices=format_names(),
                       help="output format (default: text)")
    selection = check.add_argument_group("rule selection (as in ruff: the command line overrides the file)")
    selection.add_argument("--select", type=_codes, action="extend",
                           help="codes or prefixes to enable, e.g. OG1,OG201; replaces the configured ones; repeatable")
    selection.add_argument("--extend-select", type=_codes, action="extend",
                           help="codes to enable on top of the configured ones")
    selection.add_argument("--ignore", type=_codes, action="extend", help="codes or prefixes to disable")
    selection.add_argument("--extend-ignore", type=_codes, action="extend", help="the same as --ignore")
    selection.add_argument("--per-file-ignores", action="append", metavar="PATTERN:CODES",
                           help="e.g. 'scripts/*:OG201'; replaces the configured per-file-ignores; repeatable")
    selection.add_argument("--extend-per-file-ignores", action="append", metavar="PATTERN:CODES",
                           help="per-file-ignores on top of the configured ones")
    selection.add_argument("--exclude", type=_codes, action="extend", metavar="GLOBS",
                           help="files and directories to skip; replaces the configured (and default) list")
    selection.add_argument("--extend-exclude", type=_codes, action="extend", metavar="GLOBS",
                           help="files and directories to skip on top of the configured ones")
    selection.add_argument("--force-exclude", action="store_true",
                           help="apply exclude/extend-exclude to files named on the command line too (pre-commit)")
    check.add_argument("--config", metavar="PYPROJECT",
                       help="use this pyproject.toml (or the one in this directory) instead of the nearest one")
    check.add_argument("--transaction-pooler", action="store_true", default=None,
                       help="the app talks to PostgreSQL through a transaction pooler (PgBouncer)")

    fixing = check.add_argument_group("fixes")
    fixing.add_argument("--fix", action="store_true", help="apply safe fixes")
    fixing.add_argument("--unsafe-fixes", action="store_true", help="also apply fixes that may change behaviour")
    fixing.add_argument("--diff", action="store_true",
                        help="print the fixes as a diff instead of writing them; exit 1 when there is one")
    fixing.add_argument("--show-fixes", action="store_true", help="after --fix, list the findings that were fixed")
    fixing.add_argument("--add-noqa", action="store_true",
                        help="write '# noqa: OG###' on the line of every current finding")

    adoption = check.add_argument_group("baseline")
    adoption.add_argument("--baseline", metavar="FILE", help="do not report the findings recorded in FILE")
    adoption.add_argument("--write-baseline", action="store_true",
                          help="record every current finding in the --baseline FILE and exit 0")

    output = check.add_argument_group("output")
    output.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    output.add_argument("--statistics", action="store_true", help="print the number of findings per code")
    output.add_argument("--output-file", metavar="FILE", help="write the report to FILE")
    output.add_argument("-q", "--quiet", action="store_true",
                        help="print the findings and nothing else (no counts, hints or 'All checks passed.')")
    check.add_argument("--jobs", "-j", type=_jobs, default=0, help="worker processes (default: one per core)")
    check.add_argument("--no-cache", action="store_true", help="neither read nor write .onceguard_cache/")
    check.add_argument("--no-project", action="store_true",
                       help="judge each file alone, as the flake8 plugin does: faster, without the findings "
                            "that need other files of the project")

    rule = commands.add_parser("rule", help="print a rule's documentation")
    rule.add_argument("code", nargs="?", metavar="CODE_OR_NAME", help="OG101 or session-lock-on-pool")
    rule.add_argument("--all", action="store_true", help="print the documentation of every rule")
    rules = commands.add_parser("rules", help="list every rule")
    rules.add_argument("--format", choices=("text", "json"), default="text")
    clean = commands.add_parser("clean", help="remove .onceguard_cache/")
    clean.add_argument("paths", nargs="*", default=["."], metavar="PATH")
    commands.add_parser("lsp", help="run the language server on stdio")
    return parser


def _selectors(codes: Sequence[str], option: str) -> Tuple[str, ...]:
    return tuple(validate_selector(c, option) for c in codes)


def _overrides(args: argparse.Namespace) -> Callable[[Config], Config]:
    """The command line on top of a file's settings, as ruff layers them: --select, --exclude and
    --per-file-ignores replace; --extend-*, --ignore add."""
    select = _selectors(args.select, "--select") if args.select is not None else None
    extend_select = _selectors(args.extend_select or (), "--extend-select")
    ignore = _selectors((args.ignore or []) + (args.extend_ignore or []), "--ignore")
    per_file = (parse_per_file_ignores(args.per_file_ignores, "--per-file-ignores")
                if args.per_file_ignores is not None else None)
    extend_per_file = parse_per_file_ignores(args.extend_per_file_ignores or (), "--extend-per-file-ignores")
    exclude = tuple(args.exclude) if args.exclude is not None else None
    extend_exclude = tuple(args.extend_exclude or ())

    def apply(base: Config) -> Config:
        changes: Dict[str, object] = {}
        if select is not None:
            changes["select"], changes["extend_select"] = select, ()
        if extend_select:
            changes["extend_select"] = tuple(changes.get("extend_select", base.extend_select)) + extend_select
        if ignore:
            changes["ignore"] = base.ignore + ignore
        if per_file is not None:
            changes["per_file_ignores"] = per_file
        if extend_per_file:
            changes["per_file_ignores"] = tuple(changes.get("per_file_ignores", base.per_file_ignores)) + extend_per_file
        if exclude is not None:
            changes["exclude"], changes["extend_exclude"] = exclude, ()
        if extend_exclude:
            changes["extend_exclude"] = tuple(changes.get("extend_exclude", base.extend_exclude)) + extend_exclude
        if args.transaction_pooler:
            changes["transaction_pooler"] = True
        if getattr(args, "no_project", False):
            changes["whole_project"] = False
        return replace(base, **changes) if changes else base

    return apply


def _config_resolver(args: argparse.Namespace):
    overrides = _overrides(args)
    fixed: Optional[Config] = load_file(_path(args.config)) if args.config else None
    memo: Dict[str, Config] = {}

    def config_of(path: str) -> Config:
        directory = path if os.path.isdir(path) else os.path.dirname(path) or "."
        if directory not in memo:
            memo[directory] = overrides(fixed if fixed is not None else config_for(directory))
        return memo[directory]

    return config_of


def _path(value: str):
    from pathlib import Path

    path = Path(value)
    if path.is_dir():
        if (path / "pyproject.toml").is_file():
            return path / "pyproject.toml"
        raise ConfigError(f"--config {value}: a directory without a pyproject.toml in it")
    if not path.is_file():
        raise ConfigError(f"--config {value}: no such file")
    return path


def display_path(path: str) -> str:
    """Relative to the current directory when below it, else as given."""
    if os.path.isabs(path):
        try:
            relative = os.path.relpath(path)
            if not relative.startswith(".."):
                return relative
        except ValueError:
            pass
    return path


# Formats a person reads: the run's closing lines (counts, fix hints, "All checks passed.") go into the
# report. The others are read by programs: those lines go to standard error, or nowhere.
HUMAN_FORMATS = ("text", "grouped")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


def _warn(message: str) -> None:
    print(f"onceguard: warning: {message}", file=sys.stderr)


def _warn_unresolved_claims(configs: Sequence[Config]) -> None:
    seen: Dict[str, str] = {}
    for config in configs:
        if config.claim_functions:
            seen.update(unresolved_claim_functions(config, sys.path[1:]))
    if seen:
        entries = "; ".join(f"{name!r} ({why})" for name, why in sorted(seen.items()))
        _warn(f"claim-functions entries that never resolved, so they count as no claim: {entries}")


def run_check(args: argparse.Namespace) -> int:
    from ..engine.discovery import discover
    from ..engine.check import engine_diagnostic
    from .report import ReportOptions, renderers
    from ..engine.runner import POOL_THRESHOLD, WorkerPool, check_files, default_jobs

    if args.write_baseline and not args.baseline:
        raise ConfigError("--write-baseline needs --baseline FILE: the file to write")
    if args.add_noqa and (args.fix or args.diff or args.write_baseline):
        raise ConfigError("--add-noqa cannot be combined with --fix, --diff or --write-baseline")
    config_of = _config_resolver(args)
    cache = None
    if not args.no_cache and not (args.fix or args.diff):
        from ..engine.cache import ResultCache

        cache = ResultCache(config_of(args.paths[0] if args.paths else ".").root or os.getcwd())
    jobs = args.jobs if args.jobs and args.jobs > 0 else default_jobs()
    # With nothing cached, enough files mean a pool will be used: start it now, so that the workers get
    # ready while the tree is still being walked (with results cached, most runs check a few files).
    start_early = jobs > 1 and (cache is None or not cache.entries)
    pool: Optional[WorkerPool] = None
    problems: list = []
    files = []
    with contextlib.ExitStack() as pool_scope:
        for path in discover(args.paths, config_of, problems):
            files.append((path, config_of(path)))
            if start_early and pool is None and len(files) >= POOL_THRESHOLD:
                pool = pool_scope.enter_context(WorkerPool(jobs))
        if cache is not None and args.paths and not any(os.path.isdir(path) for path in args.paths):
            # Named files only (pre-commit's staged ones): findings they cause in other files count too.
            for dependent in cache.dependents(path for path, _ in files):
                if os.path.isfile(dependent):
                    shown = os.path.relpath(dependent) if not os.path.relpath(dependent).startswith("..") else dependent
                    files.append((shown, config_of(shown)))
        if args.force_exclude:
            files = [(path, config) for path, config in files if not config.is_excluded_with_parents(path)]
        _warn_unresolved_claims(list({config.digest(): config for _, config in files}.values()))
        diagnostics = check_files(files, jobs, cache, pool)
    if cache is not None:
        cache.save()

    for problem in problems:
        diagnostics.append(engine_diagnostic("OG000", f"cannot read: {problem.reason}").with_path(problem.path))

    if args.write_baseline:
        from ..engine import baseline

        count = baseline.write(args.baseline, diagnostics)
        if not args.quiet:
            print(f"Wrote {_plural(count, 'finding')} to {args.baseline}.", file=sys.stderr)
        return EXIT_CLEAN
    if args.baseline:
        from ..engine import baseline

        diagnostics = baseline.subtract(diagnostics, args.baseline)

    if args.add_noqa:
        return _add_noqa(diagnostics, args)

    fixed: List = []
    diff_text = ""
    if args.fix or args.diff:
        from ..analysis import large_files
        from ..engine.fixes import fix_files

        outcome = fix_files(diagnostics, dict(files), unsafe=args.unsafe_fixes, write=not args.diff)
        diagnostics, diff_text, fixed = outcome.remaining, outcome.diff, outcome.fixed
        for dropped in outcome.rejected:
            _warn(f"{display_path(dropped.path)}:{dropped.line}:{dropped.column}: {dropped.code} fix not applied: "
                  "the fixed file would not parse (please report it)")
        for undone, name in outcome.clashes:
            _warn(f"{display_path(undone.path)}:{undone.line}:{undone.column}: {undone.code} fix not applied: "
                  f"`{name}` already names something else in this module; add the guard by hand")
        for undone in outcome.too_large:
            _warn(f"{display_path(undone.path)}:{undone.line}:{undone.column}: {undone.code} fix not applied: "
                  f"the file is larger than {large_files.LARGE_FILE_BYTES >> 20} MiB, too large to rewrite; "
                  "add the guard by hand")
        if args.diff:
            # As ruff: only the diff, and exit 1 when there is one (a check that fixes are pending).
            _emit(diff_text, args.output_file)
            if not diff_text and not args.quiet:
                from ..engine.fixes import fixable_counts

                hidden = 0 if args.unsafe_fixes else fixable_counts(diagnostics)[1]
                more = f" ({hidden} more with --unsafe-fixes)" if hidden else ""
                print(f"No fixes to apply{more}.", file=sys.stderr)
            return EXIT_FINDINGS if diff_text and not args.exit_zero else EXIT_CLEAN

    diagnostics = sorted(
        (d.with_paths(display_path) for d in diagnostics), key=lambda d: (d.path, d.line, d.column, d.code)
    )
    error_codes = tuple(sorted({code for _, config in files for code in config.error}))
    stats = None
    if args.statistics:
        from .report.statistics import render_statistics, statistics

        stats = statistics(diagnostics)
    human = args.format in HUMAN_FORMATS
    structured_stats = args.format in ("json", "sarif")
    options = ReportOptions(error_codes=error_codes, summary=not args.quiet,
                            statistics=stats if structured_stats else None)
    output = renderers()[args.format](diagnostics, options)
    notes: List[str] = []
    if stats is not None and not structured_stats:
        table = render_statistics(diagnostics)
        if args.format == "github":
            sys.stderr.write(table)  # annotations only on standard output
        else:
            output += table
    if not args.quiet:
        notes = _closing_lines(diagnostics, fixed, args)
    if human:
        output += "".join(line + "\n" for line in notes)
    _emit(output, args.output_file)
    if notes and not human:
        # A program reads standard output; what the fixes did still goes to the person watching.
        for line in notes:
            if line.startswith(("Fixed ", "- ", "    ")):
                print(line, file=sys.stderr)
    if args.exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if diagnostics else EXIT_CLEAN


def _closing_lines(diagnostics: List, fixed: List, args: argparse.Namespace) -> List[str]:
    """What ruff prints under its report: fixes made, fixes available, or that all is well."""
    lines: List[str] = []
    if args.fix:
        if args.show_fixes and fixed:
            lines.append(f"Fixed {_plural(len(fixed), 'finding')}:")
            by_file: Dict[str, Dict[Tuple[str, str], int]] = {}
            for d in fixed:
                counts = by_file.setdefault(display_path(d.path), {})
                counts[(d.code, d.name)] = counts.get((d.code, d.name), 0) + 1
            for path in sorted(by_file):
                lines.append(f"- {path}:")
                for (code, name), count in sorted(by_file[path].items()):
                    lines.append(f"    {count} \u00d7 {code} ({name})")
        lines.append(f"Fixed {_plural(len(fixed), 'finding')} ({len(diagnostics)} remaining).")
    elif any(d.fix is not None for d in diagnostics):
        from ..engine.fixes import fixable_counts

        safe, unsafe_only = fixable_counts(diagnostics)
        if args.unsafe_fixes:
            safe, unsafe_only = safe + unsafe_only, 0
            if safe:
                lines.append(f"[*] {safe} fixable with --fix --unsafe-fixes.")
        elif safe:
            lines.append(f"[*] {safe} fixable with --fix.")
        if unsafe_only:
            lines.append(f"{unsafe_only} more with --unsafe-fixes." if safe
                         else f"{unsafe_only} fixable with --fix --unsafe-fixes.")
    if not diagnostics and not (args.fix and fixed):
        lines.append("All checks passed.")
    return lines


def _add_noqa(diagnostics: List, args: argparse.Namespace) -> int:
    from ..engine.fixes import add_noqa_to_files

    added, skipped, problems = add_noqa_to_files(diagnostics)
    for d in skipped:
        _warn(f"{display_path(d.path)}:{d.line}:{d.column}: {d.code}: no '# noqa' added "
              "(the line ends inside a string or with a backslash)")
    for problem in problems:
        print(f"onceguard: {display_path(problem.path)}: {problem.message}", file=sys.stderr)
    if not args.quiet:
        print(f"Added {_plural(added, 'noqa directive')}.", file=sys.stderr)
    return EXIT_ERROR if problems else EXIT_CLEAN


class OutputFileError(Exception):
    """The report could not be written where --output-file asked: a usage error (exit 2), never a traceback
    and never exit 1, which CI reads as "findings"."""


def _emit(text: str, output_file: Optional[str]) -> None:
    if output_file:
        try:
            if os.path.isdir(output_file):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
            directory = os.path.dirname(os.path.abspath(output_file))
            os.makedirs(directory, exist_ok=True)
            with open(output_file, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as error:
            reason = error.strerror or str(error)
            raise OutputFileError(f"--output-file {output_file}: cannot write the report: {reason}") from None
        return
    sys.stdout.write(text)
    sys.stdout.flush()


_ENGINE_DOCS = {
    "OG000": "A file that could not be read, decoded or parsed, so it was not checked. Only files that could hold "
             "a hazard (they contain one of the rules' trigger words) are parsed, so a broken file without any "
             "is not reported. It cannot be disabled: fix the file, or exclude it.",
    "OG001": "A rule failed on this file; the other rules still ran. Please report it with the file (or a "
             "reduced copy) that triggers it.",
}


def _engine_docs() -> Dict[str, str]:
    from ..rules.registry import ENGINE_CODES

    return {code: f"# {code} {name}\n\n{_ENGINE_DOCS.get(code, summary)}\n"
            for code, (name, summary) in ENGINE_CODES.items()}


def _code_of(value: str) -> Optional[str]:
    """A rule code from a code (any case) or a rule name."""
    from ..rules.registry import ENGINE_CODES, all_codes, rule_classes

    upper = value.strip().upper()
    if upper in all_codes() or upper in ENGINE_CODES:
        return upper
    wanted = value.strip().lower()
    for cls in rule_classes():
        if cls.name == wanted:
            return cls.code
    for code, (name, _) in ENGINE_CODES.items():
        if name == wanted:
            return code
    return None


def _rule_text(code: str) -> str:
    """The rule's documentation; its one-line summary when the documentation is not installed."""
    from ..docs import doc_text
    from ..rules.registry import rule_classes

    text = _engine_docs().get(code) or doc_text(code)
    if text is None:
        cls = next(c for c in rule_classes() if c.code == code)
        text = f"# {code} {cls.name}\n\n{cls.summary}.\n\n(The full documentation of {code} is not installed.)\n"
    return text if text.endswith("\n") else text + "\n"


def run_rule(value: Optional[str], every: bool = False) -> int:
    from ..rules.registry import ENGINE_CODES, all_codes

    if every:
        sys.stdout.write("\n".join(_rule_text(code) for code in (*all_codes(), *sorted(ENGINE_CODES))))
        return EXIT_CLEAN
    if not value:
        print("onceguard: rule: give a code or name (onceguard rule OG101), or --all", file=sys.stderr)
        return EXIT_ERROR
    code = _code_of(value)
    if code is None:
        print(f"onceguard: unknown rule {value!r}; `onceguard rules` lists them", file=sys.stderr)
        return EXIT_ERROR
    sys.stdout.write(_rule_text(code))
    return EXIT_CLEAN


def run_rules(output_format: str = "text") -> int:
    from ..rules.registry import ENGINE_CODES, rule_classes
    from .report.sarif import rule_doc_url

    rows = [{"code": code, "name": name, "summary": summary, "engine": True, "url": None}
            for code, (name, summary) in sorted(ENGINE_CODES.items())]
    for cls in rule_classes():
        rows.append({"code": cls.code, "name": cls.name, "summary": cls.summary, "engine": False,
                     "url": rule_doc_url(cls.code)})
    if output_format == "json":
        import json

        print(json.dumps(rows, indent=2))
        return EXIT_CLEAN
    for row in rows:
        print(f"{row['code']}  {row['name']:<32} {row['summary']}")
    return EXIT_CLEAN


def run_clean(paths: Sequence[str]) -> int:
    from ..engine.cache import clean

    for path in paths:
        root = config_for(path).root or os.getcwd()
        if clean(root):
            print(f"removed {os.path.join(display_path(root), '.onceguard_cache')}")
    return EXIT_CLEAN


def main(argv: Optional[Sequence[str]] = None) -> int:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")  # undecodable file names still print
        except (AttributeError, ValueError):
            pass
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            if args.diff and not args.fix:
                args.fix = True
            return run_check(args)
        if args.command == "rule":
            return run_rule(args.code, args.all)
        if args.command == "rules":
            return run_rules(args.format)
        if args.command == "clean":
            return run_clean(args.paths)
        if args.command == "lsp":
            from .lsp import main as lsp_main

            return lsp_main()
        parser.print_help()
        return EXIT_ERROR
    except (ConfigError, OutputFileError) as error:
        print(f"onceguard: {error}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_CLEAN


if __name__ == "__main__":
    sys.exit(main())
