"""Fixes as libcst transforms: find each finding's node again by its range, rewrite it, write atomically.

Detection runs on ``ast``; libcst is parsed here only, and only for files that have a fix to apply and
that ``ast`` already accepted (libcst's native parser can take the process down on pathological nesting).
A fix never changes more than its node (plus an import it needs): the file keeps its encoding, BOM,
coding cookie, newline style and mode, and a result that does not parse is thrown away.

The transforms themselves are in ``fix_transforms``.
"""
from __future__ import annotations

import ast
import codecs
import difflib
import io
import os
import re
import stat
import tempfile
import tokenize
import warnings
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from ..analysis import large_files
from ..config import Config, config_for
from .fix_transforms import TRANSFORMS, Transform, enclosing_statement
from .import_placement import add_imports, bound_names, first_party_test, imported_name
from ..model import Diagnostic

# ---------------------------------------------------------------------------------------------------------
# Finding nodes again, rewriting them, adding imports


class _Fixer(cst.CSTTransformer):
    def __init__(self, targets: Dict[cst.CSTNode, List[Tuple[Diagnostic, Transform]]],
                 taken: Optional[set] = None) -> None:
        super().__init__()
        self.targets = targets
        self.applied: List[Diagnostic] = []
        self.imports: set = set()
        #: names the module already uses for something else: a fix that would import one is not made
        self.taken = taken if taken is not None else set()
        self.clashes: List[Tuple[Diagnostic, str]] = []

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        updated_node = super().on_leave(original_node, updated_node)
        for diagnostic, transform in self.targets.get(original_node, ()):
            if not isinstance(updated_node, transform.node_type):
                continue
            result = (transform.rewrite(updated_node, diagnostic.fix) if transform.takes_fix  # type: ignore[call-arg]
                      else transform.rewrite(updated_node))
            if result is None:
                continue
            clash = sorted(imported_name(entry) for entry in result.imports if entry in self.taken)
            if clash:
                self.clashes.append((diagnostic, clash[0]))
                continue
            updated_node = result.node
            self.imports.update(result.imports)
            self.applied.append(diagnostic)
        return updated_node


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _char_column(lines: Sequence[str], line: int, column: int) -> int:
    """ast columns count UTF-8 bytes (1-based here); libcst columns count characters (0-based)."""
    if not 0 < line <= len(lines):
        return column - 1
    prefix = lines[line - 1].encode("utf-8", "surrogatepass")[: max(column - 1, 0)]
    return len(prefix.decode("utf-8", "ignore"))


def _find_targets(
    wrapper: MetadataWrapper, wanted: Sequence[Tuple[Diagnostic, Transform]], text: str
) -> Dict[cst.CSTNode, List[Tuple[Diagnostic, Transform]]]:
    lines = _LINE_BREAK.split(text)
    starts: Dict[Tuple[int, int], List[int]] = {}
    ends: List[Tuple[int, int]] = []
    for index, (diagnostic, _) in enumerate(wanted):
        start = (diagnostic.line, _char_column(lines, diagnostic.line, diagnostic.column))
        starts.setdefault(start, []).append(index)
        ends.append((diagnostic.end_line, _char_column(lines, diagnostic.end_line, diagnostic.end_column)))

    candidates: Dict[int, List[Tuple[cst.CSTNode, CodeRange]]] = {}
    positions = wrapper.resolve(PositionProvider)
    for node, where in positions.items():
        for index in starts.get((where.start.line, where.start.column), ()):
            transform = wanted[index][1]
            if isinstance(node, transform.node_type) and transform.accepts(node):
                candidates.setdefault(index, []).append((node, where))
    # Fixes that add a statement rewrite the statement that holds the finding, wherever it starts.
    for start, indexes in starts.items():
        for index in indexes:
            if wanted[index][1].enclosing_statement:
                found = enclosing_statement(positions, start, wanted[index][1])
                if found:
                    candidates[index] = found

    targets: Dict[cst.CSTNode, List[Tuple[Diagnostic, Transform]]] = {}
    for index, found in sorted(candidates.items()):
        exact = [node for node, where in found if (where.end.line, where.end.column) == ends[index]]
        # Several nodes of the type start here: the one the finding spans, else the outermost.
        node = exact[0] if exact else max(found, key=lambda f: (f[1].end.line, f[1].end.column))[0]
        targets.setdefault(node, []).append(wanted[index])
    return targets


# ---------------------------------------------------------------------------------------------------------
# Bytes in, bytes out


@dataclass(frozen=True)
class FixResult:
    new_source: bytes
    applied: List[Diagnostic]
    #: fixes whose result would not parse: not applied, so the caller can say so
    rejected: List[Diagnostic] = field(default_factory=list)
    #: fixes not made because the name they import already means something else here, with that name
    clashes: List[Tuple[Diagnostic, str]] = field(default_factory=list)
    #: fixes not made because the file is too large to rewrite within bounded memory (see ``large_files``)
    too_large: List[Diagnostic] = field(default_factory=list)


def is_allowed(diagnostic: Diagnostic, unsafe: bool) -> bool:
    fix = diagnostic.fix
    if fix is None or fix.kind not in TRANSFORMS:
        return False
    return fix.applicability == "safe" or (unsafe and fix.applicability == "unsafe")


def _parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False
    return True


def _split_encoding(source: bytes) -> Optional[Tuple[bytes, str, str]]:
    """(BOM, codec, text) such that ``BOM + text.encode(codec) == source``; None when that cannot hold."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    except (SyntaxError, LookupError):
        return None
    bom = codecs.BOM_UTF8 if source.startswith(codecs.BOM_UTF8) else b""
    codec = "utf-8" if encoding == "utf-8-sig" else encoding
    body = source[len(bom):]
    try:
        text = body.decode(codec)
        if text.encode(codec) != body:  # a lossy codec would change bytes far from the edit
            return None
    except (UnicodeError, LookupError):
        return None
    return bom, codec, text


def fix_source(source: bytes, diagnostics: Sequence[Diagnostic], unsafe: bool, path: str = "") -> FixResult:
    """Apply every allowed fix among ``diagnostics`` to one file's bytes. No I/O but a look at which top-level
    modules are the project's own (``path``'s project), for where an added import goes.

    A fix whose result does not parse is dropped (and listed in ``rejected``); a fix whose import would
    clash with a name the module already uses is not made (listed in ``clashes``); the others still apply."""
    unchanged = FixResult(source, [])
    wanted = [(d, TRANSFORMS[d.fix.kind]) for d in diagnostics if is_allowed(d, unsafe)]  # type: ignore[union-attr]
    if not wanted:
        return unchanged
    if large_files.is_large(source):
        # libcst holds a file as about a thousand bytes per byte of source: a rewrite of a file this large
        # would take gigabytes, where the check took a bounded window at a time.
        return FixResult(source, [], too_large=[d for d, _ in wanted])
    split = _split_encoding(source)
    if split is None:
        return unchanged
    bom, codec, text = split
    if not _parses(text):
        return unchanged
    clashes: List[Tuple[Diagnostic, str]] = []
    outcome = _rewrite(text, wanted, path, clashes)
    if outcome is None:
        return FixResult(source, [], clashes=clashes)
    new_text, applied = outcome
    rejected: List[Diagnostic] = []
    if not _parses(new_text):
        # One of them breaks the file: find which on their own, then apply the rest together.
        rejected = [d for d, transform in wanted if _breaks(text, [(d, transform)])]
        kept = [(d, t) for d, t in wanted if not any(d is r for r in rejected)]
        outcome = _rewrite(text, kept, path) if kept and rejected else None
        if outcome is None or not _parses(outcome[0]):
            return FixResult(source, [], rejected or [d for d in applied], clashes)
        new_text, applied = outcome
    try:
        new_source = bom + new_text.encode(codec)
    except UnicodeError:
        return unchanged
    order = {id(d): i for i, d in enumerate(diagnostics)}
    return FixResult(new_source, sorted(applied, key=lambda d: order.get(id(d), 0)), rejected, clashes)


def _rewrite(text: str, wanted: Sequence[Tuple[Diagnostic, Transform]], path: str = "",
             clashes: Optional[List[Tuple[Diagnostic, str]]] = None) -> Optional[Tuple[str, List[Diagnostic]]]:
    """The text with the wanted rewrites made (not yet checked to parse) and the findings they fix;
    None when none applies. Fixes left undone because their import would clash go to ``clashes``."""
    try:
        parsed = cst.parse_module(text)
        if parsed.code != text:  # libcst does not round-trip every file (a form feed before a statement)
            return None
        wrapper = MetadataWrapper(parsed)
        targets = _find_targets(wrapper, wanted, text)
        if not targets:
            return None
        fixer = _Fixer(targets, _names_in_use(parsed, text))
        module = wrapper.visit(fixer)
        if clashes is not None:
            clashes.extend(fixer.clashes)
        if fixer.imports:
            module = add_imports(module, fixer.imports, first_party_test(path))
        new_text = module.code
    except Exception:  # noqa: BLE001 - a fix that cannot be made leaves the file as it was
        return None
    if not fixer.applied or new_text == text:
        return None
    return new_text, fixer.applied


def _names_in_use(parsed: cst.Module, text: str) -> set:
    """Import entries (``"x.y:z"``) a fix must not add: their name is bound here to something else (a
    function of the same name, another import), so the import would redefine it or the call reach the
    wrong thing. An entry already imported exactly so is fine: it is not added twice."""
    from .import_placement import _plain_imports, from_imported

    names = bound_names(text)
    present = from_imported(parsed) | _plain_imports(parsed)

    class _Taken(set):
        def __contains__(self, entry: object) -> bool:
            return isinstance(entry, str) and entry not in present and imported_name(entry) in names

    return _Taken()


def _breaks(text: str, wanted: Sequence[Tuple[Diagnostic, Transform]]) -> bool:
    outcome = _rewrite(text, wanted)
    return outcome is not None and not _parses(outcome[0])


# ---------------------------------------------------------------------------------------------------------
# Files


# A fix can uncover another (rare); stop long before this could loop.
_MAX_PASSES = 5


def unified_diff(path: str, before: bytes, after: bytes) -> str:
    def lines(data: bytes) -> List[str]:
        split = _split_encoding(data)
        return _keep_ends(split[2] if split else data.decode("utf-8", "replace"))

    # a/ and b/ as git prints them, so `git apply` / `patch -p1` take the diff; an absolute path stays as is.
    old, new = (path, path) if os.path.isabs(path) else (f"a/{path}", f"b/{path}")
    out = []
    for line in difflib.unified_diff(lines(before), lines(after), fromfile=old, tofile=new):
        if not line.endswith(("\n", "\r")):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    return "".join(out)


def _keep_ends(text: str) -> List[str]:
    """Lines split at \\r\\n, \\r and \\n only, as Python reads source (str.splitlines splits more)."""
    parts = []
    start = 0
    for match in _LINE_BREAK.finditer(text):
        parts.append(text[start:match.end()])
        start = match.end()
    if start < len(text):
        parts.append(text[start:])
    return parts


def _display(path: str) -> str:
    """Relative to the current directory when below it (as the report prints paths), with / separators."""
    if os.path.isabs(path):
        try:
            relative = os.path.relpath(path)
            if not relative.startswith(".."):
                path = relative
        except ValueError:
            pass
    return path.replace(os.sep, "/")


def write_atomically(path: str, data: bytes) -> None:
    """Temp file beside the target, same mode, then ``os.replace``: a reader never sees half a file."""
    target = os.path.realpath(path)
    mode = stat.S_IMODE(os.stat(target).st_mode)
    directory = os.path.dirname(target) or "."
    fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".onceguard", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


@dataclass
class FixOutcome:
    remaining: List[Diagnostic]
    #: the unified diff of every changed file (``--diff``), empty when writing
    diff: str = ""
    #: findings the fixes removed, with their paths
    fixed: List[Diagnostic] = field(default_factory=list)
    #: findings whose fix was dropped because the fixed file would not parse
    rejected: List[Diagnostic] = field(default_factory=list)
    #: findings whose fix was not made because the name it imports already means something else there
    clashes: List[Tuple[Diagnostic, str]] = field(default_factory=list)
    #: findings whose fix was not made because their file is too large to rewrite
    too_large: List[Diagnostic] = field(default_factory=list)


def _fix_file(path: str, found: List[Diagnostic], config: Config, unsafe: bool, write: bool) -> FixOutcome:
    from .check import check_source, engine_diagnostic, read_source

    try:
        original = read_source(path)
    except OSError:
        return FixOutcome(found)
    current = original
    remaining = found
    fixed: List[Diagnostic] = []
    rejected: List[Diagnostic] = []
    clashes: List[Tuple[Diagnostic, str]] = []
    too_large: List[Diagnostic] = []
    first_applied: Optional[List[Diagnostic]] = None
    for _ in range(_MAX_PASSES):
        # Suppressed findings never reach here: the engine applies noqa and per-file-ignores.
        fixable = [d for d in remaining if is_allowed(d, unsafe)]
        if not fixable:
            break
        result = fix_source(current, fixable, unsafe, path)
        rejected.extend(d.with_path(path) for d in result.rejected)
        clashes.extend((d.with_path(path), name) for d, name in result.clashes)
        too_large.extend(d.with_path(path) for d in result.too_large)
        if not result.applied:
            break
        if first_applied is None:
            first_applied = result.applied
        fixed.extend(d.with_path(path) for d in result.applied)
        current = result.new_source
        remaining = check_source(current, path, config, cross_file=config.whole_project)
    if current == original:
        return FixOutcome(found, rejected=rejected, clashes=clashes, too_large=too_large)
    if not write:
        # The file stays as it is, so the findings keep their places; drop only what the diff fixes.
        applied = first_applied or []
        left = [d for d in found if not any(d is a for a in applied)]
        return FixOutcome(left, unified_diff(_display(path), original, current), fixed, rejected, clashes)
    try:
        write_atomically(path, current)
    except OSError as error:
        problem = engine_diagnostic("OG000", f"cannot write fixes: {error.strerror or error}").with_path(path)
        return FixOutcome(found + [problem], rejected=rejected, clashes=clashes)
    return FixOutcome([d.with_path(path) for d in remaining], "", fixed, rejected, clashes)


def fix_files(diagnostics: Sequence[Diagnostic], configs_by_path: Dict[str, Config], unsafe: bool,
              write: bool) -> FixOutcome:
    """Fix every file that has a fix to apply: what remains, what was fixed and, when not writing, the diff."""
    by_path: Dict[str, List[Diagnostic]] = {}
    for diagnostic in diagnostics:
        by_path.setdefault(diagnostic.path, []).append(diagnostic)
    total = FixOutcome([])
    diffs: List[Tuple[str, str]] = []
    for path, found in by_path.items():
        if not path or not any(is_allowed(d, unsafe) for d in found):
            total.remaining.extend(found)
            continue
        config = configs_by_path.get(path)
        if config is None:
            config = config_for(path)
        outcome = _fix_file(path, found, config, unsafe, write)
        total.remaining.extend(outcome.remaining)
        total.fixed.extend(outcome.fixed)
        total.rejected.extend(outcome.rejected)
        total.clashes.extend(outcome.clashes)
        total.too_large.extend(outcome.too_large)
        if outcome.diff:
            diffs.append((path, outcome.diff))
    total.diff = "".join(diff for _, diff in sorted(diffs))
    return total


def apply_fixes(diagnostics: Sequence[Diagnostic], configs_by_path: Dict[str, Config], unsafe: bool,
                write: bool) -> Tuple[List[Diagnostic], str]:
    """Fix every file that has a fix to apply; return what remains and, when not writing, the diff."""
    outcome = fix_files(diagnostics, configs_by_path, unsafe, write)
    return outcome.remaining, outcome.diff


def fixable_counts(diagnostics: Iterable[Diagnostic]) -> Tuple[int, int]:
    """(findings ``--fix`` can fix, findings only ``--unsafe-fixes`` can)."""
    safe = unsafe = 0
    for diagnostic in diagnostics:
        if is_allowed(diagnostic, unsafe=False):
            safe += 1
        elif is_allowed(diagnostic, unsafe=True):
            unsafe += 1
    return safe, unsafe


def add_noqa_to_files(diagnostics: Sequence[Diagnostic]) -> Tuple[int, List[Diagnostic], List[Diagnostic]]:
    """``--add-noqa``: a ``# noqa: CODE`` comment on the line of every finding, written atomically with the
    file's encoding and newlines kept. Returns (codes added, findings no comment could go on, write errors)."""
    from .check import engine_diagnostic, read_source
    from ..noqa import add_noqa

    by_path: Dict[str, List[Diagnostic]] = {}
    for diagnostic in diagnostics:
        if diagnostic.path and diagnostic.code not in ("OG000", "OG001"):
            by_path.setdefault(diagnostic.path, []).append(diagnostic)
    added = 0
    skipped: List[Diagnostic] = []
    problems: List[Diagnostic] = []
    for path, found in sorted(by_path.items()):
        try:
            original = read_source(path)
        except OSError as error:
            problems.append(engine_diagnostic("OG000", f"cannot read: {error.strerror or error}").with_path(path))
            continue
        split = _split_encoding(original)
        if split is None:
            skipped.extend(found)
            continue
        bom, codec, text = split
        new_text, count, left = add_noqa(text, [(d.line, d.code) for d in found])
        skipped.extend(d for d in found if (d.line, d.code) in set(left))
        if not count:
            continue
        try:
            write_atomically(path, bom + new_text.encode(codec))
        except (OSError, UnicodeError) as error:
            reason = getattr(error, "strerror", None) or error
            problems.append(engine_diagnostic("OG000", f"cannot write: {reason}").with_path(path))
            continue
        added += count
    return added, skipped, problems
