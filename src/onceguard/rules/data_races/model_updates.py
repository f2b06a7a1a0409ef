"""OG301 for a model class's own update statement (Peewee, Piccolo): a column read by an earlier select of the
same model, changed in Python, and written by ``Model.update(...)``.

``option = await Option.select(Option.votes).where(Option.id == oid).first()`` …
``await Option.update({Option.votes: option["votes"] + 1}).where(Option.id == oid)``: the statement writes the
number Python computed, not ``Option.votes + 1``. Two replicas that read the same value both write value + 1.
The same row is the one both ``where`` clauses name by the same value; a read that locks (``for_update()``)
serialises the two.
"""
from __future__ import annotations

import ast
from typing import Iterator, List, Optional, Set, Tuple

from ...analysis.facts import ModuleFacts, chain_top, walk
from .flow import Flow
from .loads import chain, function_nodes, later
from .queryset_updates import ends_chain, reads_column

#: How a model class starts a query of its rows, and what locks the rows it reads.
_QUERIES = frozenset({"select", "get", "get_or_none", "objects", "filter"})
_LOCKS = frozenset({"for_update", "select_for_update", "lock_rows"})
_FILTERS = frozenset({"where", "filter", "get", "get_or_none"})


def model_update_write_backs(facts: ModuleFacts) -> Iterator[Tuple[ast.Call, str, str, ast.Call]]:
    """(update, model, column, read) for each ``Model.update(...)`` whose value for a column is arithmetic on
    what an earlier unlocked select of the same model's same row returned."""
    for call in facts.calls_named("update"):
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id[:1].isupper()):
            continue
        function = facts.enclosing_function(call)
        if function is None:
            continue
        model = func.value.id
        values = _written(call, model)
        if not values:
            continue
        row = _compared_values(chain_top(call))
        reads = [node for node in function_nodes(function, facts) if isinstance(node, ast.Call)
                 and later(call, node) and _reads_model(node, model) and row & _compared_values(node)]
        if not reads or not row:
            continue
        read_ids = {id(read) for read in reads}
        flow = Flow(function, facts, lambda n: id(n) in read_ids, at=call)
        for column, value in values:
            if flow.arithmetic(value) and reads_column(column, flow, function, facts, value, call):
                yield call, model, column, reads[0]
                break


def _written(call: ast.Call, model: str) -> List[Tuple[str, ast.AST]]:
    """(column, value) of ``update({Model.col: value})`` or ``update(col=value)``."""
    found = [(k.arg, k.value) for k in call.keywords if k.arg]
    for argument in call.args:
        if isinstance(argument, ast.Dict):
            found += [(key.attr, value) for key, value in zip(argument.keys, argument.values)
                      if isinstance(key, ast.Attribute) and isinstance(key.value, ast.Name) and key.value.id == model]
    return found


def _reads_model(node: ast.Call, model: str) -> bool:
    """A query of ``model``'s rows that takes no row lock, whole (the outermost call of its chain)."""
    if not ends_chain(node):
        return False
    head, links = chain(node)
    names = [name for name, _ in links]
    return isinstance(head, ast.Name) and head.id == model and bool(names) and names[0] in _QUERIES \
        and "update" not in names and not _LOCKS & set(names)


def _compared_values(query: Optional[ast.AST]) -> Set[str]:
    """The values a query's filters compare a column with (``Option.id == oid`` -> ``oid``), as source."""
    found: Set[str] = set()
    for node in walk(query) if query is not None else ():
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _FILTERS:
            for part in (n for argument in node.args for n in walk(argument)):
                if isinstance(part, ast.Compare) and len(part.ops) == 1 and isinstance(part.ops[0], ast.Eq):
                    found.add(ast.unparse(part.comparators[0]))
            found.update(ast.unparse(k.value) for k in node.keywords if k.arg)
    return found
