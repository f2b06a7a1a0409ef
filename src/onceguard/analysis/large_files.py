"""Reading a file too large to hold as one syntax tree.

A Python syntax tree costs 150-200 bytes of memory per byte of dense source: a generated 5 MB module
would need close to 1 GB. A file larger than ``LARGE_FILE_BYTES`` is therefore read in windows, each
parsed, checked and dropped before the next, so the memory of a check stays bounded whatever the size:

- The file is tokenized once (a stream: constant memory, linear time) to find its top-level statements,
  and, in a top-level class too large for one window, the statements of its body.
- Every window keeps the lines of its own statements plus a *context* at the lines where it stands in
  the file: the imports and the small top-level statements that are not definitions (a scheduler or a
  pool made at module level, a registration call), so names resolve in every window as they do in the
  whole file. All other lines are blank, so every node keeps its true line and column.
- A bracketed display that holds only literals over many lines (a generated table) is folded to ``...``
  before any parse: no rule reads the values of a data table, and it is what makes such files large.

What a window cannot see is a definition that stands in another window: a registration is read with the
function it registers only when one of them is in the other's context (a module-level registration is, a
decorated definition carries its registration with it).
"""

import io
import token
import tokenize
from dataclasses import dataclass, field
from typing import Iterator, List, Sequence, Tuple

#: Files larger than this are read in windows (1 MiB of dense code is about 200 MiB of tree).
LARGE_FILE_BYTES = 1 << 20
#: The source text of the statements a window holds, beside its context.
WINDOW_BYTES = 192 << 10
#: Context statements larger than this are not repeated in every window.
CONTEXT_STATEMENT_BYTES = 2 << 10
#: The context of a window, at most.
CONTEXT_BYTES = 128 << 10
#: A display of literals spanning fewer lines is left as it is.
FOLD_MIN_LINES = 8

_CONTINUATIONS = frozenset({"else", "elif", "except", "finally"})
_DATA_NAMES = frozenset({"None", "True", "False"})
_DATA_OPS = frozenset({",", ":", "-", "+", "(", ")", "[", "]", "{", "}"})
_OPENERS = frozenset("([{")


@dataclass
class Statement:
    """A statement's lines (1-based, inclusive), what it is, and, for a class, its body's statements."""

    first: int
    last: int
    kind: str  # "import", "definition" or "other"
    size: int = 0
    body: List["Statement"] = field(default_factory=list)
    header_last: int = 0  # a class: the last line of its header (decorators, ``class ...:``)


@dataclass
class Layout:
    statements: List[Statement]
    folds: List[Tuple[int, int, int, int]]  # (open line, open column, close line, close column) of a display


def is_large(source: bytes) -> bool:
    return len(source) > LARGE_FILE_BYTES


def layout(text: str) -> Layout:
    """The statements and the foldable data displays of ``text``. Raises ``tokenize.TokenError`` or
    ``SyntaxError`` (``IndentationError``) for a text the tokenizer cannot read."""
    statements: List[Statement] = []
    folds: List[Tuple[int, int, int, int]] = []
    brackets: List[List] = []  # the brackets open now: [line, column, whether only literals are inside]
    indent = 0
    logical_start = True  # the next significant token begins a logical line
    current = None  # the top-level statement being read
    decorating = False  # the last top-level logical line was a decorator
    in_class = False  # the current statement is a class (its header read, or being read)
    body_decorating = False
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        kind = tok.type
        if kind == token.INDENT:
            indent += 1
            continue
        if kind == token.DEDENT:
            indent -= 1
            continue
        if kind in (token.NL, token.COMMENT, token.ENDMARKER):
            continue
        if kind == token.NEWLINE:
            logical_start = True
            if indent == 0 and current is not None and in_class:
                current.header_last = tok.start[0]
            continue
        word = tok.string
        if logical_start:
            logical_start = False
            if indent == 0:
                if current is not None and (decorating or word in _CONTINUATIONS):
                    in_class = in_class or word == "class"
                else:
                    current = Statement(tok.start[0], tok.start[0], _kind_of(tok))
                    statements.append(current)
                    in_class = word == "class"
                decorating = word == "@"
            elif indent == 1 and current is not None and in_class and current.header_last:
                # A decorated method or an ``else`` arm continues the body statement before it.
                if not (current.body and (body_decorating or word in _CONTINUATIONS)):
                    current.body.append(Statement(tok.start[0], tok.start[0], _kind_of(tok)))
                body_decorating = word == "@"
        if current is not None:
            current.last = max(current.last, tok.end[0])
            if current.body and indent >= 1:
                current.body[-1].last = max(current.body[-1].last, tok.end[0])
        _follow_brackets(tok, brackets, folds)
    return Layout(statements, folds)


def _kind_of(tok: tokenize.TokenInfo) -> str:
    if tok.string in ("import", "from"):
        return "import"
    if tok.string in ("def", "class", "async", "@"):
        return "definition"
    return "other"


def _follow_brackets(tok: tokenize.TokenInfo, brackets: List[List], folds: List[Tuple[int, int, int, int]]) -> None:
    """Keep the stack of open brackets, marking each whose content so far is only literals, and record a
    display of literals over ``FOLD_MIN_LINES`` lines or more when it closes (the outermost only)."""
    if tok.type == token.OP and tok.string in _OPENERS:
        brackets.append([tok.start[0], tok.start[1], True])
        return
    if tok.type == token.OP and tok.string in (")", "]", "}"):
        if not brackets:
            return
        open_line, open_column, pure = brackets.pop()
        if brackets and not pure:
            brackets[-1][2] = False
        if pure and tok.start[0] - open_line >= FOLD_MIN_LINES:
            # An inner fold recorded earlier lies within this one: this one replaces it.
            while folds and (folds[-1][0], folds[-1][1]) > (open_line, open_column):
                folds.pop()
            folds.append((open_line, open_column, tok.start[0], tok.start[1]))
        return
    if brackets and brackets[-1][2] and not _is_literal(tok):
        brackets[-1][2] = False


def _is_literal(tok: tokenize.TokenInfo) -> bool:
    if tok.type in (token.NUMBER, token.NL, token.COMMENT):
        return True
    if tok.type == token.STRING:
        prefix = tok.string[: len(tok.string) - len(tok.string.lstrip("rRbBuUfF"))]
        return "f" not in prefix.lower()
    if tok.type == token.NAME:
        return tok.string in _DATA_NAMES
    return tok.type == token.OP and tok.string in _DATA_OPS


def folded_lines(lines: Sequence[str], folds: Sequence[Tuple[int, int, int, int]]) -> List[str]:
    """The lines with every fold's content replaced by ``...`` and blank lines, columns after it kept."""
    out = list(lines)
    for open_line, open_column, close_line, close_column in folds:
        first = out[open_line - 1]
        out[open_line - 1] = first[: open_column + 1] + "..."
        for number in range(open_line, close_line - 1):
            out[number] = ""
        out[close_line - 1] = " " * close_column + lines[close_line - 1][close_column:]
    return out


def windows(lines: Sequence[str], found: Layout) -> Iterator[str]:
    """The source texts to parse one after the other, each with every kept line at its own number."""
    folded = folded_lines(lines, found.folds)
    units: List[Tuple[Statement, Statement]] = []  # (top-level statement, the unit: itself or a body statement)
    for statement in found.statements:
        statement.size = _text_size(folded, statement)
        if statement.body and statement.size > WINDOW_BYTES:
            for inner in statement.body:
                inner.size = _text_size(folded, inner)
                units.append((statement, inner))
        else:
            units.append((statement, statement))
    context = _context(found.statements)
    batch: List[Tuple[Statement, Statement]] = []
    size = 0
    for unit in units:
        if batch and size + unit[1].size > WINDOW_BYTES:
            yield _window(folded, context, batch)
            batch, size = [], 0
        batch.append(unit)
        size += unit[1].size
    if batch:
        yield _window(folded, context, batch)


def _text_size(folded: Sequence[str], statement: Statement) -> int:
    return sum(len(folded[n - 1]) + 1 for n in range(statement.first, statement.last + 1))


def _context(statements: Sequence[Statement]) -> List[Statement]:
    chosen: List[Statement] = []
    total = 0
    for statement in statements:
        if statement.kind == "definition" or statement.size > CONTEXT_STATEMENT_BYTES:
            continue
        if total + statement.size > CONTEXT_BYTES:
            break
        chosen.append(statement)
        total += statement.size
    return chosen


def _window(folded: Sequence[str], context: Sequence[Statement], batch: Sequence[Tuple[Statement, Statement]]) -> str:
    keep: List[Tuple[int, int]] = [(s.first, s.last) for s in context]
    for top, unit in batch:
        if unit is not top:
            keep.append((top.first, top.header_last))
        keep.append((unit.first, unit.last))
    last = max(end for _, end in keep)
    out = [""] * last
    for first, end in keep:
        out[first - 1:end] = folded[first - 1:end]
    return "\n".join(out) + "\n"
