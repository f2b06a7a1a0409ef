"""Rows that leave the function that selected them, and functions that move the rows they pick.

- ``hands_back``: a loader's SELECT whose rows a ``return`` gives its callers;
- ``helper_writes``: the UPDATEs and DELETEs behind the project functions a function calls after a SELECT;
- ``picked_and_written_after``: a SELECT by state, then a write of its table (its own, or a helper's);
- ``moves_picked_rows`` / ``picks_rows``: a function picks rows by their state and moves them out of it (asked
  by OG201 too: the work on such rows is a consumer's, judged at the pickup).
"""

import ast
from typing import List, Optional, Set, Tuple

from ...analysis.executed_sql import ExecutedSql
from ...analysis.facts import FunctionNode, ModuleFacts, walk
from ...analysis.names import dotted
from ...analysis.sql import parse_statements, updates_tested_state
from ..data_races import _sql_by_function, function_nodes, later, names_in, target_names, unwrap
from ...project.declared_types import ClassRef
from ...project.queue_handoffs import consumers, queue_put
from .selection import _contains, _functions_writing_rows, _pickups, may_pick_by_state, sql_pickup


def hands_back(select: ExecutedSql, function: FunctionNode) -> bool:
    """A ``return`` (or a ``yield``) of ``function`` gives what ``select`` read: the call itself, a fetch on its
    cursor, or a name bound to either, alone or inside what it builds (``yield Batch(cur, cur.fetchall())``)."""
    receiver = dotted(select.receiver) if select.receiver is not None else None

    def reads(expr: ast.AST) -> bool:
        return any(n is select.call or (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                                        and receiver is not None and dotted(n.func.value) == receiver)
                   for n in walk(expr))

    holding: Set[str] = set()
    for node in walk(function):
        if isinstance(node, ast.Assign) and reads(node.value):
            holding.update(n for t in node.targets for n in target_names(t))
    holding |= _gathered_from(holding, function)
    for node in walk(function):
        # a ``yield`` hands them over as well: to the ``with`` block of a context manager, a caller's ``for``
        if isinstance(node, (ast.Return, ast.Yield)) and node.value is not None \
                and (reads(node.value) or names_in(node.value) & holding):
            return True
    return False


#: Methods that put a value into a container (``digests.setdefault(user, Digest(row))``, ``ids.append(row[0])``).
_FILLING_METHODS = frozenset({"append", "appendleft", "extend", "add", "insert", "setdefault", "update"})


def _gathered_from(rows: Set[str], function: FunctionNode) -> Set[str]:
    """Containers ``function`` fills, in a loop over ``rows``, with what each row holds (rows grouped per user:
    ``for row in rows: by_user.setdefault(row["user"], Digest(row["email"]))``): handing them back hands the
    rows on, in another shape."""
    each_row = {name for node in walk(function) if isinstance(node, (ast.For, ast.AsyncFor))
                and names_in(node.iter) & rows for name in target_names(node.target)}
    gathered: Set[str] = set()
    for node in walk(function) if each_row else ():
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in _FILLING_METHODS and isinstance(node.func.value, ast.Name) \
                and any(names_in(argument) & each_row for argument in node.args):
            gathered.add(node.func.value.id)
        elif isinstance(node, ast.Assign) and names_in(node.value) & each_row:
            gathered.update(t.value.id for t in node.targets
                            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name))
    return gathered


def helper_writes(function: FunctionNode, facts: ModuleFacts, after: ast.AST,
                  self_class: Optional[ClassRef] = None) -> List[ExecutedSql]:
    """The UPDATEs and DELETEs that project functions called in ``function`` after ``after`` send
    (``mark_done(conn, row.id)`` whose body runs ``UPDATE ... WHERE id = %s``), each placed at its call here.
    ``self_class``: the subclass ``self`` is an instance of when ``function`` is a base class's method."""
    from dataclasses import replace
    from ...project.summaries import resolve

    found: List[ExecutedSql] = []
    for node in function_nodes(function, facts):
        if not (isinstance(node, ast.Call) and later(node, after)) or isinstance(node.func, ast.Attribute) \
                and node.func.attr in _NOT_HELPERS:
            continue
        for target, target_facts in resolve(node, facts, function, by_name=False, self_class=self_class):
            if self_class is not None and target_facts.enclosing_class(target) is self_class[0]:
                # A hook of the subclass the base's loop hands each item to (``self.handle(item)``): the step
                # that works on the row, whose own store helper marks it.
                writes = _writes_behind(target, target_facts, target, 1)
            else:
                writes = _own_writes(target, target_facts)
            found.extend(replace(executed, call=node, receiver=None) for executed in writes)
        if queue_put(node) is not None:
            # Put into the process's own queue: the consumers' writes on what they take are this function's.
            for consumer, consumer_facts, take in consumers(node, function, facts):
                found.extend(replace(executed, call=node, receiver=None)
                             for executed in _writes_behind(consumer, consumer_facts, take, _HANDED_DEPTH))
    return found


def calls_taking_rows(loader: FunctionNode, facts: ModuleFacts) -> List[Tuple[ast.Call, ModuleFacts,
                                                                             Optional[ClassRef]]]:
    """The calls that take what ``loader`` hands back, each with the subclass ``self`` is an instance of when the
    call is a base class's ``self.<hook>()``: its callers (a base class's loop calling the subclass's override
    too), and, where a caller only returns the loader's result (``def fetch(self): return
    self.repo.pending(50)``), that caller's callers in turn."""
    from ...project.fixed_arguments import callers_of
    from ...project.inherited_calls import base_calls_of_override

    found: List[Tuple[ast.Call, ModuleFacts, Optional[ClassRef]]] = []
    level: List[Tuple[FunctionNode, ModuleFacts, Optional[ClassRef]]] = [(loader, facts, None)]
    seen: Set[int] = {id(loader)}
    for _ in range(_FORWARDING_DEPTH + 1):
        forwarders: List[Tuple[FunctionNode, ModuleFacts, Optional[ClassRef]]] = []
        for function, where, self_class in level:
            taken = [(call, other, self_class) for call, other in callers_of(function, where)]
            taken += base_calls_of_override(function, where)
            for call, other, kind in taken:
                found.append((call, other, kind))
                caller = other.enclosing_function(call)
                statement = other.statement_of(call)
                if (caller is not None and id(caller) not in seen and isinstance(statement, ast.Return)
                        and statement.value is not None and unwrap(statement.value) is call):
                    seen.add(id(caller))
                    forwarders.append((caller, other, kind))
        if not forwarders:
            break
        level = forwarders
    return found


#: How many callers that only return a loader's result are followed up to the code that works on the rows.
_FORWARDING_DEPTH = 2


def core_update_behind(call: ast.Call, function: FunctionNode, facts: ModuleFacts) -> bool:
    """``outbox.mark_sent(conn, row.id)``: a project function ``call`` runs executes a SQLAlchemy ``update(...)``
    whose ``where`` tests no state (it moves the row whatever another replica did to it meanwhile)."""
    from ...project.summaries import resolve
    from .selection import moves_whatever_its_state

    return any(moves_whatever_its_state(node, target_facts)
               for target, target_facts in resolve(call, facts, function, by_name=False)
               for node in function_nodes(target, target_facts))


#: How many project calls deep a queue consumer's writes are followed (its loop, the step it hands each item
#: to, the store helper that writes it).
_HANDED_DEPTH = 3


def _own_writes(function: FunctionNode, facts: ModuleFacts) -> List[ExecutedSql]:
    return [executed for group in _sql_by_function(facts) for executed in group
            if facts.enclosing_function(executed.call) is function
            and executed.sql.statement_types in (("UpdateStmt",), ("DeleteStmt",))]


def _writes_behind(function: FunctionNode, facts: ModuleFacts, after: ast.AST, depth: int,
                   seen: Optional[Set[int]] = None) -> List[ExecutedSql]:
    """The UPDATEs and DELETEs ``function`` sends after ``after``: its own and those of the project functions
    it calls, ``depth`` calls deep."""
    from ...project.summaries import resolve

    seen = set() if seen is None else seen
    if id(function) in seen:
        return []
    seen.add(id(function))
    found = [e for e in _own_writes(function, facts) if later(e.call, after)]
    if depth <= 0:
        return found
    for node in function_nodes(function, facts):
        if not (isinstance(node, ast.Call) and later(node, after)) or isinstance(node.func, ast.Attribute) \
                and node.func.attr in _NOT_HELPERS:
            continue
        for target, target_facts in resolve(node, facts, function, by_name=False):
            found.extend(_writes_behind(target, target_facts, target, depth - 1, seen))
    return found


#: Calls that run SQL or move a cursor rather than call a project helper: read as SQL where they are written.
_NOT_HELPERS = frozenset({"execute", "executemany", "fetchall", "fetchone", "fetchmany", "commit", "rollback",
                          "cursor", "scalars", "scalar", "all", "first", "one"})



def picked_and_written_after(select: ExecutedSql, executions: List[ExecutedSql], function: Optional[FunctionNode],
                             facts: ModuleFacts):
    """``sql_pickup`` of ``select`` against the statements its function runs after it, or, for a SELECT that may
    pick rows by their state, against the writes behind the project functions it calls after it."""
    picked = sql_pickup(select, [e for e in executions if later(e.call, select.call)])
    if picked is None and function is not None and may_pick_by_state(select):
        picked = sql_pickup(select, helper_writes(function, facts, select.call))
    return picked


def moves_picked_rows(function: FunctionNode, facts: ModuleFacts) -> bool:
    """``function`` selects rows by their state and moves them out of it (``WHERE warned_at IS NULL`` ... ``SET
    warned_at = now()``, ``filter(status="pending")`` ... ``row.status = "sent"; save()``): what it has done is
    marked in the rows, so a later run finds nothing left of it."""
    executions = [e for group in _sql_by_function(facts) for e in group if facts.enclosing_function(e.call) is function]
    if any(may_pick_by_state(select) and picked_and_written_after(select, executions, function, facts) is not None
           for select in executions):
        return True
    if any(updates_tested_state(e.text) for e in executions if "UpdateStmt" in e.sql.statement_types
           or "SelectStmt" in e.sql.statement_types):
        return True
    if any(sql_pickup(select, [e for e in executions if later(e.call, call)] + helper_writes(function, facts, call))
           is not None for call, select in _selects_handed_back(function, facts)):
        return True  # (``for row in _due(conn): ... UPDATE ... SET sent_for = ... WHERE id = %s``)
    return id(function) in _functions_writing_rows(facts) and bool(_pickups(function, facts))


def _selects_handed_back(function: FunctionNode, facts: ModuleFacts) -> List[Tuple[ast.Call, ExecutedSql]]:
    """(call, SELECT) for each project function ``function`` calls that returns the rows of a SELECT that may pick
    rows by their state (a module's ``_due_rows(conn)`` returning ``conn.execute(...).fetchall()``)."""
    from ...project.summaries import resolve

    found: List[Tuple[ast.Call, ExecutedSql]] = []
    for node in function_nodes(function, facts):
        if not isinstance(node, ast.Call) or isinstance(node.func, ast.Attribute) and node.func.attr in _NOT_HELPERS:
            continue
        for target, target_facts in resolve(node, facts, function, by_name=False):
            found.extend((node, select) for group in _sql_by_function(target_facts) for select in group
                         if target_facts.enclosing_function(select.call) is target and may_pick_by_state(select)
                         and hands_back(select, target))
    return found


def picks_rows(function: FunctionNode, facts: ModuleFacts, rows: Optional[ast.AST] = None) -> bool:
    """``function`` picks rows by their state and moves them out of it (:func:`moves_picked_rows`); given
    ``rows`` (what a loop of ``function`` walks), those are the picked rows: the ORM selection itself, or a
    name it was bound to (``labels = queued(session)`` ... ``for label in labels``)."""
    if rows is None:
        return moves_picked_rows(function, facts)
    if id(function) not in _functions_writing_rows(facts):
        return False
    return any(_contains(rows, pickup.node) or (isinstance(rows, ast.Name) and rows.id in pickup.rows)
               for pickup in _pickups(function, facts))


#: Aggregates: a SELECT of nothing else (and no GROUP BY) returns one row of numbers, not rows to work on.
_AGGREGATES = frozenset({"count", "max", "min", "sum", "avg", "bool_or", "bool_and", "every", "array_agg",
                         "string_agg", "json_agg", "jsonb_agg"})


def aggregates_only(select: ExecutedSql) -> bool:
    """``SELECT max(batch_id) FROM trips WHERE ...``: a summary of the rows, none of them picked."""
    statements = parse_statements(select.text) or ()  # (None: text pglast cannot parse)
    if len(statements) != 1 or type(statements[0]).__name__ != "SelectStmt":
        return False
    statement = statements[0]
    if getattr(statement, "groupClause", None) or not getattr(statement, "targetList", None):
        return False
    for target in statement.targetList:
        value = getattr(target, "val", None)
        if type(value).__name__ != "FuncCall":
            return False
        name = getattr(value.funcname[-1], "sval", "") if value.funcname else ""
        if name.lower() not in _AGGREGATES:
            return False
    return True

