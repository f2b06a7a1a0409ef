"""Prefilter, parse once with ``ast``, run every enabled rule in one pass over shared facts."""
from __future__ import annotations

import ast
import io
import sys
import tokenize
import traceback
import warnings
from typing import List, Optional, Sequence, Tuple

from .config import Config
from .context import FileContext
from .facts import ModuleFacts
from .model import Diagnostic
from .noqa import filter_suppressed
from .registry import ENGINE_CODES, rule_classes
from .rules.base import Rule, Trigger
from .syntax_hints import explain_syntax_error


def enabled_rules(config: Config) -> List[Rule]:
    return [cls() for cls in rule_classes() if config.is_enabled(cls.code)]


def trigger_words(rules: Sequence[Rule]) -> Tuple[Trigger, ...]:
    words = set()
    for rule in rules:
        words.update(rule.triggers)
    return tuple(sorted(words, key=repr))


class _Words:
    """Which words a file contains; each word is searched at most once per file."""

    __slots__ = ("source", "seen")

    def __init__(self, source: bytes) -> None:
        self.source = source
        self.seen: dict = {}

    def has(self, trigger: Trigger) -> bool:
        words = (trigger,) if type(trigger) is bytes else trigger
        seen = self.seen
        for word in words:  # rare words first in a tuple: most files fail on the first
            found = seen.get(word)
            if found is None:
                found = seen[word] = word in self.source
            if not found:
                return False
        return True


def passes_prefilter(source: bytes, triggers: Sequence[Trigger]) -> bool:
    """A file that contains none of the triggers cannot produce a finding: skip its parse.

    A trigger is a byte string, or a tuple of byte strings that must all occur."""
    words = _Words(source)
    return any(words.has(trigger) for trigger in triggers)


def applicable_rules(source: bytes, rules: Sequence[Rule], context: Optional[FileContext] = None) -> List[Rule]:
    """The rules whose own triggers occur in the file (and whose kind of code it is): only they run."""
    words = _Words(source)
    chosen = []
    for rule in rules:
        if context is not None and rule.only_in_migration_code and not context.is_migration:
            continue
        triggers = rule.triggers
        if context is not None:
            triggers = triggers + rule.config_triggers(context.config)
        if any(words.has(trigger) for trigger in triggers):
            chosen.append(rule)
    return chosen


def engine_diagnostic(code: str, message: str, line: int = 1, column: int = 1) -> Diagnostic:
    name = ENGINE_CODES[code][0]
    return Diagnostic(code, name, line, column, line, column, message, "")


def decode(source: bytes) -> str:
    """Decode as Python does (PEP 263 cookie, BOM, UTF-8 default); raises on undecodable bytes."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    text = source.decode(encoding)
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def parse(text: str, path: str) -> ast.Module:
    with warnings.catch_warnings():
        # Invalid escape sequences in checked code are not ours to report.
        warnings.simplefilter("ignore")
        return ast.parse(text, filename=path or "<unknown>")


def cannot_parse(error: BaseException, text: Optional[str]) -> Diagnostic:
    line = 1
    column = 1
    if isinstance(error, SyntaxError):
        line = error.lineno or 1
        column = max(error.offset or 1, 1)
        reason = f"{error.msg} (line {line})"
        hint = explain_syntax_error(error, text)
        if hint:
            reason = f"{reason}; {hint}"
    elif isinstance(error, UnicodeDecodeError):
        reason = f"cannot decode as {error.encoding}: byte {error.object[error.start]:#04x} at offset {error.start}"
    elif isinstance(error, RecursionError):
        reason = "nesting too deep for the Python parser"
    elif isinstance(error, MemoryError):
        reason = "the Python parser ran out of memory (nesting too deep or file too large)"
    elif isinstance(error, ValueError) and "null bytes" in str(error):
        reason = "the file contains NUL bytes"
    else:
        reason = f"{type(error).__name__}: {error}"
    return engine_diagnostic("OG000", f"cannot parse: {reason}", line, column)


def run_rules(facts: ModuleFacts, rules: Sequence[Rule]) -> List[Diagnostic]:
    found: List[Diagnostic] = []
    for rule in rules:
        try:
            found.extend(rule.check(facts))
        except Exception as error:  # noqa: BLE001 - one broken rule must not take the run down
            where = traceback.extract_tb(error.__traceback__)[-1]
            found.append(
                engine_diagnostic(
                    "OG001",
                    f"internal error in {rule.code} on this file: {type(error).__name__}: {error} "
                    f"({where.filename.rsplit('/', 1)[-1]}:{where.lineno}); please report it",
                )
            )
    found.sort(key=lambda d: (d.line, d.column, d.code))
    return _dedupe(found)


def _dedupe(diagnostics: List[Diagnostic]) -> List[Diagnostic]:
    seen = set()
    unique = []
    for diagnostic in diagnostics:
        key = (diagnostic.code, diagnostic.line, diagnostic.column, diagnostic.message)
        if key not in seen:
            seen.add(key)
            unique.append(diagnostic)
    return unique


def check_tree(tree: ast.Module, lines: Sequence[str], path: str, config: Config,
               rules: Optional[Sequence[Rule]] = None, cross_file: bool = False) -> List[Diagnostic]:
    """Rules over a tree somebody else parsed (flake8). No noqa filtering: the caller does it."""
    rules = enabled_rules(config) if rules is None else rules
    context = FileContext(path, config, cross_file)
    facts = ModuleFacts(tree, context, list(lines))
    return run_rules(facts, rules)


def check_source(source: bytes, path: str, config: Config, rules: Optional[Sequence[Rule]] = None,
                 apply_noqa: bool = True, cross_file: bool = False) -> List[Diagnostic]:
    """Everything onceguard has to say about one file's bytes."""
    rules = enabled_rules(config) if rules is None else rules
    ignored = config.ignored_for_path(path) if config.per_file_ignores and path else ()
    if ignored:
        rules = [rule for rule in rules if not any(rule.code.startswith(code) for code in ignored)]
    rules = applicable_rules(source, rules, FileContext(path, config))
    if not rules:
        return []
    text: Optional[str] = None
    try:
        text = decode(source)
        tree = parse(text, path)
    except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError, MemoryError) as error:
        return [cannot_parse(error, text).with_path(path)]
    lines = text.splitlines()
    try:
        found = check_tree(tree, lines, path, config, rules, cross_file)
    except RecursionError:
        found = [engine_diagnostic("OG000", "cannot parse: nesting too deep to analyse")]
    if apply_noqa:
        found = filter_suppressed(found, lines)
    return [d.with_path(path) for d in found]


def read_source(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def cannot_read(path: str, error: OSError) -> Diagnostic:
    return engine_diagnostic("OG000", f"cannot read: {error.strerror or error}").with_path(path)


def check_file(path: str, config: Config, rules: Optional[Sequence[Rule]] = None,
               cross_file: bool = False) -> List[Diagnostic]:
    try:
        source = read_source(path)
    except OSError as error:
        return [cannot_read(path, error)]
    return check_source(source, path, config, rules, cross_file=cross_file)


def python_version() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"
