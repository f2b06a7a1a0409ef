"""Read a file written for a newer Python than the one running: rewrite only its newer constructs into
code this interpreter parses, keeping every line and the byte column of every token after them.

``ast.parse`` of the running interpreter is the parser; this module runs only when it refused a file.
A small scanner of its own (not libcst: its native parser is quadratic on long operator chains and
overflows the C stack on deep nesting) finds the constructs and rewrites them in place:

- a ``type X[T] = value`` statement (3.12) becomes ``X = value``, the value at its column;
- type parameters of a ``def`` or ``class`` (3.12, defaults 3.13) become blanks inside the brackets
  that already had to be there: ``def f[T](x)`` reads as ``def f(   x)``;
- ``except A, B:`` (3.14) gets the brackets it needs before 3.14;
- a string whose f-string (3.12 rules: reused quotes, backslashes, comments, line breaks inside a
  replacement field) or template string (3.14) this interpreter rejects is replaced by a placeholder
  name of the same footprint; its tree (a ``JoinedStr`` of the same parts, every expression parsed at
  its original place) is built here and put where the placeholder parsed.

Anything the scanner does not understand leaves the file as it was: the caller reports the
interpreter's own error.
"""
from __future__ import annotations

import ast
import bisect
import io
import itertools
import re
import tokenize
import warnings
from typing import Dict, List, Optional, Sequence, Tuple

from .facts import walk

#: The placeholder a rewritten string leaves behind where no string of blanks fits: a name, found again
#: by its position.
_PLACEHOLDER = "_"
_STRING_PREFIXES = frozenset(
    "".join(letters)
    for base in ("r", "u", "b", "br", "rb", "f", "fr", "rf", "t", "tr", "rt")
    for letters in itertools.product(*((c, c.upper()) for c in base))
)
_NEWLINE = re.compile(r"\r\n|\r|\n")
_TOKEN = re.compile(
    r"""(?P<space>[ \t\f]+|\\(?:\r\n|\r|\n))
      |(?P<newline>\r\n|\r|\n)
      |(?P<comment>\#[^\r\n]*)
      |(?P<name>[^\W\d]\w*)
      |(?P<number>\.?\d(?:[\w.]|(?<=[eE])[+-])*)
      |(?P<quote>["'])
      |(?P<op>\*\*=?|//=?|<<=?|>>=?|->|:=|\.\.\.|[-+*/%&|^@<>=!]=|[^\s\w])""",
    re.VERBOSE,
)
_OPEN = "([{"
_CLOSE = ")]}"


class NotUnderstood(Exception):
    """The scanner met something it cannot read: the file is left to the interpreter's own error."""


class _Token:
    __slots__ = ("kind", "start", "end", "text", "string")

    def __init__(self, kind: str, start: int, end: int, text: str, string: Optional["_String"] = None):
        self.kind = kind
        self.start = start
        self.end = end
        self.text = text
        self.string = string


class _Field:
    """``{expression=!r:spec}`` of an f-string: offsets into the source."""
    __slots__ = ("expr_start", "expr_end", "echo_end", "conversion", "spec")

    def __init__(self, expr_start: int, expr_end: int, echo_end: Optional[int], conversion: Optional[str],
                 spec: Optional[List[object]]):
        self.expr_start = expr_start
        self.expr_end = expr_end
        self.echo_end = echo_end  # end of ``expr =`` and its blanks when the field echoes its expression
        self.conversion = conversion
        self.spec = spec


class _String:
    """One string literal: its prefix, quote and, for f- and t-strings, its parts (text spans and fields)."""
    __slots__ = ("start", "end", "prefix", "quote", "parts")

    def __init__(self, start: int, end: int, prefix: str, quote: str, parts: Optional[List[object]]):
        self.start = start
        self.end = end
        self.prefix = prefix
        self.quote = quote
        self.parts = parts  # None for a plain string; (start, end) spans and _Field for formatted ones

    @property
    def formatted(self) -> bool:
        return self.parts is not None


# --------------------------------------------------------------------------------------------- scanning

def _tokens(text: str, pos: int, end: int):
    """Tokens of code from ``pos``: strings are read whole (f-strings with their fields, 3.12 rules)."""
    while pos < end:
        match = _TOKEN.match(text, pos)
        if match is None:
            raise NotUnderstood(pos)
        kind = match.lastgroup
        if kind == "quote" or (kind == "name" and match.group() in _STRING_PREFIXES
                               and match.end() < end and text[match.end()] in "'\""):
            prefix = "" if kind == "quote" else match.group()
            string = _read_string(text, pos, pos + len(prefix), prefix, end)
            yield _Token("string", pos, string.end, text[pos:string.end], string)
            pos = string.end
            continue
        yield _Token(kind, pos, match.end(), match.group())
        pos = match.end()


def _read_string(text: str, start: int, quote_at: int, prefix: str, limit: int) -> _String:
    char = text[quote_at]
    quote = char * 3 if text.startswith(char * 3, quote_at) else char
    pos = quote_at + len(quote)
    lowered = prefix.lower()
    if "f" not in lowered and "t" not in lowered:
        while True:
            if pos >= limit:
                raise NotUnderstood(start)
            c = text[pos]
            if c == "\\":
                pos += 2
            elif text.startswith(quote, pos):
                return _String(start, pos + len(quote), prefix, quote, None)
            elif c in "\r\n" and len(quote) == 1:
                raise NotUnderstood(start)
            else:
                pos += 1
    parts, pos = _read_formatted_text(text, pos, quote, "r" in lowered, limit, in_spec=False)
    return _String(start, pos + len(quote), prefix, quote, parts)


def _read_formatted_text(text: str, pos: int, quote: str, raw: bool, limit: int,
                         in_spec: bool) -> Tuple[List[object], int]:
    """Text spans and fields up to the closing quote (or, in a format spec, the field's ``}``)."""
    parts: List[object] = []
    span_start = pos
    while True:
        if pos >= limit:
            raise NotUnderstood(pos)
        c = text[pos]
        if c == "\\":
            if not raw and text.startswith("N{", pos + 1):
                close = text.find("}", pos)
                if close < 0:
                    raise NotUnderstood(pos)
                pos = close + 1
            else:
                pos += 2
            continue
        if text.startswith(quote, pos):
            if in_spec:
                raise NotUnderstood(pos)  # the string ends inside a replacement field
            break
        if c in "\r\n" and len(quote) == 1 and not in_spec:
            raise NotUnderstood(pos)
        if c == "{":
            if not in_spec and text.startswith("{{", pos):
                pos += 2
                continue
            if pos > span_start:
                parts.append((span_start, pos))
            field, pos = _read_field(text, pos + 1, quote, raw, limit)
            parts.append(field)
            span_start = pos
            continue
        if c == "}":
            if in_spec:
                break
            if text.startswith("}}", pos):
                pos += 2
                continue
            raise NotUnderstood(pos)
        pos += 1
    if pos > span_start:
        parts.append((span_start, pos))
    return parts, pos


def _read_field(text: str, pos: int, quote: str, raw: bool, limit: int) -> Tuple[_Field, int]:
    """A replacement field after its ``{``: returns the field and the offset after its ``}``."""
    depth = 0
    expr_start = pos
    expr_end: Optional[int] = None
    echo_end: Optional[int] = None
    conversion: Optional[str] = None
    echo_open = False  # after the ``=`` of ``{expr=}``, until the blanks that follow it end
    tokens = _tokens(text, pos, limit)
    for token in tokens:
        kind, value = token.kind, token.text
        if kind in ("space", "newline", "comment", "string", "name", "number"):
            continue
        if value in _OPEN:
            depth += 1
            continue
        if depth:
            if value in _CLOSE:
                depth -= 1
            continue
        if value == "=":
            expr_end = token.start
            echo_open = True
            continue
        if echo_open and value in ("!", ":", ":=", "}"):
            echo_end = token.start  # the echoed text keeps the blanks after its ``=``
            echo_open = False
        if value == "!":
            expr_end = expr_end if expr_end is not None else token.start
            name = next(tokens, None)
            if name is None or name.kind != "name" or name.text not in ("r", "s", "a"):
                raise NotUnderstood(token.start)
            conversion = name.text
            continue
        if value in (":", ":="):
            expr_end = expr_end if expr_end is not None else token.start
            spec, close = _read_formatted_text(text, token.start + 1, quote, raw, limit, in_spec=True)
            return _Field(expr_start, expr_end, echo_end, conversion, spec), close + 1
        if value == "}":
            expr_end = expr_end if expr_end is not None else token.start
            return _Field(expr_start, expr_end, echo_end, conversion, None), token.end
    raise NotUnderstood(pos)


# ------------------------------------------------------------------------------------------ the rewrite

class _Rewrite:
    """The edits to one text, and the trees of the strings replaced by placeholders."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.line_starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]
        self.edits: List[Tuple[int, int, str]] = []
        self.strings: Dict[Tuple[int, int], Tuple[int, int, List["_String"]]] = {}

    def position(self, offset: int) -> Tuple[int, int]:
        """(line, UTF-8 column) of a character offset, as ``ast`` counts them."""
        index = bisect.bisect_right(self.line_starts, offset) - 1
        start = self.line_starts[index]
        return index + 1, len(self.text[start:offset].encode("utf-8"))

    def blank(self, start: int, end: int) -> str:
        """Spaces of the same byte length, line breaks kept."""
        return "".join(c if c in "\r\n" else " " * len(c.encode("utf-8")) for c in self.text[start:end])

    def apply(self) -> str:
        out = []
        pos = 0
        for start, end, replacement in sorted(self.edits):
            if start < pos:
                raise NotUnderstood(start)
            out.append(self.text[pos:start])
            out.append(replacement)
            pos = end
        out.append(self.text[pos:])
        return "".join(out)


def _statements(tokens: Sequence[_Token]):
    """Indexes of the tokens that begin a logical line (or follow a ``;``), in code without brackets."""
    depth = 0
    at_start = True
    for index, token in enumerate(tokens):
        if token.kind in ("space", "comment"):
            continue
        if token.kind == "newline":
            at_start = at_start or depth == 0
            continue
        if at_start and depth == 0:
            yield index
        at_start = False
        if token.text in _OPEN:
            depth += 1
        elif token.text in _CLOSE:
            depth = max(depth - 1, 0)
        elif token.text == ";" and depth == 0:
            at_start = True


def _next_code(tokens: Sequence[_Token], index: int) -> int:
    """Index of the next token after ``index`` that is code (not blanks, comments or line breaks)."""
    index += 1
    while index < len(tokens) and tokens[index].kind in ("space", "newline", "comment"):
        index += 1
    return index


def _matching(tokens: Sequence[_Token], index: int) -> int:
    """Index of the bracket closing the one at ``index``."""
    depth = 0
    for at in range(index, len(tokens)):
        text = tokens[at].text
        if tokens[at].kind != "op":
            continue
        if text in _OPEN:
            depth += 1
        elif text in _CLOSE:
            depth -= 1
            if depth == 0:
                return at
    raise NotUnderstood(tokens[index].start)


def _plan(rewrite: _Rewrite, tokens: List[_Token], mode: str) -> None:
    for index in (_statements(tokens) if mode == "exec" else ()):
        token = tokens[index]
        if token.kind == "name" and token.text == "type":
            _plan_type_alias(rewrite, tokens, index)
        elif token.kind == "name" and token.text == "except":
            _plan_except_list(rewrite, tokens, index)
    for index, token in enumerate(tokens):
        if token.kind == "name" and token.text in ("def", "class"):
            name = _next_code(tokens, index)
            bracket = _next_code(tokens, name)
            if (name < len(tokens) and tokens[name].kind == "name" and bracket < len(tokens)
                    and tokens[bracket].text == "["):
                _plan_type_params(rewrite, tokens, bracket, token.text)
    _plan_strings(rewrite, tokens)


def _plan_type_alias(rewrite: _Rewrite, tokens: List[_Token], index: int) -> None:
    """``type X[T] = value`` -> ``X = value`` with the value at its column."""
    name = _next_code(tokens, index)
    if name >= len(tokens) or tokens[name].kind != "name":
        return  # ``type = ...``, ``type(x)``: the builtin, not the statement
    after = _next_code(tokens, name)
    if after < len(tokens) and tokens[after].text == "[":
        close = _matching(tokens, after)
        start, end = tokens[after].start, tokens[close].end
        if any(c in "\r\n" for c in rewrite.text[start:end]):
            # Brackets over several lines stay brackets (a subscript target): blanks would break the line.
            inside = rewrite.blank(start + 1, end - 1)
            inside = inside[:-1] + "0" if inside.endswith(" ") else inside + "0"
            rewrite.edits.append((start, end, "[" + inside + "]"))
        else:
            rewrite.edits.append((start, end, rewrite.blank(start, end)))
        after = _next_code(tokens, close)
    if after >= len(tokens) or tokens[after].text != "=":
        return
    keyword, target = tokens[index], tokens[name]
    span = rewrite.text[keyword.start:target.end]
    width = len(span.encode("utf-8")) - len(target.text.encode("utf-8"))
    rewrite.edits.append((keyword.start, target.end, target.text + " " * width))


def _plan_except_list(rewrite: _Rewrite, tokens: List[_Token], index: int) -> None:
    """``except A, B:`` (3.14) -> ``except(A, B):``."""
    first = _next_code(tokens, index)
    if first >= len(tokens) or tokens[first].text in ("(", ":", "*"):
        return
    depth = 0
    comma = False
    at = first
    while at < len(tokens):
        token = tokens[at]
        if token.text in _OPEN:
            depth += 1
        elif token.text in _CLOSE:
            depth -= 1
        elif depth == 0 and token.text == ",":
            comma = True
        elif depth == 0 and (token.text == ":" or (token.kind == "name" and token.text == "as")):
            break
        at += 1
    if not comma or at >= len(tokens):
        return
    last = tokens[at - 1] if tokens[at - 1].kind not in ("space", "newline", "comment") else None
    if last is not None and last.kind == "name" and tokens[at - 2].text != "." and not last.text[:1].isupper():
        return  # ``except ValueError, error:`` binds a variable: Python 2, not a list of classes
    gap = tokens[index].end
    rewrite.edits.append((gap, tokens[first].start, "(" + rewrite.text[gap:tokens[first].start][1:]))
    rewrite.edits.append((tokens[at].start, tokens[at].start, ")"))


def _plan_type_params(rewrite: _Rewrite, tokens: List[_Token], bracket: int, keyword: str) -> None:
    """``def f[T](x)`` -> ``def f(   x)``; ``class C[T]:`` -> ``class C( ):``, the bracket's lines kept."""
    close = _matching(tokens, bracket)
    after = _next_code(tokens, close)
    open_at, close_at = tokens[bracket].start, tokens[close].start
    if after < len(tokens) and tokens[after].text == "(":
        rewrite.edits.append((open_at, open_at + 1, "("))
        rewrite.edits.append((open_at + 1, close_at, rewrite.blank(open_at + 1, close_at)))
        rewrite.edits.append((close_at, close_at + 1, " "))
        paren = tokens[after].start
        rewrite.edits.append((close_at + 1, paren + 1, rewrite.blank(close_at + 1, paren + 1)))
    elif keyword == "class" and after < len(tokens) and tokens[after].text == ":":
        rewrite.edits.append((open_at, open_at + 1, "("))
        rewrite.edits.append((open_at + 1, close_at, rewrite.blank(open_at + 1, close_at)))
        rewrite.edits.append((close_at, close_at + 1, ")"))
    else:
        raise NotUnderstood(open_at)


def _plan_strings(rewrite: _Rewrite, tokens: List[_Token]) -> None:
    """Each run of adjacent string literals (one value, by implicit concatenation) that holds a formatted
    string this interpreter rejects becomes a placeholder of the same footprint."""
    run: List[_Token] = []
    for token in tokens + [_Token("end", len(rewrite.text), len(rewrite.text), "")]:
        if token.kind == "string":
            run.append(token)
            continue
        if token.kind in ("space", "newline", "comment") and run:
            continue  # implicit concatenation may span blanks, comments and line breaks (in brackets)
        if run and any(t.string.formatted and not _parses(t.text) for t in run):
            _replace_run(rewrite, run)
        run = []


def _parses(source: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse("(" + source + ")", mode="eval")
        return True
    except (SyntaxError, ValueError):
        return False


def _replace_run(rewrite: _Rewrite, run: List[_Token]) -> None:
    text = rewrite.text
    start, end = run[0].start, run[-1].end
    line, column = rewrite.position(start)
    segment = text[start:end]
    breaks = list(_NEWLINE.finditer(segment))
    # A string of blanks as wide as the run, over the same lines, keeps every enclosing node's extent.
    name_at = (line, column)
    if not breaks:
        replacement = "'" + " " * (len(segment.encode("utf-8")) - 2) + "'"
    else:
        last_width = len(segment[breaks[-1].end():].encode("utf-8"))
        newlines = "".join(m.group() for m in breaks)
        if last_width >= 3:
            replacement = '"""' + newlines + " " * (last_width - 3) + '"""'
        else:  # too narrow a last line to close a triple-quoted string: a name in brackets instead
            replacement = "(" + _PLACEHOLDER + newlines + " " * (last_width - 1) + ")"
            name_at = (line, column + 1)
    rewrite.edits.append((start, end, replacement))
    rewrite.strings[name_at] = (start, end, [t.string for t in run])


# ----------------------------------------------------------------------------------- trees of strings

def _located(node: ast.AST, first: Tuple[int, int], last: Tuple[int, int]) -> ast.AST:
    node.lineno, node.col_offset = first
    node.end_lineno, node.end_col_offset = last
    return node


def _literal_text(rewrite: _Rewrite, string: _String, start: int, end: int, in_spec: bool) -> str:
    """The value of a text span of a formatted string: escapes decoded as the interpreter does."""
    raw = rewrite.text[start:end]
    if not in_spec:
        raw = raw.replace("{{", "{").replace("}}", "}")
    prefix = "r" if "r" in string.prefix.lower() else ""
    quote = string.quote[0] * 3
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = ast.literal_eval(prefix + quote + raw + quote)
        return value if isinstance(value, str) else raw
    except (SyntaxError, ValueError):
        return raw


def _expression(rewrite: _Rewrite, start: int, end: int) -> ast.expr:
    """The tree of the expression at ``text[start:end]``, every node at its place in the file."""
    source = "(" + rewrite.text[start:end] + ")"
    tree = parse_newer(source, "<f-string>", mode="eval")
    first_line, first_column = rewrite.position(start)
    for node in walk(tree):
        if not hasattr(node, "lineno"):
            continue
        for line_attr, column_attr in (("lineno", "col_offset"), ("end_lineno", "end_col_offset")):
            line = getattr(node, line_attr, None)
            if line is None:
                continue
            if line == 1:
                setattr(node, column_attr, getattr(node, column_attr) - 1 + first_column)
            setattr(node, line_attr, line + first_line - 1)
    return tree.body


def _string_values(rewrite: _Rewrite, string: _String, parts: List[object], in_spec: bool,
                   first: Tuple[int, int], last: Tuple[int, int]) -> List[ast.expr]:
    values: List[ast.expr] = []
    for part in parts:
        if isinstance(part, tuple):
            values.append(_located(ast.Constant(_literal_text(rewrite, string, part[0], part[1], in_spec)),
                                   first, last))
            continue
        field: _Field = part
        expression = _expression(rewrite, field.expr_start, field.expr_end)
        if field.echo_end is not None:
            echoed = rewrite.text[field.expr_start:field.echo_end]
            values.append(_located(ast.Constant(echoed), first, last))
        conversion = ord(field.conversion) if field.conversion else -1
        if field.echo_end is not None and conversion == -1 and field.spec is None:
            conversion = ord("r")
        spec = None
        if field.spec is not None:
            spec = _located(ast.JoinedStr(_string_values(rewrite, string, field.spec, True, first, last)),
                            first, last)
        value = ast.FormattedValue(expression, conversion, spec)
        values.append(_located(value, (expression.lineno, expression.col_offset),
                               (expression.end_lineno, expression.end_col_offset)))
    return values


def _string_tree(rewrite: _Rewrite, start: int, end: int, strings: List[_String]) -> ast.expr:
    first, last = rewrite.position(start), rewrite.position(end)
    values: List[ast.expr] = []
    for string in strings:
        if string.formatted:
            values.extend(_string_values(rewrite, string, string.parts, False, first, last))
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = ast.literal_eval(rewrite.text[string.start:string.end])
            if not isinstance(value, str):
                raise NotUnderstood(string.start)  # bytes beside a formatted string: an error anyway
            values.append(_located(ast.Constant(value), first, last))
    merged: List[ast.expr] = []
    for value in values:
        if merged and isinstance(value, ast.Constant) and isinstance(merged[-1], ast.Constant):
            merged[-1] = _located(ast.Constant(merged[-1].value + value.value), first, last)
        elif not (isinstance(value, ast.Constant) and value.value == ""):
            merged.append(value)
    return _located(ast.JoinedStr(merged), first, last)


class _PutBack(ast.NodeTransformer):
    def __init__(self, trees: Dict[Tuple[int, int], ast.expr]) -> None:
        self.trees = trees

    def _put_back(self, node: ast.expr) -> ast.AST:
        return self.trees.pop((node.lineno, node.col_offset), None) or node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return self._put_back(node) if node.id == _PLACEHOLDER else node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        return self._put_back(node) if isinstance(node.value, str) and not node.value.strip() else node


# --------------------------------------------------------------------------------------------- the API

def decode_source(source: bytes) -> str:
    """Decode as Python does (PEP 263 cookie, BOM, UTF-8 default); raises on undecodable bytes."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    text = source.decode(encoding)
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def downlevel(text: str, mode: str = "exec") -> Tuple[str, Dict[Tuple[int, int], ast.expr]]:
    """The text with its newer constructs rewritten, and the string trees to put back by position.

    Raises ``NotUnderstood`` when the scanner cannot read the text."""
    tokens = list(_tokens(text, 0, len(text)))
    rewrite = _Rewrite(text)
    _plan(rewrite, tokens, mode)
    rewritten = rewrite.apply()
    trees = {at: _string_tree(rewrite, start, end, strings)
             for at, (start, end, strings) in rewrite.strings.items()}
    return rewritten, trees


def parse_newer(text: str, path: str, mode: str = "exec") -> ast.AST:
    """``ast.parse``, and for a text it refuses, the tree of the same code with its newer constructs
    rewritten (see the module's doc). Raises the interpreter's own ``SyntaxError`` when that fails too."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(text, filename=path, mode=mode)
        except SyntaxError as error:
            original = error
        try:
            rewritten, trees = downlevel(text, mode)
            tree = ast.parse(rewritten, filename=path, mode=mode)
        except (NotUnderstood, SyntaxError, ValueError, RecursionError):
            raise original from None
    if trees:
        putback = _PutBack(trees)
        tree = putback.visit(tree)
        if putback.trees:  # a placeholder that did not come back as a name: the rewrite misread the text
            raise original
    return tree

