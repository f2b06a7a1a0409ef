"""``onceguard``: check, rule, rules, clean, lsp. A thin surface over the engine."""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from typing import Dict, List, Optional, Sequence

from . import __version__
from .config import Config, ConfigError, config_for, load_file, validate_selector

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _codes(value: str) -> List[str]:
    return [c for c in value.replace(",", " ").split() if c]


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

    check.add_argument("--format", default="text", choices=format_names(), help="output format (default: text)")
    check.add_argument("--select", type=_codes, help="codes or prefixes to enable, e.g. OG1,OG201")
    check.add_argument("--extend-select", type=_codes, help="codes to enable on top of the configured ones")
    check.add_argument("--ignore", type=_codes, help="codes or prefixes to disable")
    check.add_argument("--config", metavar="PYPROJECT", help="use this pyproject.toml instead of the nearest one")
    check.add_argument("--fix", action="store_true", help="apply safe fixes")
    check.add_argument("--unsafe-fixes", action="store_true", help="also apply fixes that may change behaviour")
    check.add_argument("--diff", action="store_true", help="print the fixes as a diff instead of writing them")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    check.add_argument("--statistics", action="store_true", help="print the number of findings per code")
    check.add_argument("--output-file", metavar="FILE", help="write the report to FILE")
    check.add_argument("--jobs", "-j", type=int, default=0, help="worker processes (default: one per core)")
    check.add_argument("--no-cache", action="store_true", help="neither read nor write .onceguard_cache/")
    check.add_argument("--force-exclude", action="store_true",
                       help="apply exclude/extend-exclude to files named on the command line too (pre-commit)")
    check.add_argument("--transaction-pooler", action="store_true", default=None,
                       help="the app talks to PostgreSQL through a transaction pooler (PgBouncer)")

    rule = commands.add_parser("rule", help="print a rule's documentation")
    rule.add_argument("code")
    commands.add_parser("rules", help="list every rule")
    clean = commands.add_parser("clean", help="remove .onceguard_cache/")
    clean.add_argument("paths", nargs="*", default=["."], metavar="PATH")
    commands.add_parser("lsp", help="run the language server on stdio")
    return parser


def _overrides(args: argparse.Namespace) -> Dict[str, object]:
    values: Dict[str, object] = {}
    for option in ("select", "extend_select", "ignore"):
        codes = getattr(args, option)
        if codes is not None:
            values[option] = tuple(validate_selector(c, f"--{option.replace('_', '-')}") for c in codes)
    if args.transaction_pooler:
        values["transaction_pooler"] = True
    return values


def _config_resolver(args: argparse.Namespace):
    overrides = _overrides(args)
    fixed: Optional[Config] = load_file(_path(args.config)) if args.config else None
    memo: Dict[str, Config] = {}

    def config_of(path: str) -> Config:
        directory = path if os.path.isdir(path) else os.path.dirname(path) or "."
        if directory not in memo:
            base = fixed if fixed is not None else config_for(directory)
            memo[directory] = replace(base, **overrides) if overrides else base
        return memo[directory]

    return config_of


def _path(value: str):
    from pathlib import Path

    path = Path(value)
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


def run_check(args: argparse.Namespace) -> int:
    from .discovery import discover
    from .engine import engine_diagnostic
    from .report import ReportOptions, renderers
    from .runner import check_files, default_jobs

    config_of = _config_resolver(args)
    problems: list = []
    files = [(path, config_of(path)) for path in discover(args.paths, config_of, problems)]
    if args.force_exclude:
        files = [(path, config) for path, config in files if not config.is_excluded_with_parents(path)]
    cache = None
    if not args.no_cache and not (args.fix or args.diff):
        from .cache import ResultCache

        cache = ResultCache(config_of(args.paths[0] if args.paths else ".").root or os.getcwd())
    jobs = args.jobs if args.jobs and args.jobs > 0 else default_jobs()
    diagnostics = check_files(files, jobs, cache)
    if cache is not None:
        cache.save()

    for problem in problems:
        diagnostics.append(engine_diagnostic("OG000", f"cannot read: {problem.reason}").with_path(problem.path))

    diff_text = ""
    if args.fix or args.diff:
        from .fixes import apply_fixes

        diagnostics, diff_text = apply_fixes(diagnostics, dict(files), unsafe=args.unsafe_fixes, write=not args.diff)

    diagnostics = sorted(
        (d.with_path(display_path(d.path)) for d in diagnostics), key=lambda d: (d.path, d.line, d.column, d.code)
    )
    error_codes = tuple(sorted({code for _, config in files for code in config.error}))
    options = ReportOptions(error_codes=error_codes)
    output = diff_text + renderers()[args.format](diagnostics, options)
    if args.statistics:
        from .report.statistics import render_statistics

        output += render_statistics(diagnostics)
    _emit(output, args.output_file)
    if args.exit_zero or args.diff:
        return EXIT_CLEAN
    return EXIT_FINDINGS if diagnostics else EXIT_CLEAN


def _emit(text: str, output_file: Optional[str]) -> None:
    if output_file:
        directory = os.path.dirname(os.path.abspath(output_file))
        os.makedirs(directory, exist_ok=True)
        with open(output_file, "w", encoding="utf-8") as handle:
            handle.write(text)
        return
    sys.stdout.write(text)
    sys.stdout.flush()


def run_rule(code: str) -> int:
    from .docs import doc_text
    from .registry import all_codes

    code = code.upper()
    if code not in all_codes():
        print(f"onceguard: unknown rule {code!r}; `onceguard rules` lists them", file=sys.stderr)
        return EXIT_ERROR
    text = doc_text(code)
    if text is None:
        print(f"onceguard: the documentation of {code} is not installed", file=sys.stderr)
        return EXIT_ERROR
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return EXIT_CLEAN


def run_rules() -> int:
    from .registry import rule_classes

    for cls in rule_classes():
        print(f"{cls.code}  {cls.name:<32} {cls.summary}")
    return EXIT_CLEAN


def run_clean(paths: Sequence[str]) -> int:
    from .cache import clean

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
            return run_rule(args.code)
        if args.command == "rules":
            return run_rules()
        if args.command == "clean":
            return run_clean(args.paths)
        if args.command == "lsp":
            from .lsp import main as lsp_main

            return lsp_main()
        parser.print_help()
        return EXIT_ERROR
    except ConfigError as error:
        print(f"onceguard: {error}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_CLEAN


if __name__ == "__main__":
    sys.exit(main())
