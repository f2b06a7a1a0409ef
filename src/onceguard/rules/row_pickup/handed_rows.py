"""Rows an ORM pickup hands one by one to a function of the project that moves them out of their state.

``batch = await repo.next_batch(session, 20)`` … ``for packet in batch: tg.create_task(send_packet(packet))``,
where ``send_packet`` (or a store helper it calls: ``repo.mark_sent(session, packet.id, ...)``) sets the column
the pickup selected by (``update(SigningPacket).where(...).values(status="sent")``, ``filter(pk=...).update(
status=...)``, ``packet.status = "sent"``): the mark is the pickup's write, made by the code the row was handed
to, so two replicas polling at once both hand on the same rows.
"""
from __future__ import annotations

import ast
from typing import List, Optional, Set

from ...analysis.facts import FunctionNode, ModuleFacts, walk, walk_no_nested_functions
from ...analysis.names import dotted
from ..data_races import function_nodes, later, names_in
from .selection import Pickup, _row_walk

#: How many project calls deep the mark is looked for (the step the row is handed to, the store helper).
_DEPTH = 2


def hands_rows_on(function: FunctionNode) -> bool:
    """A ``for`` loop of ``function`` calls something with its loop variable: rows may be handed on (the cheap
    question asked before a pickup is looked for)."""
    for node in walk_no_nested_functions(function):
        if isinstance(node, (ast.For, ast.AsyncFor)):
            targets = {n.id for n in walk(node.target) if isinstance(n, ast.Name)}
            if any(isinstance(call, ast.Call) and names_in(call) & targets
                   for statement in node.body for call in walk(statement)):
                return True
    return False


def handed_row_write(pickup: Pickup, function: FunctionNode, facts: ModuleFacts) -> Optional[ast.Call]:
    """The call handing a picked row (or its id) to a project function that moves rows of the picked model
    out of the state the pickup selected by."""
    from ...project.summaries import resolve
    from .moved_rows import moves_picked_rows

    if pickup.loader is not None and moves_picked_rows(*pickup.loader):
        return None  # the loader marks them itself: the pickup is its to report, once
    if _run_once(function, facts):
        return None  # one scheduling process runs it (or the job that calls it): one pickup at a time
    rows = _row_walk(pickup, function, facts)[1]
    model = pickup.model.rsplit(".", 1)[-1]
    column = pickup.column.split("__", 1)[0]
    marking: List[ast.Call] = []
    handed = []
    for node in function_nodes(function, facts):
        if not (isinstance(node, ast.Call) and later(node, pickup.node)):
            continue
        arguments = [*node.args, *(k.value for k in node.keywords)]
        if not any(names_in(argument) & rows for argument in arguments):
            continue
        moves = False
        for target, target_facts in resolve(node, facts, function, by_name=False):
            if _moves_state(target, target_facts, model, column, _DEPTH, set()):
                if _works(target, target_facts):
                    return node
                moves = True
        (marking if moves else handed).append(node)
    # (``tg.create_task(mark(row))`` runs the mark: no work of its own)
    handed = [call for call in handed if not any(inner is mark for mark in marking for inner in walk(call))]
    if marking and any(_does_work(call, function, facts) for call in handed):
        # ``store.mark_running(job)`` only persists the new state, and the work follows here with the row
        # (``upload(job, body)``): the mark is still the pickup's write, the duplicate work this function's
        return marking[0]
    return None


def _does_work(call: ast.Call, function: FunctionNode, facts: ModuleFacts) -> bool:
    """A call handed the row that acts outside the process (or whose effect the analysis cannot tell)."""
    from ...project.claim_syntax import is_log_call
    from ...project.summaries import summaries_for

    return not is_log_call(call) and bool(summaries_for(facts).call_effects(call, function, facts).other)


#: Calls that only persist what the session holds: a function whose every effect is one of them moves the row's
#: state and does no work two replicas would both do (setting the same terminal state twice is harmless).
_PERSISTING = frozenset({"add", "add_all", "flush", "commit", "refresh", "merge", "save", "execute", "exec",
                         "update", "bulk_update"})


def _works(function: FunctionNode, facts: ModuleFacts) -> bool:
    """The function the row is handed to does work beyond persisting the row (a call to another service, a
    message, something the analysis cannot follow)."""
    from ...project.summaries import summaries_for

    effects = summaries_for(facts).effects(function, facts)
    return any(not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and call.func.attr in _PERSISTING) for call in [*effects.other, *effects.own])


def _moves_state(function: FunctionNode, facts: ModuleFacts, model: str, column: str, depth: int,
                 seen: Set[int]) -> bool:
    from ...project.summaries import resolve

    if id(function) in seen:
        return False
    seen.add(id(function))
    for node in walk_no_nested_functions(function):
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Attribute) and t.attr == column for t in targets):
                return True  # ``packet.status = "sent"`` (persisted by the session or the save that follows)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("values", "update") \
                and any(k.arg == column for k in node.keywords) and _names_model(node.func.value, model):
            return True  # ``update(Packet).where(...).values(status=...)``, ``Packet.objects.filter(...).update(...)``
    if depth <= 0:
        return False
    return any(_moves_state(target, target_facts, model, column, depth - 1, seen)
               for node in walk_no_nested_functions(function) if isinstance(node, ast.Call)
               for target, target_facts in resolve(node, facts, function, by_name=False))


def _names_model(chain: ast.AST, model: str) -> bool:
    """The statement or queryset ``chain`` is built on ``model`` (``update(Packet).where(...)``,
    ``Packet.objects.filter(...)``)."""
    for node in walk(chain):
        if isinstance(node, ast.Call) and (dotted(node.func) or "").rsplit(".", 1)[-1] == "update" and node.args \
                and (dotted(node.args[0]) or "").rsplit(".", 1)[-1] == model:
            return True
        if isinstance(node, ast.Attribute) and node.attr == "objects" and (dotted(node.value) or "").rsplit(".", 1)[-1] == model:
            return True
    return False


def _run_once(function: FunctionNode, facts: ModuleFacts, depth: int = 3) -> bool:
    """``function`` is a job one scheduling process runs (a leader's scheduler, a scheduler only one process
    role starts), or every caller of it in the project, ``depth`` calls up, is such a job."""
    from ...project.renamed_callers import project_callers
    from ...project.scheduled.discovery import scheduled_once

    if scheduled_once(function, facts):
        return True
    if depth <= 0:
        return False
    callers = [(other.enclosing_function(call), other) for call, other in project_callers(function, facts)]
    return bool(callers) and all(caller is not None and caller is not function and _run_once(caller, other, depth - 1)
                                 for caller, other in callers)
