"""A position kept in a row (a sync cursor, a high-water mark) read without a lock, handed to the call that fetches
what comes after it, and moved past what came back, while the items fetched are copied in as rows.

The new position is no arithmetic on the old one (``cursor.position = page.next_position``), yet it is written from
a stale read all the same: two runners that read the same position fetch the same items and both copy them, and the
later write moves the mark over work done twice.  A copy that skips a row already there (``ignore_conflicts=True``,
``ON CONFLICT DO NOTHING``) is stored once however often it is made, and is left alone.
"""
from __future__ import annotations

import ast
import builtins
from typing import Set

from ...analysis.facts import FunctionNode, ModuleFacts, ancestors, walk
from ...analysis.handed import switched_on
from .flow import plain_name
from .loads import function_nodes, unwrap

#: Calls that copy rows in (Django's managers, SQLAlchemy's sessions, the DB-API), when handed fetched items.
_COPYING = frozenset({"bulk_create", "abulk_create", "add_all", "add", "create", "acreate", "bulk_save_objects",
                      "bulk_insert_mappings", "insert_many", "executemany", "execute"})
#: What makes an insert skip a row that is already there: copied twice, stored once.
_SKIPPING_KEYWORDS = frozenset({"ignore_conflicts", "update_conflicts"})
_SKIPPING_CALLS = frozenset({"on_conflict_do_nothing", "on_conflict_do_update", "on_conflict_ignore",
                             "on_duplicate_key_update"})


def advanced_past_fetch(value: ast.AST, statement: ast.AST, instance: str, field: str, function: FunctionNode,
                        facts: ModuleFacts) -> bool:
    """``instance.field = value`` sets the position from what a call handed ``instance.field`` returned (itself
    or through locals made of it), and the function copies the items that came back in as rows, one per item
    (a comprehension or a loop over them): a batch fetched after the position, not one record looked up by it."""
    if not facts.cached(f"position-handed:{id(function)}:{instance}:{field}", lambda _facts: any(
            isinstance(node, ast.Call) and _hands_position(node, instance, field)
            for node in function_nodes(function, facts))):
        return False  # (asked of every field set in a function that writes rows back: one walk per field)
    fetched = _fetched_names(statement, instance, field, function, facts)
    if not fetched or not _reads_any(value, fetched):
        return False
    batches = {name for node in function_nodes(function, facts) if isinstance(node, ast.Assign)
               and _iterates(node.value, fetched) for target in node.targets for name in _names(target)}
    return any(isinstance(node, ast.Call) and _copies_in(node, fetched, batches, function)
               for node in function_nodes(function, facts))


def _fetched_names(statement: ast.AST, instance: str, field: str, function: FunctionNode,
                   facts: ModuleFacts) -> Set[str]:
    """The local names bound, before ``statement``, to what a call handed ``instance.field`` returned, and to
    values made of those (``rows = [to_row(item) for item in items]``)."""
    names: Set[str] = set()
    for node in function_nodes(function, facts):
        if node is statement:
            break
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            value = unwrap(node.value)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            value, targets = unwrap(node.iter), [node.target]
        else:
            continue
        if _fetches_after(value, instance, field) or _reads_any(value, names):
            names.update(name for target in targets for name in _names(target))
    return names


def _fetches_after(value: ast.AST, instance: str, field: str) -> bool:
    """``fetch_changes(source, cursor.position)``, ``client.get(url, params={"after": mark.token}).json()``: a call
    of something other than a builtin handed the position as it is (an argument, or an item or a text part of one);
    not a value computed from the field (``(obj.to or "").split(",")`` takes an address list apart)."""
    return isinstance(unwrap(value), ast.Call) and any(
        isinstance(call, ast.Call) and _hands_position(call, instance, field) for call in walk(value))


def _hands_position(call: ast.Call, instance: str, field: str) -> bool:
    """``call`` (of something other than a builtin) is handed ``instance.field`` as it is."""
    return not (isinstance(call.func, ast.Name) and call.func.id in _BUILTINS) and any(
        _handed_as_is(argument, instance, field) for argument in [*call.args, *(k.value for k in call.keywords)])


_BUILTINS = frozenset(dir(builtins))
#: What an argument may wrap the position in and still hand it over as it is.
_HOLDING = (ast.Dict, ast.List, ast.Tuple, ast.Set, ast.JoinedStr, ast.FormattedValue, ast.Starred)


def _handed_as_is(argument: ast.AST, instance: str, field: str) -> bool:
    if isinstance(argument, ast.Attribute):
        return argument.attr == field and plain_name(argument.value) == instance
    if isinstance(argument, ast.Dict):
        return any(_handed_as_is(item, instance, field) for item in argument.values if item is not None)
    if isinstance(argument, _HOLDING):
        return any(_handed_as_is(item, instance, field) for item in ast.iter_child_nodes(argument))
    return False


def _copies_in(call: ast.Call, fetched: Set[str], batches: Set[str], function: FunctionNode) -> bool:
    """``bulk_create([Row(...) for item in page.items])``, ``add_all(rows)`` with ``rows`` made so, or ``add(Row(...))``
    in a ``for`` over the fetched items; not when the copies skip rows already there."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in _COPYING:
        return False
    arguments = [*call.args, *(k.value for k in call.keywords if k.arg not in _SKIPPING_KEYWORDS)]
    if not any(_iterates(argument, fetched) or _reads_any(argument, batches)
               or _reads_any(argument, fetched) and _in_loop_over(call, fetched, function) for argument in arguments):
        return False
    return not switched_on(call, *_SKIPPING_KEYWORDS) and not any(
        isinstance(n, ast.Attribute) and n.attr in _SKIPPING_CALLS for n in walk(call))


def _iterates(node: ast.AST, names: Set[str]) -> bool:
    """``node`` holds a comprehension over one of ``names`` (``[Row(...) for item in page["items"]]``)."""
    return any(isinstance(n, ast.comprehension) and _reads_any(n.iter, names) for n in walk(node))


def _in_loop_over(node: ast.AST, names: Set[str], function: FunctionNode) -> bool:
    for above in ancestors(node):
        if above is function:
            return False
        if isinstance(above, (ast.For, ast.AsyncFor)) and _reads_any(above.iter, names):
            return True
    return False


def _names(target: ast.AST) -> Set[str]:
    return {n.id for n in walk(target) if isinstance(n, ast.Name)}


def _reads_any(node: ast.AST, names: Set[str]) -> bool:
    return bool(names) and any(isinstance(n, ast.Name) and n.id in names for n in walk(node))
