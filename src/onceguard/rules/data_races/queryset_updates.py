"""OG301 for Django writes that send a value Python computed from an earlier read of the same model.

``row = Usage.objects.filter(key=k).first()`` … ``hits = row.hits + 1`` …
``Usage.objects.filter(key=k).update(hits=hits)``
(or ``update_or_create(..., defaults={"hits": hits})``): the statement writes a number the function computed
from what it read, not ``F("hits") + 1``. Two replicas that read the same value both write value + 1, and one
increment is lost. A read that locks the row (``select_for_update()``) serialises the two.
"""
from __future__ import annotations

import ast
from typing import Dict, Iterator, List, Tuple

from ...analysis.facts import FunctionNode, ModuleFacts, parent
from ...knowledge import orm
from .flow import Flow
from .loads import django_queryset, function_nodes, later, unwrap

#: QuerySet methods that write the keyword values they are given (``defaults=`` for the *_or_create ones).
_WRITES = ("update", "aupdate", "update_or_create", "aupdate_or_create")


def queryset_writes(facts: ModuleFacts) -> Iterator[Tuple[ast.Call, str, str, ast.Call]]:
    """(write, model, column, read) for each Django queryset write whose value for ``column`` is arithmetic on
    a value an earlier unlocked read of the same model in the function returned."""
    for call in facts.calls_named(*_WRITES):
        queryset = django_queryset(call)
        function = facts.enclosing_function(call)
        if queryset is None or function is None:
            continue
        model, links = queryset
        if any(name == orm.DJANGO_ROW_LOCK for name, _ in links):
            continue
        values = _written_values(call)
        if not values:
            continue
        reads = _earlier_reads(model, call, function, facts)
        if not reads:
            continue
        flow = Flow(function, facts, lambda n: id(n) in reads, at=call)
        wanted = _lookup(call, links)
        # (the row read must be the row written: a parent's depth read to set a child's is no lost update)
        same = [read for read in reads.values() if _lookup(read, django_queryset(read)[1]) == wanted
                or _by_the_read_row(wanted, flow)]
        if not same:
            continue
        for column, value in values:
            if flow.arithmetic(value) and reads_column(column, flow, function, facts, value, call):
                yield call, model, column, min(same, key=lambda read: (read.lineno, read.col_offset))
                break


def reads_column(column: str, flow: Flow, function: FunctionNode, facts: ModuleFacts, value: ast.AST,
                 at: ast.AST) -> bool:
    """The value written is arithmetic on ``column`` of what the function loaded (``row.hits + 1``, through
    locals too): that column's own value changed, not a value built from another field (a path from an id)."""
    def reads_it(node: ast.AST) -> bool:
        return ((isinstance(node, ast.Attribute) and node.attr == column)
                or (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
                    and node.slice.value == column)) and isinstance(node.value, ast.Name) \
            and node.value.id in flow.tainted

    return Flow(function, facts, reads_it, at=at).arithmetic(value)


def _lookup(call: ast.Call, links) -> Dict[str, str]:
    """The row a query names: the keywords of its ``filter``/``get`` calls (and of an ``*_or_create`` write's
    own call, but its ``defaults``), as source."""
    found: Dict[str, str] = {}
    for name, link in links:
        if isinstance(link, ast.Call) and name in _LOOKUPS:
            found.update((k.arg, ast.unparse(k.value)) for k in link.keywords
                         if k.arg and k.arg not in ("defaults", "create_defaults"))
    return found


def _by_the_read_row(lookup: Dict[str, str], flow: Flow) -> bool:
    """``filter(pk=row.pk)`` with ``row`` what the read returned: the row read, by its key."""
    return len(lookup) == 1 and any(value.split(".")[0] in flow.tainted and value.endswith((".pk", ".id"))
                                    for value in lookup.values())


#: QuerySet calls whose keywords say which rows they are about.
_LOOKUPS = frozenset({"filter", "get", "aget", "update_or_create", "aupdate_or_create", "get_or_create",
                      "aget_or_create"})


def _written_values(call: ast.Call) -> List[Tuple[str, ast.AST]]:
    """(column, value) the write sends: its keywords for ``update``, the ``defaults`` dict's entries for
    ``update_or_create``."""
    name = call.func.attr if isinstance(call.func, ast.Attribute) else ""
    if name.endswith("update"):
        return [(k.arg, k.value) for k in call.keywords if k.arg]
    defaults = next((k.value for k in call.keywords if k.arg == "defaults"), None)
    if not isinstance(defaults, ast.Dict):
        return []
    return [(key.value, value) for key, value in zip(defaults.keys, defaults.values)
            if isinstance(key, ast.Constant) and isinstance(key.value, str)]


def _earlier_reads(model: str, write: ast.Call, function: FunctionNode, facts: ModuleFacts) -> Dict[int, ast.Call]:
    """Loads of ``model`` before ``write`` in ``function`` that take no row lock: id -> the load."""
    found: Dict[int, ast.Call] = {}
    for node in function_nodes(function, facts):
        if not isinstance(node, ast.Call) or not later(write, node) or node is write:
            continue
        queryset = django_queryset(unwrap(node))
        if queryset is None or queryset[0] != model or not queryset[1]:
            continue
        names = [name for name, _ in queryset[1]]
        if orm.DJANGO_ROW_LOCK in names or names[-1] in _WRITES:
            continue
        if ends_chain(node):
            found[id(node)] = node
    return found


def ends_chain(call: ast.AST) -> bool:
    """No attribute of ``call`` is taken: it is the end of its chain (``.first()`` of
    ``filter(...).only(...).first()``), whatever is done with its result."""
    above = parent(call)
    return not (isinstance(above, ast.Attribute) and above.value is call)
