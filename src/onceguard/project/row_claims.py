"""Rows a function claims by locking them and moving them out of the condition that selected them.

``for hb in Beat.objects.filter(alerted=False).select_for_update(): ...`` followed, in the same function,
by ``....update(alerted=True)`` on the same rows: a second run (another replica) waits on the row locks,
then finds the rows no longer match its condition and skips them.  What the loop does for each row happens
once per row, however many replicas run the function; the update that moves the rows is a flag flip.

A loop may also work through rows that were taken with a claim before it (``jobs = take_batch(session, 5)`` ...
``for job in jobs: finish(session, job)``): selected with ``FOR UPDATE SKIP LOCKED`` (or locked and moved out of
the state that selected them), or moved by a conditional ``UPDATE ... RETURNING``, in the loop's function or in
a project function that hands them back.  Each replica gets other rows: what the loop does with a row is that
row's work, done once (``takes_claimed_rows``).
"""
from __future__ import annotations

import ast
from typing import Callable, Dict, Iterator, List, Optional, Set, Tuple

from pglast import ast as pg

from ..analysis.executed_sql import ExecutedSql, executed_sql
from ..analysis.facts import FunctionNode, ModuleFacts, ancestors, walk, walk_no_nested_functions
from ..analysis.names import dotted
from ..analysis.sql import parse_statements, returns_rows, sql_nodes
from ..knowledge import claims as known


def _chain_head(expr: ast.AST) -> Optional[str]:
    """``Beat.objects`` of ``Beat.objects.filter(...).select_for_update()``, ``rows`` of ``rows.update()``."""
    while isinstance(expr, ast.Call) or (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Call)):
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, (ast.Name, ast.Attribute)):
        inner = expr.value
        # ``Beat.objects.filter`` -> the manager; ``rows.select_for_update`` -> the queryset name
        return dotted(inner) if isinstance(inner, (ast.Name, ast.Attribute)) else None
    return dotted(expr) if isinstance(expr, (ast.Name, ast.Attribute)) else None


def _conditions(expr: ast.AST) -> Dict[str, ast.AST]:
    """Field -> value of the ``filter``/``exclude`` keywords in a query chain (lookups cut off)."""
    found: Dict[str, ast.AST] = {}
    for node in walk(expr):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in known.ORM_FILTER_METHODS:
            for keyword in node.keywords:
                if keyword.arg:
                    found.setdefault(keyword.arg.split("__", 1)[0], keyword.value)
    return found


def _locks_rows(expr: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr in known.ROW_LOCK_METHODS for n in walk(expr))


def _same_constant(a: ast.AST, b: ast.AST) -> bool:
    return isinstance(a, ast.Constant) and isinstance(b, ast.Constant) and a.value == b.value


def claimed_row_calls(function: FunctionNode) -> Tuple[Set[int], Set[int]]:
    """(ids of the calls made for each claimed row, ids of the updates that claim them)."""
    bound: Dict[str, ast.AST] = {}
    loops = []
    updates = []
    for node in walk_no_nested_functions(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            bound[node.targets[0].id] = node.value
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            loops.append(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == known.ORM_UPDATE_METHOD and node.keywords:
            updates.append(node)
    per_row: Set[int] = set()
    claiming: Set[int] = set()
    for loop in loops:
        source = loop.iter
        name = source.id if isinstance(source, ast.Name) else None
        query = bound.get(name, source) if name else source
        if not _locks_rows(query):
            continue
        conditions = _conditions(query)
        head = _chain_head(query)
        for update in updates:
            receiver = update.func.value
            same_rows = (name is not None and isinstance(receiver, ast.Name) and receiver.id == name) or (
                head is not None and _chain_head(receiver) == head)
            if not same_rows:
                continue
            moved = [k for k in update.keywords if k.arg in conditions
                     and not _same_constant(k.value, conditions[k.arg])]
            if moved:
                claiming.add(id(update))
                for statement in loop.body:
                    per_row.update(id(n) for n in walk_no_nested_functions(statement) if isinstance(n, ast.Call))
                    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
                        per_row.add(id(statement.value))
                break
    return per_row, claiming


# -- rows a loop works through, taken with a claim ---------------------------------------------------------------
#: Calls that hand back the rows they are given, as another container: ``list(session.scalars(stmt))``.
ROW_CONTAINERS = frozenset({"list", "tuple", "sorted", "set", "frozenset"})
#: Names followed back to what they were bound to (``stmt`` -> ``rows`` -> ``jobs``).
_MAX_HOPS = 4
_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
#: (function, its module, the rows a loop of it walks or None for what it returns) -> whether the function
#: picked those rows by their state and moves them out of it.
Picked = Callable[[FunctionNode, ModuleFacts, Optional[ast.AST]], bool]


def takes_claimed_rows(call: ast.Call, facts: ModuleFacts, picked: Optional[Picked] = None) -> bool:
    """``call`` is handed a row of the ``for row in rows`` around it, and the rows were taken with a claim: in the
    loop's own function, or by a project function that hands them back (``rows = take_batch(session, 5)``).  With
    ``picked``, also rows picked by their state and moved out of it without a claim, by that project function or
    by the loop's own function: that pickup is where two replicas get the same rows, and it is judged there
    (OG302)."""
    rows = _worked_rows(call, facts)
    if rows is None:
        rows = _handed_row(call, facts)
    if rows is None:
        return False
    if _taken_with_claim(rows, facts, 0):
        return True
    source = _rows_of(rows, facts, 0)
    if not isinstance(source, ast.Call):
        return False
    loop_function = facts.enclosing_function(call)
    if picked is not None and loop_function is not None and picked(loop_function, facts, rows):
        return True  # the loop's own function picks these rows by their state (itself or through a loader), moves them
    from .summaries import resolve

    for target, target_facts in resolve(source, facts, facts.enclosing_function(source), by_name=False):
        if hands_claimed_rows(target, target_facts) or (picked is not None and picked(target, target_facts, None)):
            return True
    return False


def hands_claimed_rows(function: FunctionNode, facts: ModuleFacts) -> bool:
    """A ``return`` of ``function`` gives rows it took with a claim (``return jobs`` after ``jobs =
    list(session.scalars(stmt))`` with ``stmt = select(Job)...with_for_update(skip_locked=True)``)."""
    cache = facts.cached("row_claims:hands-claimed", lambda _f: {})
    if id(function) not in cache:
        cache[id(function)] = any(
            isinstance(node, ast.Return) and node.value is not None and _taken_with_claim(node.value, facts, 0)
            for node in walk_no_nested_functions(function))
    return cache[id(function)]


def hands_back_rows(rows: Set[str], function: FunctionNode) -> bool:
    """A ``return`` of ``function`` gives its caller the rows themselves: a name in ``rows`` (names holding them),
    the same in another container (``list(jobs)``, ``[job for job in jobs]``), or either among the values."""
    def is_rows(value: ast.AST) -> bool:
        while isinstance(value, ast.Await):
            value = value.value
        if isinstance(value, ast.Name):
            return value.id in rows
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ROW_CONTAINERS:
            return len(value.args) == 1 and is_rows(value.args[0])
        if isinstance(value, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            return any(is_rows(generator.iter) for generator in value.generators)
        if isinstance(value, (ast.Tuple, ast.List)):
            return any(is_rows(element) for element in value.elts)
        return False

    return any(isinstance(node, ast.Return) and node.value is not None and is_rows(node.value)
               for node in walk_no_nested_functions(function))


def _worked_rows(call: ast.Call, facts: ModuleFacts) -> Optional[ast.AST]:
    """The rows of the innermost ``for row in rows`` around ``call`` whose row ``call`` is handed
    (``finish(session, job, render(job))``)."""
    given = {n.id for argument in [*call.args, *(k.value for k in call.keywords)] for n in walk(argument)
             if isinstance(n, ast.Name)}
    for above in ancestors(call):
        if isinstance(above, _FUNCTION_TYPES + (ast.Lambda, ast.ClassDef)):
            return None
        if isinstance(above, (ast.For, ast.AsyncFor)) and any(_inside(call, s) for s in above.body):
            if {n.id for n in walk(above.target) if isinstance(n, ast.Name)} & given:
                return above.iter
    return None


def _handed_row(call: ast.Call, facts: ModuleFacts) -> Optional[ast.AST]:
    """When no loop walks rows ``call`` is handed: the call whose result a name it is handed (or whose fields,
    ``job.id``) was bound to earlier in its function -- one row taken per pass (``job = take_next()`` ...
    ``deliver(job)``), judged as the rows a loop walks."""
    for argument in [*call.args, *(k.value for k in call.keywords)]:
        for name in (n for n in walk(argument) if isinstance(n, ast.Name)):
            value = _bound_before(name, facts)
            inner = value.value if isinstance(value, ast.Await) else value
            if isinstance(inner, ast.Call):
                return value
    return None


def _inside(node: ast.AST, tree: ast.AST) -> bool:
    return node is tree or any(above is tree for above in ancestors(node))


def _rows_of(expr: ast.AST, facts: ModuleFacts, hops: int) -> ast.AST:
    """What ``expr`` holds, through awaits, containers (``list(...)``) and names bound before it in its scope."""
    while True:
        if isinstance(expr, ast.Await):
            expr = expr.value
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in ROW_CONTAINERS \
                and len(expr.args) == 1:
            expr = expr.args[0]
        elif isinstance(expr, ast.Name) and hops < _MAX_HOPS:
            value = _bound_before(expr, facts)
            if value is None:
                return expr
            expr, hops = value, hops + 1
        else:
            return expr


def _bound_before(name: ast.Name, facts: ModuleFacts) -> Optional[ast.AST]:
    """The value ``name`` was last assigned before it is read, in its own function (or at module level)."""
    scope = facts.enclosing_function(name) or facts.tree
    found = None
    for node in walk_no_nested_functions(scope):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None \
                and (node.end_lineno, node.end_col_offset) <= (name.lineno, name.col_offset):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name.id for t in targets):
                if found is None or node.lineno > found.lineno:
                    found = node
    return found.value if found is not None else None


def _taken_with_claim(expr: ast.AST, facts: ModuleFacts, hops: int) -> bool:
    """``expr`` yields rows taken with a claim: a skip-locked selection, a locked one whose rows the function
    moves out of the state that selected them, or a conditional ``UPDATE ... RETURNING`` (SQL or SQLAlchemy)."""
    expr = _rows_of(expr, facts, hops)
    function = facts.enclosing_function(expr)
    sql = facts.cached("row_claims:sql-by-call", lambda _f: {id(e.call): e for e in executed_sql(facts)})
    for node in walk(expr):
        if isinstance(node, ast.Name) and node is not expr and hops < _MAX_HOPS:
            value = _bound_before(node, facts)
            if value is not None and _taken_with_claim(value, facts, hops + 1):
                return True
        if not isinstance(node, ast.Call):
            continue
        executed = sql.get(id(node)) or _fetched_from(node, function, facts)
        if executed is not None and _claiming_sql(executed):
            return True
        if isinstance(node.func, ast.Attribute) and node.func.attr in known.ROW_LOCK_METHODS:
            if _skips_locked(node) or (function is not None and _moves_selected_rows(expr, function)):
                return True
        if _claiming_orm_update(node, facts):
            return True
    return False


def _skips_locked(call: ast.Call) -> bool:
    return any(k.arg == known.SKIP_LOCKED_KEYWORD and isinstance(k.value, ast.Constant) and k.value.value is True
               for k in call.keywords)


def _fetched_from(call: ast.Call, function: Optional[FunctionNode], facts: ModuleFacts) -> Optional[ExecutedSql]:
    """The SQL a fetch reads the result of: the last statement its cursor ran before it (``cur.fetchall()``)."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr in known.FETCH_METHODS | {"fetchmany"}):
        return None
    receiver = dotted(call.func.value)
    if receiver is None:
        return None
    before = [e for e in executed_sql(facts) if e.receiver is not None and dotted(e.receiver) == receiver
              and facts.enclosing_function(e.call) is function
              and (e.call.lineno, e.call.col_offset) < (call.lineno, call.col_offset)]
    return before[-1] if before else None


def _claiming_sql(executed: ExecutedSql) -> bool:
    """``... FOR UPDATE SKIP LOCKED`` (also in a sub-select), or ``UPDATE ... SET state = ... WHERE state = ...
    RETURNING ...``: each row goes to one replica."""
    if executed.sql.skip_locked:
        return True
    if executed.sql.statement_types + executed.sql.cte_writes not in (("UpdateStmt",), ("SelectStmt", "UpdateStmt")) \
            or not executed.sql.returning:
        return False
    statements = parse_statements(executed.text)
    if not statements:
        return False
    # The UPDATE itself, or one a ``WITH claimed AS (UPDATE ... RETURNING ...) SELECT ... FROM claimed`` reads
    # the moved rows of: the rows handed back are the ones this call moved.
    for update in sql_nodes(statements[0]):
        if not isinstance(update, pg.UpdateStmt) or update.whereClause is None or not returns_rows(update):
            continue
        written = {t.name for t in update.targetList or () if isinstance(t, pg.ResTarget) and t.name}
        tested = {n.fields[-1].sval for n in sql_nodes(update.whereClause) if isinstance(n, pg.ColumnRef)
                  and isinstance(n.fields[-1], pg.String)}
        if written & tested:
            return True
    return False


def _links(expr: ast.AST) -> Tuple[ast.AST, List[Tuple[str, ast.Call]]]:
    """``update(Job).where(...).values(...).returning(Job)`` -> (``update(Job)``, [(where, ...), ...])."""
    links: List[Tuple[str, ast.Call]] = []
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        links.append((expr.func.attr, expr))
        expr = expr.func.value
    links.reverse()
    return expr, links


def _claiming_orm_update(call: ast.Call, facts: ModuleFacts) -> bool:
    """SQLAlchemy ``update(Job).where(Job.status == "queued").values(status="rendering").returning(Job)``: the
    rows handed back are the ones this statement moved out of the state its WHERE tested."""
    head, links = _links(call)
    if not (isinstance(head, ast.Call) and (facts.callee(head) or "") in known.SQLALCHEMY_UPDATE):
        return False
    names = [name for name, _ in links]
    if "returning" not in names:
        return False
    tested = _tested_columns(links)
    written: Set[str] = set()
    for name, link in links:
        if name != "values":
            continue
        written.update(k.arg for k in link.keywords if k.arg)
        for argument in link.args:
            if isinstance(argument, ast.Dict):
                written.update(k.value if isinstance(k, ast.Constant) else k.attr for k in argument.keys
                               if isinstance(k, ast.Constant) and isinstance(k.value, str) or isinstance(k, ast.Attribute))
    return bool(tested & written)


def _tested_columns(links: List[Tuple[str, ast.Call]]) -> Set[str]:
    """Columns the ``where``/``filter``/``filter_by`` links of a statement test (``Job.status == ...``)."""
    tested: Set[str] = set()
    for name, link in links:
        if name in known.ORM_FILTER_METHODS:
            tested.update(k.arg for k in link.keywords if k.arg)
            tested.update(n.attr for argument in link.args for n in walk(argument) if isinstance(n, ast.Attribute))
    return tested


def _selection_links(expr: ast.AST) -> Iterator[List[Tuple[str, ast.Call]]]:
    for node in walk(expr):
        if isinstance(node, ast.Call):
            yield _links(node)[1]


def _moves_selected_rows(expr: ast.AST, function: FunctionNode) -> bool:
    """A blocking row lock counts when ``function`` then moves the rows out of what selected them (``for job in
    jobs: job.status = "rendering"``): a second replica waits, then finds them no longer matching."""
    tested: Set[str] = set()
    for links in _selection_links(expr):
        tested |= _tested_columns(links)
    return any(isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                                                    and t.attr in tested for t in node.targets)
               for node in walk_no_nested_functions(function))
