"""flake8 entry point ``OG``: the tree flake8 already parsed goes straight to the engine.

flake8 sees one file at a time, so cross-file facts are off here; flake8
applies ``# noqa`` itself, but compares codes case-sensitively, so a line's
``# NOQA: og201`` (which the CLI honours) is applied here too.  ``[tool.onceguard]`` in the nearest
pyproject.toml is read as in the CLI, and the ``--onceguard-*`` options
override it.
"""
from __future__ import annotations

import ast
import gc
from dataclasses import replace
from typing import Any, Dict, Iterator, List, Tuple

from .. import __version__
from ..config import Config, ConfigError, config_for
from ..analysis.context import FileContext


class OnceguardChecker:
    name = "onceguard"
    _settled = False
    version = __version__
    _overrides: Dict[str, Any] = {}
    _noqa_enabled = True

    def __init__(self, tree: ast.AST, filename: str = "", lines: List[str] = ()) -> None:
        self.tree = tree
        self.filename = filename
        self.lines = lines

    @classmethod
    def add_options(cls, option_manager) -> None:
        option_manager.add_option(
            "--onceguard-transaction-pooler", action="store_true", default=False, parse_from_config=True,
            help="onceguard: the app talks to PostgreSQL through a transaction pooler (PgBouncer)",
        )
        option_manager.add_option(
            "--onceguard-claim-functions", default="", parse_from_config=True, comma_separated_list=True,
            help="onceguard: qualified names of functions that claim a scheduled run",
        )
        option_manager.add_option(
            "--onceguard-migration-paths", default="", parse_from_config=True, comma_separated_list=True,
            help="onceguard: globs of files that are migration code",
        )
        option_manager.add_option(
            "--onceguard-single-scheduler", default=None, parse_from_config=True,
            help="onceguard: 'false' when Celery beat / rq-scheduler run in every replica",
        )

    @classmethod
    def parse_options(cls, options) -> None:
        cls._noqa_enabled = not getattr(options, "disable_noqa", False)
        overrides: Dict[str, Any] = {}
        if getattr(options, "onceguard_transaction_pooler", False):
            overrides["transaction_pooler"] = True
        claims = [c for c in getattr(options, "onceguard_claim_functions", None) or [] if c]
        if claims:
            overrides["claim_functions"] = tuple(claims)
        paths = [p for p in getattr(options, "onceguard_migration_paths", None) or [] if p]
        if paths:
            overrides["migration_paths"] = tuple(paths)
        single = getattr(options, "onceguard_single_scheduler", None)
        if single is not None and str(single).strip():
            overrides["single_scheduler"] = str(single).strip().lower() not in ("false", "0", "no", "off")
        cls._overrides = overrides

    def _config(self) -> Config:
        config = config_for(self.filename or ".")
        return replace(config, **self._overrides) if self._overrides else config

    def run(self) -> Iterator[Tuple[int, int, str, type]]:
        from ..engine.check import engine_diagnostic

        try:
            config = self._config()
        except ConfigError as error:
            # One finding at the file instead of an exception: flake8 and its other plugins carry on.
            diagnostic = engine_diagnostic("OG000", f"configuration error: {error}")
            yield diagnostic.line, 0, f"{diagnostic.code} {diagnostic.message}", type(self)
            return
        try:
            found = list(self._check(config))
        except Exception as error:  # noqa: BLE001 - an exception here would end the whole flake8 run
            diagnostic = engine_diagnostic("OG001", f"internal error: {type(error).__name__}: {error}; please report it")
            yield diagnostic.line, 0, f"{diagnostic.code} {diagnostic.message}", type(self)
            return
        if not OnceguardChecker._settled:
            _settle()
        yield from found

    def _check(self, config: Config) -> Iterator[Tuple[int, int, str, type]]:
        from ..engine.check import applicable_rules, check_tree, enabled_rules, is_reported

        context = FileContext(self.filename, config)
        if not is_reported(context):
            return
        # The same prefilter as the CLI: most files of a project cannot produce a finding.
        rules = applicable_rules("".join(self.lines).encode("utf-8", "surrogatepass"), enabled_rules(config), context)
        if not rules:
            return
        lines = [line.rstrip("\r\n") for line in self.lines]
        for diagnostic in check_tree(self.tree, lines, context, rules):
            if self._noqa_enabled and _named_in_noqa(diagnostic.code, lines, diagnostic.line):
                continue
            text = f"{diagnostic.code} {diagnostic.message}"
            if diagnostic.suggestion:
                text = f"{text} Use instead: {diagnostic.suggestion}"
            yield diagnostic.line, diagnostic.column - 1, text, type(self)


def _settle() -> None:
    """Once a process has checked its first file, what onceguard keeps for the whole run (its modules, rule
    tables, compiled patterns, the prefilter's automaton) is built: set it aside from the cyclic collector.
    Every full pass flake8's own allocations set off would otherwise walk all of it again, and those
    passes, not the rules, were most of what the plugin added to a large tree's run."""
    OnceguardChecker._settled = True
    gc.freeze()


def _named_in_noqa(code: str, lines: List[str], number: int) -> bool:
    """The line's ``# noqa: ...`` names the code in any letter case, as the command line reads it."""
    from ..noqa import ALL, line_codes

    if not 0 < number <= len(lines):
        return False
    codes = line_codes(lines[number - 1])
    return codes is not None and codes is not ALL and any(code.startswith(c) for c in codes)
