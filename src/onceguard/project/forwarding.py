"""Calls put behind a small helper: ``def _lock(c, key): return Lock(c, key, expire=60)`` called as
``_lock(conn, "export")`` is, to every rule, ``Lock(conn, "export", expire=60)``.

``forwarded(call, facts)`` gives that call, spelled at the helper's call site: the helper's parameters
replaced by the arguments it was given (a ``*parts`` parameter by the extra positional arguments, spread where
the helper spreads it).  Only a helper whose whole body returns one call qualifies (its docstring aside); a
helper that does more is the rule's own question.

The call made so mixes two modules: the arguments are the caller's, the rest is the helper's text (its own
functions and constants, named as its module imports them).  ``copied_from`` names the helper's module for a
node of it copied from the helper's text.
"""
from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from ..analysis.facts import PARENT, FunctionNode, ModuleFacts, parent, walk
from ..analysis.handed import parameter_defaults
from . import index as project
from .definitions import definition

_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
_MAX_HELPERS = 3


@dataclass(frozen=True)
class Forwarded:
    call: ast.Call  # the helper's call with its parameters replaced; placed at (and parented as) the outer call
    callee: str  # its qualified name, as the helper's module spells it
    helper: FunctionNode
    facts: ModuleFacts  # the helper's module


def forwarded(call: ast.Call, facts: ModuleFacts) -> Optional[Forwarded]:
    """The call ``call`` makes through helpers that only return a call (followed a few deep), or None."""
    found: Optional[Forwarded] = None
    current, where = call, facts
    for _ in range(_MAX_HELPERS):
        step = _one(current, where, call)
        if step is None:
            break
        found, current, where = step, step.call, step.facts
    return found


def callee_through(call: ast.Call, facts: ModuleFacts) -> str:
    """``facts.callee(call)``, or what a helper it runs forwards to."""
    through = forwarded(call, facts)
    return through.callee if through is not None else (facts.callee(call) or "")


def _one(call: ast.Call, facts: ModuleFacts, placed: ast.Call) -> Optional[Forwarded]:
    located = _helper(call, facts)
    if located is None:
        return None
    helper, where = located
    inner = _returned_call(helper)
    if inner is None:
        return None
    mapping = _bind(helper, call, where)
    if mapping is None:
        return None
    made = _Substitute(mapping).visit(_copy(inner))
    ast.copy_location(made, placed)
    made.end_lineno = getattr(placed, "end_lineno", None)
    made.end_col_offset = getattr(placed, "end_col_offset", None)
    given = {id(n) for value in mapping.values() for n in walk(value)}
    for node in walk(made):
        if id(node) not in given:
            setattr(node, WRITTEN_IN, where)
        for child in ast.iter_child_nodes(node):
            if not _is_mapped(child, mapping):
                setattr(child, PARENT, node)
    setattr(made, PARENT, parent(placed))
    return Forwarded(made, where.callee(made) or "", helper, where)


#: The attribute a node of a forwarded call copied from a helper's text holds: the helper's module.
WRITTEN_IN = "_og_written_in"


def copied_from(node: ast.AST) -> Optional[ModuleFacts]:
    """The helper's module, for a node of a forwarded call copied from the helper's text; None for any other node
    (an argument the caller wrote is the caller's)."""
    return getattr(node, WRITTEN_IN, None)


def _is_mapped(node: ast.AST, mapping: Dict[str, ast.AST]) -> bool:
    return any(node is value for value in mapping.values())


def _helper(call: ast.Call, facts: ModuleFacts):
    func = call.func
    if isinstance(func, ast.Name):
        local = [f for f in facts.functions_by_name.get(func.id, ())
                 if facts.enclosing_function(f) is None and facts.enclosing_class(f) is None
                 and parent(f) is facts.tree]
        if len(local) == 1:
            return local[0], facts
        if local or not facts.imports.is_imported(func.id) or not facts.context.cross_file:
            return None
    elif not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
              and facts.imports.is_imported(func.value.id) and facts.context.cross_file):
        return None  # (``keys.exclusive(...)`` after ``import app.keys as keys`` or ``from app import keys``)
    found = definition(facts.qualify(func) or "", facts, _may_be_helper)
    return found if found is not None and isinstance(found[0], _FUNCTION_TYPES) else None


def _may_be_helper(path: str, name: str) -> bool:
    """Whether the file can define ``name`` as a helper that only returns a call, asked of its text before
    the whole file is parsed: each top-level ``def name`` is parsed on its own, up to the next line that
    starts a top-level statement. A ``class name`` is no helper; a file with neither (a re-export) or a text
    this cannot cut (non-ASCII, a cut inside a string) is left to the full lookup."""
    try:
        stat = os.stat(path)
    except OSError:
        return True
    signature = (stat.st_mtime_ns, stat.st_size)
    known = _helper_texts.get(path)
    if known is None or known[0] != signature:
        known = _helper_texts[path] = (signature, {})
    if name not in known[1]:
        known[1][name] = _may_define_helper(project.read_bytes(path), name)
    return known[1][name]


def _may_define_helper(source: bytes, name: str) -> bool:
    if not source.isascii() or not name.isascii():
        return True
    word = name.encode("ascii")
    starts = list(_top_level_statements_of(source, b"def", word))
    if not starts:
        return next(_top_level_statements_of(source, b"class", word), None) is None
    for at in starts:
        if _line_above(source, at).startswith(b"@"):
            continue  # decorated: the name holds what the decorator returns
        end = _TOP_LEVEL_LINE.search(source, at + 1)
        try:
            tree = ast.parse(source[at:end.start() if end else len(source)])
        except (SyntaxError, ValueError):
            return True
        if tree.body and isinstance(tree.body[0], _FUNCTION_TYPES) and _returned_call(tree.body[0]) is not None:
            return True
    return False


def _top_level_statements_of(source: bytes, keyword: bytes, word: bytes):
    """Where the lines ``def word(`` / ``async def word(`` / ``class word`` start at column 0."""
    needle = keyword + b" " + word
    at = source.find(needle)
    while at != -1:
        after = source[at + len(needle):at + len(needle) + 1]
        start = source.rfind(b"\n", 0, at) + 1
        head = source[start:at]
        if not (after.isalnum() or after == b"_") and (not head or head == b"async "):
            yield start
        at = source.find(needle, at + 1)


def _line_above(source: bytes, at: int) -> bytes:
    """The nearest non-blank line above the line starting at ``at``."""
    end = at - 1
    while end > 0:
        start = source.rfind(b"\n", 0, end) + 1
        line = source[start:end].strip()
        if line:
            return line
        end = start - 1
    return b""


#: path -> (its size and time, name -> the answer): every module that calls a helper asks again.
_helper_texts: Dict[str, Tuple[Tuple[int, int], Dict[str, bool]]] = {}
project.on_clear(_helper_texts.clear)

#: A line that starts a top-level statement: not blank, not a comment, not a bracket closing a signature.
_TOP_LEVEL_LINE = re.compile(rb"^[^\s#)\]}]", re.M)


def only_statement(helper: FunctionNode) -> Optional[ast.stmt]:
    """The one statement an undecorated function's body holds, its docstring aside; None otherwise."""
    body = list(helper.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(
            body[0].value.value, str):
        body = body[1:]
    return body[0] if not helper.decorator_list and len(body) == 1 else None


def _returned_call(helper: FunctionNode) -> Optional[ast.Call]:
    """The one call the helper returns: ``return make(...)``, or ``made = make(...)`` then ``return made``."""
    statement = only_statement(helper)
    value = statement.value if isinstance(statement, ast.Return) else None
    if isinstance(value, ast.Call):
        return value
    body = [s for s in helper.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if helper.decorator_list or len(body) != 2:
        return None
    bound, returned = body
    if (isinstance(bound, ast.Assign) and len(bound.targets) == 1 and isinstance(bound.targets[0], ast.Name)
            and isinstance(bound.value, ast.Call) and isinstance(returned, ast.Return)
            and isinstance(returned.value, ast.Name) and returned.value.id == bound.targets[0].id):
        return bound.value
    return None


def _bind(helper: FunctionNode, call: ast.Call, where: Optional[ModuleFacts] = None) -> Optional[Dict[str, ast.AST]]:
    """Parameter name -> the argument (or default) it gets, a ``*parts`` parameter the tuple of the extra
    positional arguments; None when the call cannot be read so.  With the helper's module ``where``, a default
    is a copy marked as written there."""
    args = helper.args
    if args.kwarg is not None or args.posonlyargs:
        return None
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    positional = args.args
    if len(call.args) > len(positional) and args.vararg is None:
        return None
    mapping: Dict[str, ast.AST] = {}
    for param, value in zip(positional, call.args):
        mapping[param.arg] = value
    if args.vararg is not None:
        extra = ast.Tuple(elts=list(call.args[len(positional):]), ctx=ast.Load())
        mapping[args.vararg.arg] = ast.copy_location(extra, call)
    names = {a.arg for a in positional + args.kwonlyargs}
    for keyword in call.keywords:
        if keyword.arg not in names or keyword.arg in mapping:
            return None
        mapping[keyword.arg] = keyword.value
    defaults = parameter_defaults(helper)
    for name in names:
        if name not in mapping:
            if name not in defaults:
                return None
            if where is None:
                mapping[name] = defaults[name]
                continue
            # (a copy: the default is the helper's text, placed in the call made; its parent stays the def's)
            mapping[name] = _copy(defaults[name])
            setattr(mapping[name], PARENT, parent(defaults[name]))
            for node in walk(mapping[name]):
                setattr(node, WRITTEN_IN, where)
                for child in ast.iter_child_nodes(node):
                    setattr(child, PARENT, node)
    return mapping


def _copy(node):
    """A copy of the subtree: its fields and positions only (``copy.deepcopy`` would follow the parent links
    into the whole module)."""
    if isinstance(node, list):
        return [_copy(item) for item in node]
    if not isinstance(node, ast.AST):
        return node
    made = type(node)(**{name: _copy(getattr(node, name)) for name in node._fields if hasattr(node, name)})
    for name in node._attributes:
        if hasattr(node, name):
            setattr(made, name, getattr(node, name))
    return made


#: The public name of the subtree copy, for the other readers of forwarding helpers.
copy_tree = _copy


class _Substitute(ast.NodeTransformer):
    def __init__(self, mapping: Dict[str, ast.AST]) -> None:
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and node.id in self.mapping:
            return self.mapping[node.id]
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        # ``make(name, *parts)`` with ``parts`` the extra arguments: ``make(name, a, b)``, as the caller wrote them
        spread = []
        for argument in node.args:
            value = argument.value if isinstance(argument, ast.Starred) else None
            if isinstance(value, ast.Tuple) and any(value is given for given in self.mapping.values()):
                spread.extend(value.elts)
            else:
                spread.append(argument)
        node.args = spread
        return node
