"""Rows selected by their state: the status filters of Django, SQLAlchemy and SQL, the names that hold
the rows, and whether the code after the selection only writes those rows."""

import ast
from dataclasses import dataclass
from typing import List, Optional, Set, Tuple

from pglast import ast as pg
from pglast.enums import A_Expr_Kind, BoolExprType

from ...project.claim_syntax import is_log_call
from ...analysis.executed_sql import ExecutedSql, bound_value
from ...analysis.facts import FunctionNode, ModuleFacts, call_name, parent, walk, walk_no_nested_functions
from ...knowledge import orm
from ...analysis.names import dotted
from ...model import Related
from ...project.row_claims import hands_back_rows
from ...analysis.sql import parse_statements, sql_nodes
from ..data_races import (
    _FETCH, _tables, chain, django_instance_loader, django_queryset, function_nodes, later,
    names_in, sa_source, sa_statement, target_names, unwrap)
from ..data_races.loads import module_chain
from ..redis_leases import result_tested


def status_column(name: str, lookup: str = "") -> bool:
    if name in orm.STATUS_COLUMNS or name.endswith(orm.STATUS_SUFFIXES):
        return True
    return lookup == "isnull" and name.endswith(orm.PENDING_TIMESTAMP_SUFFIXES)


def _is_constant(node: ast.AST) -> bool:
    """A literal or an enum-like ``Job.Status.PENDING`` / ``PENDING``: the same for every caller."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return all(_is_constant(e) for e in node.elts)
    if isinstance(node, ast.Attribute):
        return node.attr.isupper()
    if isinstance(node, ast.Name):
        return node.id.isupper()
    return False


def _django_status_filter(links, pickup: bool = False) -> Optional[str]:
    """The status lookup of a queryset (``status="pending"``).  For a ``pickup``, None when the queryset is
    also pinned to one caller-given entity (``filter(user=request.user, status=...)``): that is not a queue."""
    found = None
    for name, call in links:
        if name not in ("filter", "exclude") or not isinstance(call, ast.Call):
            continue
        # Keywords of the call and of Q(...) objects inside it.
        keywords = list(call.keywords) + [
            k for arg in call.args for n in walk(arg) if isinstance(n, ast.Call) for k in n.keywords
        ]
        for keyword in keywords:
            if keyword.arg is None:
                return None
            field, _, lookup = keyword.arg.partition("__")
            if status_column(field, lookup) and lookup in orm.DJANGO_STATUS_LOOKUPS:
                found = found or keyword.arg
            elif pickup and lookup in ("", "exact") and not _is_constant(keyword.value):
                return None
    return found


def _sa_status_condition(links, pickup: bool = False) -> Optional[str]:
    """As :func:`_django_status_filter`, for ``where``/``filter``/``filter_by`` conditions."""
    found = None
    for name, call in links:
        if name not in ("where", "filter", "filter_by") or not isinstance(call, ast.Call):
            continue
        for keyword in call.keywords:
            if status_column(keyword.arg or ""):
                found = found or keyword.arg
            elif pickup and not _is_constant(keyword.value):
                return None
        for arg in call.args:
            for condition in _conjuncts(arg):
                column = _sa_condition_column(condition)
                if column is None:
                    continue
                if status_column(column, "isnull" if _is_null_test(condition) else ""):
                    found = found or column
                elif (pickup and isinstance(condition, ast.Compare) and isinstance(condition.ops[0], ast.Eq)
                      and not _is_constant(condition.comparators[0])):
                    return None
    return found


def _conjuncts(node: ast.AST) -> List[ast.AST]:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "and_":
        return [c for arg in node.args for c in _conjuncts(arg)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd):
        return _conjuncts(node.left) + _conjuncts(node.right)
    return [node]


def _sa_condition_column(condition: ast.AST) -> Optional[str]:
    """``Job.status == x``, ``Job.status.in_(...)``, ``Job.sent_at.is_(None)``, ``~Job.processed``."""
    if isinstance(condition, ast.Compare) and isinstance(condition.left, ast.Attribute):
        return condition.left.attr
    if isinstance(condition, ast.Call) and isinstance(condition.func, ast.Attribute) and isinstance(
            condition.func.value, ast.Attribute):
        return condition.func.value.attr
    if isinstance(condition, ast.UnaryOp) and isinstance(condition.operand, ast.Attribute):
        return condition.operand.attr
    return None


def _is_null_test(condition: ast.AST) -> bool:
    if isinstance(condition, ast.Compare):
        return any(isinstance(c, ast.Constant) and c.value is None for c in condition.comparators)
    if isinstance(condition, ast.Call) and isinstance(condition.func, ast.Attribute):
        return condition.func.attr in ("is_", "isnot", "is_not") and any(
            isinstance(a, ast.Constant) and a.value is None for a in condition.args)
    return False


@dataclass
class Pickup:
    framework: str  # "django" | "sqlalchemy" | "sql" | MODEL_CLASS
    node: ast.AST  # where the rows are selected
    model: str
    column: str
    rows: Set[str]  # local names holding the rows or one of them (loop targets)
    session: Optional[str] = None
    #: where the rows are selected when another function picks them and returns them (a repository's)
    selected_in: Optional[Related] = None
    #: the statement that selects them when it is built into a name before it runs (``stmt = select(...)``)
    statement: Optional[ast.AST] = None
    #: the loader that picks them and returns them (a repository's function, with its module)
    loader: Optional[Tuple[FunctionNode, ModuleFacts]] = None

    @property
    def at(self) -> ast.AST:
        """Where the selection is written: the statement built into a name, else the query itself."""
        return self.statement if self.statement is not None else self.node


def _rows_names(expr: ast.AST, facts: ModuleFacts) -> Set[str]:
    """Names that end up holding the rows selected by ``expr``: its assignment target and loop targets."""
    names: Set[str] = set()
    statement = facts.statement_of(expr)
    if isinstance(statement, (ast.For, ast.AsyncFor)) and _contains(statement.iter, expr):
        names.update(target_names(statement.target))
    if isinstance(statement, ast.Assign) and _contains(statement.value, expr):
        for target in statement.targets:
            names.update(target_names(target))
    return names


def _contains(tree: ast.AST, node: ast.AST) -> bool:
    return any(n is node for n in walk(tree))


def _functions_filtering(facts: ModuleFacts) -> Set[int]:
    """Functions that call a query filter (``filter``, ``where``, ...): a pickup by status needs one."""
    def build(_facts: ModuleFacts) -> Set[int]:
        functions = set()
        for call in facts.calls_named(*orm.PICKUP_FILTER_METHODS):
            function = facts.enclosing_function(call)
            if function is not None:
                functions.add(id(function))
        return functions

    return facts.cached("data_races:filtering", build)


def _pickups(function: FunctionNode, facts: ModuleFacts) -> List[Pickup]:
    """Rows ``function`` picks by their state: with a query of its own, or through a project function that
    picks them and returns them."""
    from .returned_pickups import returned_pickups  # (it reads this module's local pickups)

    return _local_pickups(function, facts) + returned_pickups(function, facts)


def _local_pickups(function: FunctionNode, facts: ModuleFacts) -> List[Pickup]:
    found: List[Pickup] = []
    if id(function) not in _functions_filtering(facts):
        return found
    for node in function_nodes(function, facts):
        if not isinstance(node, (ast.Call, ast.Subscript)):
            continue
        above = parent(node)
        if isinstance(above, (ast.Attribute, ast.Subscript)) and above.value is node:
            continue  # a link inside a longer chain: the chain's outermost expression speaks for it
        if _is_subquery(node):
            continue
        queryset = django_queryset(node)
        if queryset is not None:
            model, links = queryset
            locked = any(n == orm.DJANGO_ROW_LOCK for n, _ in links)
            if locked or (links and links[-1][0] in orm.DJANGO_QUERYSET_WRITES):
                continue
            column = _django_status_filter(links, pickup=True)
            if column:
                found.append(Pickup("django", node, model, column, _rows_names(node, facts)))
            continue
        # the rows of a batch, or the one row a worker takes next (``.first()``, ``.scalar_one_or_none()``): both
        # picked by their state, and two replicas asking together get the same
        loaded = sa_source(node, facts, many=True) or sa_source(node, facts, many=False)
        if loaded is not None and not loaded.locked:
            links = _sa_links(node, facts)
            column = _sa_status_condition(links, pickup=True)
            if column:
                found.append(Pickup("sqlalchemy", node, loaded.model, column, _rows_names(node, facts), loaded.session,
                                    statement=_built_statement(node, facts)))
        elif loaded is None:
            picked = _model_class_pickup(node)
            if picked is not None:
                found.append(Pickup(MODEL_CLASS, node, picked[0], picked[1], _rows_names(node, facts)))
    return found


#: A query a model class starts itself (Peewee ``Task.select().where(...)``, Tortoise ``Note.filter(...)``).
MODEL_CLASS = "model class"
_MODEL_QUERIES = frozenset({"select", "filter", "where"})
_MODEL_LOCKS = frozenset({"for_update", "select_for_update"})


def _model_class_pickup(node: ast.AST) -> Optional[Tuple[str, str]]:
    """(model, state column) when ``node`` is a model class's own query of rows by their state, taking no row
    lock: ``Task.select().where(Task.done == False)``, ``Notification.filter(sent=False).limit(50)``."""
    head, links = chain(node)
    names = [name for name, _ in links]
    if not (isinstance(head, ast.Name) and head.id[:1].isupper() and names and names[0] in _MODEL_QUERIES) \
            or _MODEL_LOCKS & set(names) or "update" in names or "delete" in names:
        return None
    column = _sa_status_condition(links, pickup=True) or _django_status_filter(links, pickup=True)
    return (head.id, column) if column else None


def _functions_writing_rows(facts: ModuleFacts) -> Set[int]:
    """Functions that set an attribute of a local name and persist something (``row.state = "sent"`` ...
    ``session.commit()`` / ``row.save()``, or a ``with ... .begin():`` block that commits on exit): only they can
    move rows picked elsewhere out of their state."""
    def build(_facts: ModuleFacts) -> Set[int]:
        # The persisting calls come from the module's index of calls by name; only their functions are walked.
        persisting = {}
        for call in facts.calls_named(*_PERSISTING, "begin"):
            function = facts.enclosing_function(call)
            if call.func.__class__ is ast.Attribute and call.func.attr == "begin" \
                    and not isinstance(parent(call), ast.withitem):
                continue  # (``with sessions.begin() as db:`` commits on exit; a bare ``begin()`` persists nothing)
            if function is not None and isinstance(call.func, ast.Attribute):
                persisting[id(function)] = function
        found = set()
        for key, function in persisting.items():
            for node in function_nodes(function, facts):
                if isinstance(node, (ast.Assign, ast.AugAssign)) and any(
                        isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])):
                    found.add(key)
                    break
        return found

    return facts.cached("row_pickup:writing-rows", build)


_PERSISTING = orm.SA_FLUSH | orm.DJANGO_INSTANCE_WRITES


#: Calls that take a queryset or select as part of another query: the rows are never loaded themselves.
_QUERY_COMPOSERS = frozenset({
    "Exists", "Subquery", "exists", "filter", "exclude", "annotate", "where", "in_", "not_in", "having",
    "union", "intersection", "difference", "scalar_subquery", "subquery",
})


def _is_subquery(node: ast.AST) -> bool:
    """``Exists(M.objects.filter(..., status=...))``, ``filter(id__in=<queryset>)``, a queryset built on
    ``OuterRef``: part of another query, not rows anyone picks."""
    if any(isinstance(n, ast.Call) and call_name(n) == "OuterRef" for n in walk(node)):
        return True
    child = node
    for above in _expression_ancestors(node):
        if isinstance(above, ast.Call) and child is not above.func:
            return call_name(above) in _QUERY_COMPOSERS
        child = above
    return False


def _expression_ancestors(node: ast.AST):
    above = parent(node)
    while above is not None and not isinstance(above, ast.stmt):
        if isinstance(above, ast.keyword):
            above = parent(above)
            continue
        yield above
        above = parent(above)


def _built_statement(node: ast.AST, facts: ModuleFacts) -> Optional[ast.AST]:
    """The ``select(...)`` a query runs when it was built into a name first (``stmt = select(Job).where(...)``
    ... ``session.scalars(stmt)``): the statement, where its conditions and any row lock are written."""
    _, links = chain(node)
    for _, call in links:
        if isinstance(call, ast.Call) and call.args and isinstance(unwrap(call.args[0]), ast.Name):
            value = bound_value(unwrap(call.args[0]), facts) if sa_statement(call.args[0], facts) else None
            # the function's own statement (one a module builds for several functions is not this pickup's)
            if value is not None and facts.enclosing_function(value) is facts.enclosing_function(node):
                return value
    return None


def _sa_links(node: ast.AST, facts: ModuleFacts):
    head, links = chain(node)
    links = [(name, _spread_conditions(call, facts)) for name, call in links]
    result = list(links)
    for _, call in links:
        if isinstance(call, ast.Call) and call.args:
            statement = sa_statement(call.args[0], facts)
            if statement is not None:
                result.extend(statement[1])
    return result


def _spread_conditions(call: ast.AST, facts: ModuleFacts) -> ast.AST:
    """``where(*_due())`` read as the conditions it spreads: ``_due`` a function of the module whose one
    ``return`` hands back a tuple or list of them (``return (Job.status == "pending", Job.run_at <= now())``)."""
    if not isinstance(call, ast.Call) or not any(isinstance(arg, ast.Starred) for arg in call.args):
        return call
    args: List[ast.AST] = []
    for arg in call.args:
        if not isinstance(arg, ast.Starred):
            args.append(arg)
            continue
        spread = arg.value
        helper = (facts.functions_by_name.get(spread.func.id, []) if isinstance(spread, ast.Call)
                  and isinstance(spread.func, ast.Name) and not spread.args else [])
        returns = [node for node in walk_no_nested_functions(helper[0]) if isinstance(node, ast.Return)] \
            if len(helper) == 1 else []
        if len(returns) != 1 or not isinstance(returns[0].value, (ast.Tuple, ast.List)):
            return call
        args.extend(returns[0].value.elts)
    return ast.copy_location(ast.Call(func=call.func, args=args, keywords=call.keywords), call)


def _loop_rows(pickup: Pickup, function: FunctionNode, facts: ModuleFacts) -> Set[str]:
    """Loop targets over a name that holds the rows (``jobs = ...; for job in jobs``)."""
    return _row_walk(pickup, function, facts)[1]


def _row_walk(pickup: Pickup, function: FunctionNode, facts: ModuleFacts) -> Tuple[List[ast.AST], Set[str]]:
    """The loops that walk the picked rows: over the selection itself, or over a name holding the rows or a
    row (``jobs = ...; for job in jobs``, ``for step in job.steps``); and the names holding them (the
    selection's own names and those loops' targets)."""
    rows = set(pickup.rows)
    loops: List[ast.AST] = []
    for node in function_nodes(function, facts):
        if isinstance(node, (ast.For, ast.AsyncFor)) and (
                _contains(node.iter, pickup.node) or (later(node, pickup.node) and names_in(node.iter) & rows)):
            loops.append(node)
            rows.update(target_names(node.target))
    return loops, rows


def holds_row(name: str, node: ast.AST, pickup: Pickup, loops: List[ast.AST]) -> bool:
    """``name`` holds a picked row where ``node`` is: a name the selection was assigned to, or the target of
    a loop over the rows that encloses ``node``.  A later loop that reuses the target name for rows of
    another query (``for coll in warned: ...; for coll in expired: ...``) walks other rows."""
    walking = [loop for loop in loops if name in target_names(loop.target)]
    if not walking:
        return name in pickup.rows
    line = getattr(node, "lineno", 0)
    return any(loop.lineno <= line <= (loop.end_lineno or loop.lineno) for loop in walking)


def _reread_locked(rows: Set[str], after: ast.AST, function: FunctionNode, facts: ModuleFacts) -> bool:
    """A name holding the rows is bound again to the same row loaded under a row lock."""
    for node in function_nodes(function, facts):
        if not (isinstance(node, ast.Assign) and later(node, after)):
            continue
        if not any(name in rows for target in node.targets for name in target_names(target)):
            continue
        loaded = django_instance_loader(node.value, facts) or sa_source(node.value, facts, many=False)
        if loaded is not None and loaded.locked:
            return True
    return False


#: Calls that compute a value and change nothing: they do not make a sweep's work unsafe to repeat.
_PURE_CALLS = frozenset({
    "now", "utcnow", "today", "timedelta", "datetime", "time", "monotonic", "len", "str", "int", "float",
    "bool", "list", "dict", "set", "tuple", "sorted", "min", "max", "sum", "any", "all", "isinstance",
    "getattr", "hasattr", "range", "enumerate", "zip", "format", "join", "get", "astimezone", "isoformat",
    "getLogger", "gettext", "_",
})


def _only_writes_rows(pickup: Pickup, function: FunctionNode, facts: ModuleFacts) -> bool:
    """The loop over the picked rows does nothing but write them (delete them, set a constant): two
    replicas repeating that is duplicate work, not a duplicate effect.  Anything else it calls (send,
    publish, run, allocate a number) makes the pickup a hazard.  So does handing the marked rows back
    (``return jobs``): the work on them is the caller's, and every replica's caller gets the same rows."""
    loops, rows = _row_walk(pickup, function, facts)
    if not loops or hands_back_rows(rows, function):
        return False
    for loop in loops:
        skipped: Set[int] = set()
        for statement in loop.body:
            for node in walk(statement):
                if id(node) in skipped or not isinstance(node, ast.Call):
                    continue
                if is_log_call(node):
                    skipped.update(id(n) for n in walk(node))
                    continue
                name = call_name(node)
                if name in _PURE_CALLS:
                    continue
                receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
                if (name in orm.DJANGO_INSTANCE_WRITES or name in orm.DJANGO_QUERYSET_WRITES
                        or name in orm.SA_FLUSH or name in ("add", "merge")) and (
                        receiver is not None and (names_in(receiver) & rows or names_in(node) & rows
                                                  or pickup.framework == "sqlalchemy")):
                    continue
                if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Call) and \
                        call_name(node.func.value) == "getLogger":
                    skipped.update(id(n) for n in walk(node))
                    continue
                return False
    return True


def _sa_update(node: ast.AST, facts: ModuleFacts):
    """Links of ``update(Model).where(...).values(...)`` (through one name binding), else None."""
    node = unwrap(node)
    if isinstance(node, ast.Name):
        value = bound_value(node, facts)
        if value is None:
            return None
        node = unwrap(value)
    head, links = module_chain(*chain(node), facts)  # (``sqlalchemy.update(T)``: the module is no receiver)
    if isinstance(head, ast.Call) and facts.callee(head) in orm.SA_UPDATE:
        return links
    return None


def moves_whatever_its_state(call: ast.AST, facts: ModuleFacts) -> bool:
    """``conn.execute(update(T).where(T.c.id == ...).values(...))``: a SQLAlchemy UPDATE sent whose ``where``
    tests no state: it moves the row whatever another replica did to it meanwhile."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "execute"
            and call.args):
        return False
    links = _sa_update(call.args[0], facts)
    return links is not None and not _sa_status_condition(links)


def _sql_status_column(where, pickup: bool = False) -> Optional[str]:
    """The status-like column a WHERE clause tests: ``status = …``, ``status IN (…)``, ``sent_at IS NULL``,
    ``NOT processed``.  For a ``pickup``, None when the WHERE also pins the rows to one caller-given value
    (``user_id = $1``)."""
    if where is None:
        return None
    is_and = isinstance(where, pg.BoolExpr) and where.boolop == BoolExprType.AND_EXPR
    conjuncts = list(where.args) if is_and else [where]
    found = None
    for condition in conjuncts:
        if isinstance(condition, pg.NullTest) and isinstance(condition.arg, pg.ColumnRef):
            name = _column_name(condition.arg)
            if name and status_column(name, "isnull"):
                found = found or name
        elif isinstance(condition, pg.BoolExpr) and condition.boolop == BoolExprType.NOT_EXPR:
            inner = condition.args[0]
            if isinstance(inner, pg.ColumnRef) and status_column(_column_name(inner) or ""):
                found = found or _column_name(inner)
        elif isinstance(condition, pg.A_Expr) and isinstance(condition.lexpr, pg.ColumnRef):
            name = _column_name(condition.lexpr) or ""
            if status_column(name):
                found = found or name
            elif (pickup and condition.name and condition.name[0].sval == "="
                  and isinstance(condition.rexpr, pg.ParamRef)):
                return None
    return found


def _column_name(ref) -> Optional[str]:
    last = ref.fields[-1]
    return last.sval if isinstance(last, pg.String) else None


def _writes_table(executed: ExecutedSql, table: str) -> bool:
    if executed.sql.statement_types not in (("UpdateStmt",), ("DeleteStmt",)):
        return False
    statement = parse_statements(executed.text)[0]
    return statement.relation.relname == table


def _sql_result_checked(executed: ExecutedSql, facts: ModuleFacts) -> bool:
    """The conditional UPDATE's outcome is read: its result tested, or ``cur.rowcount`` / a fetch afterwards."""
    if result_tested(executed.call, facts):
        return True
    receiver = dotted(executed.receiver) if executed.receiver is not None else None
    function = facts.enclosing_function(executed.call)
    if receiver is None or function is None:
        return False
    for node in function_nodes(function, facts):
        if isinstance(node, ast.Attribute) and dotted(node.value) == receiver and later(node, executed.call) and (
                node.attr == "rowcount" or node.attr in _FETCH):
            return True
    return False


# -- raw SQL: a SELECT by state, then an UPDATE of the same table -----------------------------------------------
def sql_pickup(select: ExecutedSql, later_sql: List[ExecutedSql]) -> Optional[Tuple[str, str, List[ExecutedSql]]]:
    """(table, state column, the writes of that table) when ``select`` picks rows by their state without locking
    them and some of ``later_sql`` writes that table. The state column is one the WHERE tests against a constant
    or NULL: named for a state (``status``, ``sent_at IS NULL``), or one the later UPDATE sets (``WHERE warned_at
    IS NULL`` ... ``SET warned_at = now()``: the rows move out of what picked them). Of joined tables, the one
    written is the one picked."""
    if select.sql.statement_types != ("SelectStmt",) or select.sql.for_update:
        return None
    statement = parse_statements(select.text)[0]
    where = statement.whereClause
    named = _sql_status_column(where, pickup=True)
    tested = _constant_tests(where)
    if tested is None:
        return None  # pinned to a caller-given value: one entity's rows, not a queue
    for table in sorted(_tables(statement.fromClause)):
        writes = [w for w in later_sql if _writes_table(w, table)]
        if not writes:
            continue
        if named is not None:
            return table, named, writes
        # Known only from the write: the write must move rows handed to it from Python (its WHERE takes a
        # parameter: ``WHERE id = %s``), not re-select them by their state in SQL (a set-based backfill).
        per_row = [w for w in writes if _takes_parameter(w)]
        moved = next((column for column in tested if any(column in _set_columns(w) for w in per_row)), None)
        if moved is not None:
            return table, moved, per_row
    return None


def may_pick_by_state(select: ExecutedSql) -> bool:
    """The SELECT could be a pickup (unlocked, its WHERE tests a column against a constant or NULL and is not
    pinned to a caller-given value): worth looking further for the writes that would make it one."""
    if select.sql.statement_types != ("SelectStmt",) or select.sql.for_update:
        return False
    return bool(_constant_tests(parse_statements(select.text)[0].whereClause))


def _constant_tests(where) -> Optional[List[str]]:
    """Columns a WHERE compares with a constant or NULL (``col IS NULL``, ``col = 'x'``, ``col IN (...)``,
    ``NOT col``); None when it also pins the rows to a caller-given value (``user_id = $1``)."""
    if where is None:
        return []
    is_and = isinstance(where, pg.BoolExpr) and where.boolop == BoolExprType.AND_EXPR
    found: List[str] = []
    for condition in (list(where.args) if is_and else [where]):
        if isinstance(condition, pg.NullTest) and isinstance(condition.arg, pg.ColumnRef):
            found.append(_column_name(condition.arg) or "")
        elif isinstance(condition, pg.BoolExpr) and condition.boolop == BoolExprType.NOT_EXPR \
                and isinstance(condition.args[0], pg.ColumnRef):
            found.append(_column_name(condition.args[0]) or "")
        elif isinstance(condition, pg.A_Expr) and isinstance(condition.lexpr, pg.ColumnRef):
            operator = condition.name[0].sval if condition.name else ""
            if operator == "=" and isinstance(condition.rexpr, pg.ParamRef):
                return None
            if operator in ("=", "") and isinstance(condition.rexpr, (pg.A_Const, tuple, list)):
                found.append(_column_name(condition.lexpr) or "")
            elif isinstance(condition.rexpr, pg.ColumnRef) and (
                    condition.kind == A_Expr_Kind.AEXPR_DISTINCT or operator in ("<>", "!=")):
                # ``reminded_for IS DISTINCT FROM due_on``: the row's state against another column of it, moved
                # out of it by ``SET reminded_for = due_on``.
                found.append(_column_name(condition.lexpr) or "")
            elif operator in _ORDERINGS and _row_columns(condition.rexpr):
                # ``updated_at > coalesce(synced_at, 'epoch')``: the row's watermark against another column of it,
                # moved out of the selection by ``SET synced_at = now()``
                found.extend([_column_name(condition.lexpr) or "", *_row_columns(condition.rexpr)])
        elif isinstance(condition, pg.A_Expr) and condition.name and condition.name[0].sval in _ORDERINGS \
                and _row_columns(condition.lexpr) and isinstance(condition.rexpr, pg.ColumnRef):
            found.extend([*_row_columns(condition.lexpr), _column_name(condition.rexpr) or ""])
    return [column for column in found if column]


_ORDERINGS = frozenset({"<", ">", "<=", ">="})


def _row_columns(node) -> List[str]:
    """The columns of the row itself an operand is (``synced_at``), or wraps in a function with constants
    (``coalesce(synced_at, 'epoch')``); empty for anything holding a parameter."""
    if isinstance(node, pg.ColumnRef):
        return [_column_name(node) or ""]
    if isinstance(node, (pg.FuncCall, pg.CoalesceExpr, pg.MinMaxExpr)) and node.args \
            and not any(isinstance(n, pg.ParamRef) for n in sql_nodes(node)):
        return [_column_name(arg) or "" for arg in node.args if isinstance(arg, pg.ColumnRef)]
    return []


def _takes_parameter(executed: ExecutedSql) -> bool:
    statement = parse_statements(executed.text)[0]
    where = getattr(statement, "whereClause", None)
    if where is None or any(isinstance(node, pg.SubLink) for node in sql_nodes(where)):
        return False
    return any(isinstance(node, pg.ParamRef) for node in sql_nodes(where))


def _set_columns(executed: ExecutedSql) -> Set[str]:
    statement = parse_statements(executed.text)[0]
    if not isinstance(statement, pg.UpdateStmt):
        return set()
    return {target.name for target in statement.targetList or () if isinstance(target, pg.ResTarget) and target.name}
