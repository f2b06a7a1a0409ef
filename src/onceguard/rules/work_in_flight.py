"""Work in flight: a member put in process memory while work runs and taken out when it is done (``_running.add(
user)`` ... ``finally: _running.discard(user)``).  Such a marker keeps one process from starting the same work
twice, which is what it is for when the work stays in the process (a refresh of its own cache).  When the work
acts outside the process (rows written, files uploaded, messages sent) and request code refuses a second run
while the marker is there, another replica has no such marker and starts the same work again (OG608)."""
from __future__ import annotations

import ast
from typing import List, Optional

from ..analysis.facts import FunctionNode, ModuleFacts, ancestors, in_handler, walk
from ..project import process_state as state
from ..project.summaries import Evidence, summaries_for


def work_ended(found: state.Accesses, matcher: state.StateMatcher, stamped: bool, facts: ModuleFacts) -> bool:
    """A member is taken out again: a marker of work in flight in this process.  For entries stamped with the
    time they were seen, a loop over the state that drops entries (``for key, at in list(self._seen.items()):``
    … ``del self._seen[key]``) is their expiry, not the end of the work.  Neither is a loop that drops the
    oldest keys a queue of arrivals hands it (``_, old = self._order.popleft(); self._seen.discard(old)``), nor a
    removal only failure runs (``except: ledger.forget(key); raise``): the work did not happen, so it may be
    asked for again; nor emptying the whole container at once (``clear()``)."""
    for access in found.of_kind("unmark"):
        if stamped and state.in_loop_over_state(access, matcher):
            continue
        if _drops_oldest(access) or _empties_all(access) or _only_on_failure(access, facts):
            continue
        return True
    return False


def _empties_all(access: state.Access) -> bool:
    """``self._seen.clear()``: every entry dropped at once (a shutdown, a reset), not one piece of work ending
    under its own key."""
    node = access.node
    if isinstance(node, ast.Expr):
        node = node.value
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "clear"
            and not node.args and not node.keywords)


def _drops_oldest(access: state.Access) -> bool:
    """The removal sits in a ``while`` loop that takes the oldest entries off another queue (``popleft``)."""
    for above in ancestors(access.node):
        if above is access.function:
            return False
        if isinstance(above, ast.While):
            return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                       and node.func.attr in _OLDEST_TAKES for node in walk(above))
    return False


#: Methods that take the oldest entry off a queue or heap.
_OLDEST_TAKES = frozenset({"popleft", "heappop", "popitem"})


def _only_on_failure(access: state.Access, facts: ModuleFacts) -> bool:
    """The removal is a method of its own (``forget``) that every caller in the project calls from an ``except``
    handler (or from a helper that only such handlers call): it undoes the mark when the work could not be
    done."""
    function = access.function
    if function is None or facts.enclosing_class(function) is None or not _only_removes(function, access):
        return False
    return _called_only_on_failure(function, facts, 0)


def _only_removes(function: FunctionNode, access: state.Access) -> bool:
    """The method does nothing but the removal (under a lock of its own, perhaps): an undo its callers ask for.
    (Its callers are read only for such a method: reading them is dear, and a method that does more is work.)"""
    statements = list(function.body)
    while statements:
        statement = statements.pop()
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            statements.extend(statement.body)
        elif not (isinstance(statement, (ast.Expr, ast.Return)) and (isinstance(statement.value, ast.Constant)
                                                        or any(node is access.node for node in walk(statement)))):
            return False
    return True


def _called_only_on_failure(function: FunctionNode, facts: ModuleFacts, depth: int) -> bool:
    from ..project.reach import _method_callers_by_name
    from ..project.renamed_callers import project_callers

    # (a method called on an instance the caller's spelling does not name by its class: ``ledger.forget()``)
    if facts.context.cross_file:
        calls = project_callers(function, facts) or _method_callers_by_name(function, facts)
    else:  # (the one file read alone: a method's calls through a receiver, a function's by its name)
        spelled = ast.Attribute if facts.enclosing_class(function) is not None else ast.Name
        calls = [(call, facts) for call in facts.calls_named(function.name) if isinstance(call.func, spelled)]
    callers = [(call, where) for call, where in calls if where.enclosing_function(call) is not None]
    return bool(callers) and all(
        in_handler(call, where.enclosing_function(call))
        or depth < 1 and _called_only_on_failure(where.enclosing_function(call), where, depth + 1)
        for call, where in callers)


def guarded_work_outside(found: state.Accesses, facts: ModuleFacts) -> Optional[Evidence]:
    """The first plain effect outside the process of the work a marker holds in flight: the function that takes
    the marker out again when it is done (in a ``finally``, or after the work) does that work, or hands it on."""
    for access in found.of_kind("unmark"):
        function = access.function
        if function is None or _only_on_failure(access, facts):
            continue
        scopes = [function]
        if _only_removes(function, access):
            # (a helper that only takes the marker out: the work is its callers')
            scopes = [caller for caller in (facts.enclosing_function(call) for call in facts.calls_named(function.name))
                      if caller is not None and caller is not function]
        for scope in scopes:
            evidence = summaries_for(facts).effects(scope, facts).first_other
            if evidence is not None and evidence.plain:
                return evidence
    return None


def refuses_while_held(decision: state.Access) -> bool:
    """The test of the marker ends the request when the member is there: its branch returns or raises."""
    test = decision.node
    return isinstance(test, ast.If) and any(isinstance(statement, (ast.Return, ast.Raise)) for statement in test.body)


def live_counts(found: state.Accesses) -> List[state.Access]:
    """The increments of a count that other code decrements (``_online[room] += 1`` as a client joins, ``-= 1``
    as it leaves): a gauge of what is live in this process, when a function that neither counts in nor out
    reads it."""
    counted = found.of_kind(state.WRITE_COUNTER)
    increments = [a for a in counted if _steps(a, ast.Add)]
    decrements = [a for a in counted if _steps(a, ast.Sub)]
    if not increments or not decrements:
        return []
    writers = {id(a.function) for a in increments + decrements}
    if not any(a.function is not None and id(a.function) not in writers for a in found.of_kind("read")):
        return []
    return increments


def _steps(access: state.Access, op: type) -> bool:
    node = access.node
    return isinstance(node, ast.AugAssign) and isinstance(node.op, op)


def takes_out_again(record: state.Access, found: state.Accesses) -> bool:
    """The function that stores the entry also takes out the entry under the same key (``_fetchers[key] = n``
    ... ``finally: _fetchers.pop(key)``): bookkeeping of work in flight in this process, not a record for
    another request (an eviction of some other key, the oldest, is no such thing)."""
    key = _key_of(record.node)
    return key is not None and any(u.function is record.function and _key_of(u.node) == key
                                   for u in found.of_kind("unmark"))


def _key_of(node: ast.AST) -> Optional[str]:
    """The key expression an entry is stored or removed under, as a dump: ``d[k] = v``, ``del d[k]``,
    ``d.pop(k)``, ``d.discard(k)``."""
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        target = node.targets[0] if isinstance(node, ast.Assign) else node.target
        return ast.dump(target.slice) if isinstance(target, ast.Subscript) else None
    if isinstance(node, ast.Delete) and node.targets and isinstance(node.targets[0], ast.Subscript):
        return ast.dump(node.targets[0].slice)
    if isinstance(node, ast.Call) and node.args:
        return ast.dump(node.args[0])
    return None
