"""How a Redis or cache call is spelled: its arguments, the words of a name, how its result is used.

Syntax only (reference/frameworks.md §5): which client a call goes to is ``project.redis_clients``' question.
"""
from __future__ import annotations

import ast
import re
from typing import Iterable, Optional

from .facts import ModuleFacts, ancestors, walk, walk_no_nested_functions
from .handles import Handle
from .names import dotted
from ..knowledge import redis_clients as known

# -- arguments ----------------------------------------------------------------------------------------


def has_spread(call: ast.Call) -> bool:
    """``*args`` or ``**kwargs``: which arguments are passed is not visible."""
    return any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)


def argument(call: ast.Call, arg: known.Arg, keyword: Optional[str] = None) -> Optional[ast.AST]:
    name = keyword or arg.keyword
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    if arg.position is not None and arg.position < len(call.args):
        return call.args[arg.position]
    return None


def is_none(node: Optional[ast.AST]) -> bool:
    return node is None or (isinstance(node, ast.Constant) and node.value is None)


def is_false(node: Optional[ast.AST]) -> bool:
    return node is None or (isinstance(node, ast.Constant) and node.value in (False, None, 0))


def key_argument(call: ast.Call, handle: Handle, arg: known.Arg) -> Optional[ast.AST]:
    keyword = known.CACHE_KEY_KEYWORD if handle.kind in (known.DJANGO_CACHE, known.CACHE, known.WRAPPER) else None
    return argument(call, arg, keyword)


def short(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def acts_for_owner(script: str, commands: Iterable[str]) -> bool:
    """A Lua script's text does one of ``commands`` (lower case) to its key only when the key holds the caller's
    token (``if redis.call('GET', KEYS[1]) == ARGV[1] then ... end``): it acts for the key's holder alone."""
    text = " ".join(script.lower().split()).replace('"', "'")
    return "argv[1]" in text and "'get'" in text and " then " in text and any(f"'{c}'" in text for c in commands)


_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


def words(text: str) -> Iterable[str]:
    return (w.lower() for w in _WORD.findall(text))


# -- how a result is used -----------------------------------------------------------------------------


def result_tested(call: ast.Call, facts: ModuleFacts) -> bool:
    """The call's result decides whether work runs: tested by ``if``/``while``, returned, or kept and tested."""
    node: ast.AST = call
    for above in ancestors(call):
        if isinstance(above, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            return node is above.test
        if isinstance(above, ast.Return):
            return True
        if isinstance(above, (ast.Assign, ast.AnnAssign)):
            targets = above.targets if isinstance(above, ast.Assign) else [above.target]
            # (kept in a local or on the instance, ``self._owned = bool(await r.setnx(...))``)
            return _names_tested({dotted(t) for t in targets if isinstance(t, (ast.Name, ast.Attribute))} - {None},
                                 call, facts)
        if not isinstance(above, ast.expr):
            return False
        node = above
    return False


def _names_tested(names: set, call: ast.Call, facts: ModuleFacts) -> bool:
    if not names:
        return False
    function = facts.enclosing_function(call)
    for node in walk_no_nested_functions(function if function is not None else facts.tree):
        if isinstance(node, (ast.If, ast.While)):
            tested = node.test
        elif isinstance(node, ast.Return) and node.value is not None:
            tested = node.value
        else:
            continue
        if any(isinstance(n, (ast.Name, ast.Attribute)) and dotted(n) in names for n in walk(tested)):
            return True
    return False
