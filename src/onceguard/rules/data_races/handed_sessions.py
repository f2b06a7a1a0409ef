"""A row changed where it is loaded, written back where the session is committed.

``def spend(session, account_id, cost): row = session.get(Account, account_id); row.credits = row.credits - cost``
leaves the commit to its caller: the route that hands in its session and calls ``session.commit()`` afterwards
stores the value computed from the stale read. The helper alone shows no write-back, and the caller shows no
change; the lost update is the two together, so it is read through the session the helper is handed.
"""
from __future__ import annotations

import ast
from typing import Iterator, List, Optional, Tuple

from ...analysis.facts import FunctionNode, ModuleFacts
from ...analysis.handed import argument_for
from ...analysis.names import dotted
from ...knowledge import orm
from ...model import Related
from ...project.fixed_arguments import callers_of
from .changes import Change, instance_changes
from .loads import Loaded, _instance_bindings, _loader_before, function_nodes, later, unwrap

#: Calls through which a session loads a row (``session.get(M, pk)``, ``session.scalar(select(M)...)``).
_LOADS = ("get", "scalar", "scalars", "execute", "query", "first", "one", "one_or_none", "scalar_one")


def changed_for_callers(facts: ModuleFacts) -> Iterator[Tuple[FunctionNode, Change, Loaded, Related]]:
    """(function, change, its loader, where a caller commits) for each column a function changes from its own
    value on a row it loaded through a session it was handed, and does not write back itself, when a caller
    commits (or flushes) that session after the call."""
    candidates = {}
    for call in facts.calls_named(*_LOADS):
        function = facts.enclosing_function(call)
        if function is not None and isinstance(call.func, ast.Attribute):
            candidates.setdefault(id(function), function)
    for function in candidates.values():
        parameters = {a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)}
        if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in orm.SA_FLUSH
               for n in function_nodes(function, facts)):
            continue  # it commits itself: the instance check reads it
        bindings = None
        for change in instance_changes(function, facts):
            if change.kind == "in place":
                continue
            if bindings is None:
                bindings = _instance_bindings(function, facts)
            loaded = _loader_before(bindings.get(change.instance, []), change.back)
            if loaded is None or loaded.framework != "sqlalchemy" or loaded.locked or loaded.session not in parameters:
                continue
            commit = _caller_commit(function, loaded.session, facts)
            if commit is not None:
                yield function, change, loaded, commit
                break  # one finding per function: its first changed column


def _caller_commit(function: FunctionNode, session: str, facts: ModuleFacts) -> Optional[Related]:
    """Where the first caller that hands in its own session commits or flushes it after the call."""
    for call, other in callers_of(function, facts):
        caller = other.enclosing_function(call)
        handed = argument_for(call, function, session)
        spelled = dotted(handed) if handed is not None else None
        if caller is None or spelled is None or other.context.is_test:
            continue
        for node in function_nodes(caller, other):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in orm.SA_FLUSH \
                    and not node.args and later(node, call) and dotted(unwrap(node.func.value)) == spelled:
                return Related(other.context.path, node.lineno, node.col_offset + 1,
                               f"`{caller.name}` commits the session it handed in here")
    return None


__all__: List[str] = ["changed_for_callers"]
