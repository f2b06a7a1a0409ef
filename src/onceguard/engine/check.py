"""Prefilter, parse once with ``ast``, run every enabled rule in one pass over shared facts."""
from __future__ import annotations

import ast
import os
import tokenize
import traceback
from operator import itemgetter
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import ahocorasick_rs

from ..config import Config
from ..analysis import large_files
from ..analysis.context import FileContext
from ..analysis.facts import ModuleFacts
from ..model import Diagnostic
from ..noqa import filter_suppressed
from ..project.dialect_branches import lines_no_dialect_reaches
from ..project.index import adopt_checked, module_facts, parsed_module, read_bytes, record_dependency
from ..rules.registry import ENGINE_CODES, rule_classes
from ..rules.base import Rule, Trigger
from ..analysis.newer_syntax import decode_source, parse_newer
from .syntax_hints import explain_syntax_error, is_template


def enabled_rules(config: Config) -> List[Rule]:
    return [cls() for cls in rule_classes() if config.is_enabled(cls.code)]


def trigger_words(rules: Sequence[Rule]) -> Tuple[Trigger, ...]:
    words = set()
    for rule in rules:
        words.update(rule.triggers)
    return tuple(sorted(words, key=repr))


class _TriggerIndex:
    """The triggers of a set of rules, compiled once: an Aho-Corasick automaton over every word of every
    trigger finds, in one pass over a file's bytes, which of them occur; each trigger is then looked up from
    its longest word (its anchor), and its other words are read off the same set of found words."""

    def __init__(self, rule_triggers: Tuple[Tuple[Trigger, ...], ...]) -> None:
        words: Dict[bytes, int] = {}
        by_anchor: Dict[int, List[Tuple[int, Tuple[int, ...]]]] = {}
        for index, triggers in enumerate(rule_triggers):
            for trigger in triggers:
                spelled = (trigger,) if type(trigger) is bytes else tuple(trigger)
                # The longest word anchors the trigger: it is usually the rarest, so few anchors are found and
                # few triggers looked at.
                anchor = max(spelled, key=len)
                # The automaton refuses an empty word, which every file contains: the trigger's other words
                # decide alone (an empty anchor is an empty trigger: it admits every file).
                rest = tuple(words.setdefault(word, len(words)) for word in spelled if word is not anchor and word)
                key = words.setdefault(anchor, len(words)) if anchor else _EVERY_FILE
                by_anchor.setdefault(key, []).append((index, rest))
        # Every word in the automaton, not only the anchors: a word searched apart (``word in source``) costs a
        # pass over the whole file each time it is absent, more than the automaton's pass costs for all of them.
        # The automaton reports a word by its position in the list it was given: its number in ``words``.
        patterns = list(words)
        self.by_anchor = by_anchor
        # Overlapping matches: a word inside or across another one's occurrence still counts. A DFA: several
        # times faster to run than the default automaton for this many words, for a few megabytes.
        self.automaton = ahocorasick_rs.BytesAhoCorasick(
            patterns, implementation=ahocorasick_rs.Implementation.DFA) if patterns else None

    def matching(self, source: bytes) -> set:
        """Indexes of the rules with at least one trigger in ``source``."""
        found = {_EVERY_FILE}
        if self.automaton is not None:
            found.update(map(_first, self.automaton.find_matches_as_indexes(source, overlapping=True)))
        matched: set = set()
        by_anchor = self.by_anchor
        for anchor in found:
            for index, rest in by_anchor.get(anchor, ()):
                if index in matched:
                    continue
                for word in rest:
                    if word not in found:
                        break
                else:
                    matched.add(index)
        return matched


#: The anchor of a trigger with no word but empty ones.
_EVERY_FILE = -1
_first = itemgetter(0)


_indexes: dict = {}


def _index_for(rules: Sequence[Rule], extra: Tuple[Tuple[Trigger, ...], ...]) -> _TriggerIndex:
    key = (tuple(type(rule) for rule in rules), extra)
    index = _indexes.get(key)
    if index is None:
        index = _indexes[key] = _TriggerIndex(
            tuple(tuple(rule.triggers) + more for rule, more in zip(rules, extra))
        )
    return index


def passes_prefilter(source: bytes, triggers: Sequence[Trigger]) -> bool:
    """A file that contains none of the triggers cannot produce a finding: skip its parse.

    A trigger is a byte string, or a tuple of byte strings that must all occur."""
    return bool(_TriggerIndex((tuple(triggers),)).matching(source))


def applicable_rules(source: bytes, rules: Sequence[Rule], context: Optional[FileContext] = None) -> List[Rule]:
    """The rules whose own triggers occur in the file, whose kind of code it is, and that per-file-ignores
    do not switch off for its path: only they run."""
    if context is not None:
        config = context.config
        ignored = config.ignored_for_path(context.path) if config.per_file_ignores and context.path else ()
        rules = [r for r in rules if r.applies_to(context) and not any(r.code.startswith(c) for c in ignored)]
        extra = tuple(tuple(r.config_triggers(config)) + (tuple(r.project_triggers(config)) if context.cross_file else ())
                      for r in rules)
    else:
        extra = tuple(() for _ in rules)
    matched = _index_for(rules, extra).matching(source)
    if context is not None and context.cross_file and context.path:
        matched.update(index for index, rule in enumerate(rules)
                       if index not in matched and rule.project_files(context.config, context.path))
    return [rule for index, rule in enumerate(rules) if index in matched]


def is_reported(context: FileContext) -> bool:
    """Whether findings in this file are reported at all: test code only when the project asks."""
    return context.config.check_tests or not context.is_test


def engine_diagnostic(code: str, message: str, line: int = 1, column: int = 1) -> Diagnostic:
    name = ENGINE_CODES[code][0]
    return Diagnostic(code, name, line, column, line, column, message, "")


#: Decode as Python does (PEP 263 cookie, BOM, UTF-8 default); raises on undecodable bytes.
decode = decode_source


def parse(text: str, path: str) -> ast.Module:
    """The tree of a file, one written for a newer Python than the running one included (its newer
    constructs are read at their own lines; see ``newer_syntax``). Warnings about invalid escape
    sequences in checked code are not ours to report (``parse_newer`` silences them)."""
    return parse_newer(text, path or "<unknown>")


def cannot_parse(error: BaseException, text: Optional[str]) -> Diagnostic:
    line = 1
    column = 1
    if isinstance(error, SyntaxError) and (error.msg or "").startswith("invalid or missing encoding declaration"):
        line = error.lineno or 1
        reason = "not valid UTF-8, and no encoding declaration in the first two lines says what it is"
    elif isinstance(error, SyntaxError):
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
    return _dedupe(_reachable(found, facts))


def _reachable(found: List[Diagnostic], facts: ModuleFacts) -> List[Diagnostic]:
    """Findings outside the branches no database the project can connect with takes (code it cannot run
    races nothing); engine diagnostics stay."""
    if not found or not facts.context.cross_file:
        return found
    dead = lines_no_dialect_reaches(facts)
    if not dead:
        return found
    return [d for d in found if d.code in ENGINE_CODES or not any(first <= d.line <= last for first, last in dead)]


def _dedupe(diagnostics: List[Diagnostic]) -> List[Diagnostic]:
    seen = set()
    unique = []
    for diagnostic in diagnostics:
        key = (diagnostic.code, diagnostic.line, diagnostic.column, diagnostic.message)
        if key not in seen:
            seen.add(key)
            unique.append(diagnostic)
    return unique


def check_tree(tree: ast.Module, lines: Sequence[str], context: FileContext,
               rules: Optional[Sequence[Rule]] = None,
               kept: Optional[Callable[[ModuleFacts], bool]] = None) -> List[Diagnostic]:
    """Rules over a parsed tree (flake8 hands over its own). No noqa filtering: the caller does it.  The facts
    built for it are released after the rules unless ``kept`` takes them over first (the project's parse of the
    module, which the rules may read too)."""
    rules = enabled_rules(context.config) if rules is None else rules
    facts = ModuleFacts(tree, context, list(lines))
    shared = kept is not None and kept(facts)
    try:
        return run_rules(facts, rules)
    finally:
        if not shared:
            facts.release()


def check_source(source: bytes, path: str, config: Config, rules: Optional[Sequence[Rule]] = None,
                 apply_noqa: bool = True, cross_file: bool = False,
                 read_at: Optional[Tuple[int, int]] = None) -> List[Diagnostic]:
    """Everything onceguard has to say about one file's bytes. ``read_at``: the file's (size, mtime_ns)
    before ``source`` was read from it, when it was (not an editor's unsaved text): its parse may then
    serve the other files' checks that read it as a module (``adopt_checked``)."""
    rules = enabled_rules(config) if rules is None else rules
    context = FileContext(path, config, cross_file)
    if not is_reported(context):
        return []
    rules = applicable_rules(source, rules, context)
    if not rules:
        return []
    text: Optional[str] = None
    try:
        text = decode(source)
        lines = text.splitlines()
        if large_files.is_large(source):
            found = _check_in_windows(text, lines, path, context, rules)
        else:
            known = _read_as_other_module(source, context, lines)
            tree = parse(text, path) if known is None else known.tree
            found = _check_parsed(tree, known, lines, context, rules,
                                  lambda facts: adopt_checked(path, source, facts, read_at))
    except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError, MemoryError) as error:
        if is_template(error, text):
            return []  # a template named .py (the parse fails at its markup): not Python, nothing to check
        return [cannot_parse(error, text).with_path(path)]
    if apply_noqa:
        found = filter_suppressed(found, lines, related_lines(path, lines, config))
    # Related places come with the path their module was found at: absolute, so that a cached result
    # means the same file from any directory; the surfaces make them relative as they do the finding's.
    return [d.with_path(path).with_related_paths(os.path.abspath) for d in found]


def _check_parsed(tree: ast.Module, known: Optional[ModuleFacts], lines: List[str], context: FileContext,
                  rules: Sequence[Rule], kept: Optional[Callable[[ModuleFacts], bool]] = None) -> List[Diagnostic]:
    """Findings of a parsed file: of the facts already built for it, else of new ones (``check_tree``)."""
    try:
        return check_tree(tree, lines, context, rules, kept) if known is None else run_rules(known, rules)
    except RecursionError:
        return [engine_diagnostic("OG000", "cannot parse: nesting too deep to analyse")]


def _check_in_windows(text: str, lines: List[str], path: str, context: FileContext,
                      rules: Sequence[Rule]) -> List[Diagnostic]:
    """A file too large for one tree, checked a window at a time (see ``large_files``).  A text the
    tokenizer cannot read, or a window that does not parse (this Python's tokenizer misread the statements
    of a newer grammar), is parsed whole: its findings, or the one error it really has, as any file's."""
    found: List[Diagnostic] = []
    try:
        for window in large_files.windows(lines, large_files.layout(text)):
            found.extend(_check_parsed(parse(window, path), None, lines, context, rules))
    except (tokenize.TokenError, SyntaxError):
        return _check_parsed(parse(text, path), None, lines, context, rules)
    found.sort(key=lambda d: (d.line, d.column, d.code))
    return _dedupe(found)


def _read_as_other_module(source: bytes, context: FileContext, lines: List[str]) -> Optional[ModuleFacts]:
    """The facts the project index built for this file when another file's rules read it first, from the
    same bytes, lines and kind of file: checking it then reuses that parse (kept in the index, so not
    released here)."""
    if not context.cross_file or not context.path:
        return None
    known = parsed_module(context.path, source, context.config)
    if known is None or known.context.rel_path != context.rel_path or known.lines != lines:
        return None
    return known


def related_lines(path: str, lines: Sequence[str], config: Config) -> Callable[[str], Optional[Sequence[str]]]:
    """The lines of a related place's file, for its ``noqa``: this file's own (as checked, an editor's
    unsaved text included) for a place here, another file's as the project index holds them (its cached
    parse, else its cached bytes), each file looked up once per check.  Every other file read is a
    dependency of the result: a ``noqa`` added or removed there changes which findings remain."""
    own = os.path.abspath(path) if path else None
    found: Dict[str, Optional[Sequence[str]]] = {}

    def lines_of(other: str) -> Optional[Sequence[str]]:
        if not other or other == path:
            return lines
        key = os.path.abspath(other)
        if key == own:
            return lines
        if key not in found:
            found[key] = _project_lines(key, config)
        return found[key]

    return lines_of


def _project_lines(path: str, config: Config) -> Optional[Sequence[str]]:
    record_dependency(path)
    facts = module_facts(path, config) if path.endswith(".py") else None
    if facts is not None:
        return facts.lines
    source = read_bytes(path)
    if not source:
        return None
    try:
        return decode(source).splitlines()
    except (SyntaxError, UnicodeDecodeError, LookupError, ValueError):
        return source.decode("utf-8", "replace").splitlines()


def read_source(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def cannot_read(path: str, error: OSError) -> Diagnostic:
    return engine_diagnostic("OG000", f"cannot read: {error.strerror or error}").with_path(path)

