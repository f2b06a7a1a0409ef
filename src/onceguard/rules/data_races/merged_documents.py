"""A document read with SQL and merged in Python: the value an UPDATE sends is the read with other keys laid over it.

``row = cur.fetchone()`` … ``doc = {**row[0], **patch}`` (or ``row[0] | patch``, a copy of it changed in place, or a
project def that does either and returns the result: ``combined = overlay(row[0], patch)``) … ``UPDATE t SET doc =
%s``: the whole document goes back, so a key another request set since the read is lost.  Unlike arithmetic, the
database cannot be told "the same change again"; the value itself is what is written.
"""
from __future__ import annotations

import ast
from typing import Optional, Set

from ...analysis.facts import FunctionNode, ModuleFacts, walk
from ...analysis.handed import argument_for, parameter_names
from ...project.definitions import called_def
from .flow import _COPY_CALLS, _IN_PLACE, Flow, _local_value_before, _merged, _subscript_root
from .loads import unwrap


def merged_from_read(value: ast.AST, flow: Flow, before: ast.AST, function: FunctionNode,
                     facts: ModuleFacts) -> bool:
    """Whether ``value`` (a parameter sent at ``before``) is a merge of what ``flow`` reads: built with ``{**read,
    ...}`` / ``read | other`` here or in a local, or returned by a project def that merges the read it is handed."""
    for candidate in (value, _serialised(value)):
        if candidate is None:
            continue
        candidate = unwrap(candidate)
        if isinstance(candidate, ast.Name) and candidate.id in flow.tainted:
            if candidate.id in flow.merged:
                return True
            bound = _local_value_before(candidate, before, function, facts)
            candidate = unwrap(bound) if bound is not None else candidate
        if _merged(candidate, flow.reads_here):
            return True
        if isinstance(candidate, ast.Call) and _merging_call(candidate, flow, facts):
            return True
    return False


def _serialised(value: ast.AST) -> Optional[ast.AST]:
    """The one argument of a wrapper the value is sent through (``Json(doc)``, ``json.dumps(doc)``)."""
    value = unwrap(value)
    if isinstance(value, ast.Call) and len(value.args) == 1:
        return value.args[0]
    return None


def _merging_call(call: ast.Call, flow: Flow, facts: ModuleFacts) -> bool:
    """``overlay(row[0], patch)``: a project def handed the read, whose every return is a merge of it."""
    if not any(flow.reads(argument) for argument in [*call.args, *(k.value for k in call.keywords)]):
        return False
    located = called_def(call, facts)
    if located is None:
        return False
    helper, _ = located
    for parameter in parameter_names(helper, receiver=False):
        handed = argument_for(call, helper, parameter)
        if handed is not None and flow.reads(handed) and returns_merge_of(helper, parameter):
            return True
    return False


def returns_merge_of(function: FunctionNode, parameter: str) -> bool:
    """Every ``return`` of ``function`` gives ``parameter`` with more keys laid over it: ``{**p, ...}``,
    ``p | other``, or a copy of ``p`` (``dict(p or {})``, ``p.copy()``, ``{**p}``) changed in place before it."""
    returns = [node for node in walk(function) if isinstance(node, ast.Return) and node.value is not None]
    if not returns:
        return False
    copies: Set[str] = set()
    changed: Set[str] = set()
    for node in walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and _copy_of(node.value, parameter):
            copies.add(node.targets[0].id)
    for node in walk(function):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                root = _subscript_root(target) if isinstance(target, ast.Subscript) else None
                if isinstance(root, ast.Name) and root.id in copies:
                    changed.add(root.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _IN_PLACE \
                and isinstance(node.func.value, ast.Name) and node.func.value.id in copies:
            changed.add(node.func.value.id)
    is_parameter = lambda n: isinstance(n, ast.Name) and n.id == parameter  # noqa: E731
    return all(_merged(r.value, is_parameter) or (isinstance(r.value, ast.Name) and r.value.id in changed)
               for r in returns)


def _copy_of(value: ast.AST, parameter: str) -> bool:
    """``dict(p)``, ``dict(p or {})``, ``p.copy()``, ``copy.deepcopy(p)``, ``{**p}``: a new dict holding ``p``."""
    value = unwrap(value)
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or) and value.values:
        return _copy_of(value.values[0], parameter)
    if isinstance(value, ast.Name):
        return value.id == parameter
    if isinstance(value, ast.Call):
        func = value.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name in _COPY_CALLS and len(value.args) == 1:
            return _copy_of(value.args[0], parameter)
        if isinstance(func, ast.Attribute) and func.attr == "copy" and not value.args:
            return _copy_of(func.value, parameter)
        return False
    if isinstance(value, ast.Dict) and len(value.keys) == 1 and value.keys[0] is None:
        return _copy_of(value.values[0], parameter)
    return False
