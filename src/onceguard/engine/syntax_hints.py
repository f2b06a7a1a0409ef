"""Why a file that does not parse may still be fine: it needs a newer Python, it is Python 2, or it is not
Python at all but a template named ``.py``."""
from __future__ import annotations

import re
import sys
from typing import Optional

# (minimum version, pattern on the failing line, what the construct is)
_NEWER_SYNTAX = (
    ((3, 12), re.compile(r"^\s*type\s+\w+(\[.*\])?\s*="), "a `type` alias statement"),
    ((3, 12), re.compile(r"^\s*(async\s+)?def\s+\w+\s*\["), "generic function syntax"),
    ((3, 12), re.compile(r"^\s*class\s+\w+\s*\["), "generic class syntax"),
    # ``except A, B:`` (PEP 758) names classes; Python 2's ``except ValueError, e:`` binds a variable.
    ((3, 14), re.compile(r"^\s*except\*?\s+[\w.]+(\s*,\s*[A-Z][\w.]*)+\s*:"),
     "`except` with several types and no brackets"),
    ((3, 11), re.compile(r"^\s*except\s*\*"), "`except*`"),
    ((3, 10), re.compile(r"^\s*match\s+.+:\s*$"), "a `match` statement"),
)
_PYTHON2 = (
    re.compile(r"^\s*print\s+[^(=\s]"),
    re.compile(r"^\s*exec\s+[\"']"),
    re.compile(r"^\s*except\s+\w+\s*,\s*\w+\s*:"),
    re.compile(r"\b0[0-7]+L?\b|\b\d+L\b"),
    re.compile(r"^\s*raise\s+\w+\s*,"),
)


def explain_syntax_error(error: SyntaxError, text: Optional[str]) -> Optional[str]:
    line = error.text or ""
    if not line and text and error.lineno:
        lines = text.splitlines()
        if 0 < error.lineno <= len(lines):
            line = lines[error.lineno - 1]
    running = sys.version_info[:2]
    for version, pattern, what in _NEWER_SYNTAX:
        if running < version and pattern.search(line):
            return (f"{what} needs Python {version[0]}.{version[1]} or newer "
                    f"(running {running[0]}.{running[1]})")
    if running < (3, 12) and (error.msg or "").startswith("f-string"):
        return (f"an f-string that needs Python 3.12 or newer (running {running[0]}.{running[1]}) "
                "or one that no version reads")
    if "Missing parentheses in call to" in (error.msg or "") or any(p.search(line) for p in _PYTHON2):
        return "this looks like Python 2 code"
    return None


# Template markup (Jinja, Django templates, Cookiecutter): a statement or comment tag, or an expression with a
# filter or a name. ``{%`` and ``{#...#}`` never begin Python code; ``{{ x }}`` is a valid (if odd) Python
# expression, so it counts only in a file that also holds a statement or comment tag on a line of its own.
_TEMPLATE_TAG = re.compile(r"\{%-?.*?-?%\}|\{#.*?#\}")
_TEMPLATE_EXPRESSION = re.compile(r"\{\{-?.*?-?\}\}")
_TEMPLATE_TAG_LINE = re.compile(r"^\s*(\{%-?.*?-?%\}|\{#.*?#\})\s*$")
#: Quoted text on a line (what a template tag or a Python string may hold), and a Python comment (a ``#``
#: that neither opens nor closes a ``{#...#}`` comment tag): taken off before looking.
_QUOTED = re.compile(r"\"[^\"\n]*\"|'[^'\n]*'")
_PYTHON_COMMENT = re.compile(r"(?<!\{)#(?!\})\s.*$|(?<!\{)#$")
_TRIPLE_QUOTES = re.compile(r'"""|\'\'\'')
#: A tag this many lines above the failing line still counts: a tag inside brackets makes the tokenizer
#: fail a line or two later (at the bracket the tag left unmatched).
_TEMPLATE_WINDOW = 3


def is_template(error: BaseException, text: Optional[str]) -> bool:
    """A file whose parse fails where template markup stands (on the failing line, or a tag just above it)
    is a template that happens to end in ``.py`` (a code generator's input), not Python with a mistake:
    nothing to report about it.  Markup inside a Python string or comment does not count."""
    if not isinstance(error, SyntaxError) or not text or not error.lineno:
        return False
    lines = text.splitlines()
    if not 0 < error.lineno <= len(lines):
        return False
    code = _code_lines(lines)
    if not any(_TEMPLATE_TAG_LINE.match(line) for line in code.values()):
        # No statement or comment tag on a line of its own: only a tag on the failing line itself decides.
        line = code.get(error.lineno - 1, "")
        return bool(_TEMPLATE_TAG.search(line))
    first = error.lineno - 1
    window = [first]
    index = first - 1
    while index >= 0 and len(window) <= _TEMPLATE_WINDOW:
        if lines[index].strip():
            window.append(index)
        index -= 1
    return any(_TEMPLATE_TAG.search(code.get(i, "")) or _TEMPLATE_EXPRESSION.search(code.get(i, ""))
               for i in window)


def _code_lines(lines) -> dict:
    """Line index -> the line without its quoted text and Python comment, for lines outside triple-quoted
    strings (a template kept in a Python string is not markup of the file)."""
    code = {}
    inside = False
    for index, line in enumerate(lines):
        quotes = len(_TRIPLE_QUOTES.findall(line))
        if not inside and not quotes:
            code[index] = _PYTHON_COMMENT.sub("", _QUOTED.sub("", line))
        if quotes % 2:
            inside = not inside
    return code
