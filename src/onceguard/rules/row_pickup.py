"""Rows picked by status and updated without claiming them (OG302).  reference/frameworks.md §6.

Two replicas running the same pickup both see the row in its old state and both act on it, unless the
selection claims it (``FOR UPDATE SKIP LOCKED``, ``select_for_update(skip_locked=True)``) or the write is
conditional on the old state and its row count is read.  The same for one row: a state tested in Python,
then written unconditionally around the work it guards (check-then-act), and a single-use entry deleted
without reading the row count before success is returned.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterable, List, Optional, Set

from pglast import ast as pg
from pglast.enums import BoolExprType

from ..project import index as project
from ..project.claims import ClaimAnalyzer, is_log_call
from ..analysis.executed_sql import ExecutedSql, bound_value
from ..analysis.facts import FunctionNode, ModuleFacts, ancestors, call_name, parent, walk_no_nested_functions
from ..knowledge import orm
from ..model import Diagnostic
from ..analysis.names import dotted
from .registry import register
from ..analysis.sql import parse_statements
from .base import Rule
from .data_races import plain_name, _FETCH, _session_matches, _single_process, _sql_by_function, _tables, chain, django_instance_loader, django_queryset, function_nodes, later, names_in, sa_source, sa_statement, target_names, unwrap
from .redis_leases import result_tested, short


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
            k for arg in call.args for n in ast.walk(arg) if isinstance(n, ast.Call) for k in n.keywords
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
    framework: str  # "django" | "sqlalchemy" | "sql"
    node: ast.AST  # where the rows are selected
    model: str
    column: str
    rows: Set[str]  # local names holding the rows or one of them (loop targets)
    session: Optional[str] = None


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
    return any(n is node for n in ast.walk(tree))




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
        loaded = sa_source(node, facts, many=True)
        if loaded is not None and not loaded.locked:
            links = _sa_links(node, facts)
            column = _sa_status_condition(links, pickup=True)
            if column:
                found.append(Pickup("sqlalchemy", node, loaded.model, column, _rows_names(node, facts), loaded.session))
    return found


#: Calls that take a queryset or select as part of another query: the rows are never loaded themselves.
_QUERY_COMPOSERS = frozenset({
    "Exists", "Subquery", "exists", "filter", "exclude", "annotate", "where", "in_", "not_in", "having",
    "union", "intersection", "difference", "scalar_subquery", "subquery",
})


def _is_subquery(node: ast.AST) -> bool:
    """``Exists(M.objects.filter(..., status=...))``, ``filter(id__in=<queryset>)``, a queryset built on
    ``OuterRef``: part of another query, not rows anyone picks."""
    if any(isinstance(n, ast.Call) and call_name(n) == "OuterRef" for n in ast.walk(node)):
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


def _sa_links(node: ast.AST, facts: ModuleFacts):
    head, links = chain(node)
    result = list(links)
    for _, call in links:
        if isinstance(call, ast.Call) and call.args:
            statement = sa_statement(call.args[0], facts)
            if statement is not None:
                result.extend(statement[1])
    return result


def _loop_rows(pickup: Pickup, function: FunctionNode, facts: ModuleFacts) -> Set[str]:
    """Loop targets over a name that holds the rows (``jobs = ...; for job in jobs``)."""
    rows = set(pickup.rows)
    for node in function_nodes(function, facts):
        if isinstance(node, (ast.For, ast.AsyncFor)) and later(node, pickup.node):
            if names_in(node.iter) & rows:
                rows.update(target_names(node.target))
    return rows


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
    publish, run, allocate a number) makes the pickup a hazard."""
    rows = _loop_rows(pickup, function, facts)
    loops = [n for n in function_nodes(function, facts)
             if isinstance(n, (ast.For, ast.AsyncFor)) and set(target_names(n.target)) & rows]
    if not loops:
        return False
    for loop in loops:
        skipped: Set[int] = set()
        for statement in loop.body:
            for node in ast.walk(statement):
                if id(node) in skipped or not isinstance(node, ast.Call):
                    continue
                if is_log_call(node):
                    skipped.update(id(n) for n in ast.walk(node))
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
                    skipped.update(id(n) for n in ast.walk(node))
                    continue
                return False
    return True


# -- runs only after a claim its callers took -----------------------------------------------------------------
def _resolver(call: ast.Call, facts: ModuleFacts):
    """A call to a function imported from elsewhere in the project (CLI only)."""
    head = call.func
    while isinstance(head, ast.Attribute):
        head = head.value
    if not (isinstance(head, ast.Name) and facts.imports.is_imported(head.id)):
        return None
    found = project.find_function(facts.qualify(call.func) or "", facts.config, project.roots_for(facts))
    if found is None or found[1].context.is_test:
        return None
    return found


def runs_claimed(function: FunctionNode, facts: ModuleFacts, depth: int = 0) -> bool:
    """``function`` leads with a claim, or every call of it in its module comes after a claim the caller
    tested (a lease taken and checked: ``if not held: return``), or from callers that themselves run
    claimed.  A function nobody in its module calls is not claimed here (its callers are unknown)."""
    key = f"row_pickup:claimed:{id(function)}"
    cache = facts.cached("row_pickup:claimed", lambda _f: {})
    if key in cache:
        return cache[key]
    cache[key] = False  # recursion guard
    analyzer = ClaimAnalyzer.of_module(facts, _resolver if facts.context.cross_file else None)
    result = analyzer.lead(function).claimed
    if not result and depth < 3:
        callers = [c for c in facts.calls_named(function.name) if _calls_function(c, function)]
        result = bool(callers)
        for call in callers:
            caller = facts.enclosing_function(call)
            if caller is None or caller is function or not (
                    _claim_tested_before(call, caller, facts, analyzer) or _locked_before(call, caller, facts)
                    or runs_claimed(caller, facts, depth + 1)):
                result = False
                break
    cache[key] = result
    return result


#: SQL that blocks until this session or transaction holds a lock that serialises whole operations (an
#: advisory lock on the entity, a table lock).  A row lock taken by a helper guards that helper's rows only.
_BLOCKING_LOCK_SQL = ("PG_ADVISORY_XACT_LOCK(", "PG_ADVISORY_LOCK(", "LOCK TABLE")


def _locked_before(call: ast.AST, caller: FunctionNode, facts: ModuleFacts) -> bool:
    """``caller`` takes a lock before ``call``: directly (``select_for_update``, ``pg_advisory_xact_lock``) or
    in a helper it calls first (``self._create_locks()`` whose body, or a function it calls, locks)."""
    analyzer = ClaimAnalyzer.of_module(facts, _resolver if facts.context.cross_file else None)
    for node in function_nodes(caller, facts):
        if not (isinstance(node, ast.Expr) and later(call, node) and not _contains(node, call)):
            continue
        lock = unwrap(node.value)  # a call made for its effect: ``self._create_locks()``, ``lock_objects(...)``
        if isinstance(lock, ast.Call) and _still_held_at(lock, call, caller) and _call_locks(lock, analyzer, 1):
            return True
    return False


def _still_held_at(lock: ast.AST, call: ast.AST, caller: FunctionNode) -> bool:
    """A lock taken inside a ``with`` block (a transaction, a connection) ends with it: ``call`` must be in
    the same block."""
    for above in ancestors(lock):
        if above is caller:
            return True
        if isinstance(above, (ast.With, ast.AsyncWith)) and not _contains(above, call):
            return False
    return True


def _call_locks(call: ast.Call, analyzer: ClaimAnalyzer, depth: int) -> bool:
    if call_name(call) in (orm.DJANGO_ROW_LOCK, orm.SA_ROW_LOCK):
        return True
    if any(isinstance(a, ast.Constant) and isinstance(a.value, str) and _locking_sql(a.value)
           for a in ast.walk(call)):
        return True
    if depth >= 3:
        return False
    found = analyzer._helper_target(call)
    if found is None:
        return False
    target, foreign = found
    return _function_takes_lock(target, foreign, depth + 1)


def _function_takes_lock(function: FunctionNode, analyzer: ClaimAnalyzer, depth: int) -> bool:
    cache = analyzer.facts.cached("row_pickup:takes_lock", lambda _f: {})
    if id(function) in cache:
        return cache[id(function)]
    cache[id(function)] = False
    result = any(isinstance(n, ast.Constant) and isinstance(n.value, str) and _locking_sql(n.value)
                 for n in walk_no_nested_functions(function)) or any(
        isinstance(n, ast.Call) and _call_locks(n, analyzer, depth) for n in walk_no_nested_functions(function))
    cache[id(function)] = result
    return result


def _locking_sql(text: str) -> bool:
    upper = text.upper()
    return any(marker in upper for marker in _BLOCKING_LOCK_SQL)


def _calls_function(call: ast.Call, function: FunctionNode) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id == function.name
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls")


def _claim_tested_before(call: ast.Call, caller: FunctionNode, facts: ModuleFacts, analyzer: ClaimAnalyzer) -> bool:
    """An ``if`` before ``call`` in ``caller`` that leaves when a claim was not obtained."""
    for node in function_nodes(caller, facts):
        if not (isinstance(node, ast.If) and later(call, node)) or _contains(node, call):
            continue
        if not node.body or not isinstance(node.body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break)):
            continue
        if analyzer.failed_branch(node) is not None:
            return True
        test = node.test.operand if isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not) else None
        if isinstance(test, ast.Name) and _bound_to_claim(test.id, node, caller, facts, analyzer):
            return True
    return False


def _bound_to_claim(name: str, before: ast.AST, caller: FunctionNode, facts: ModuleFacts,
                    analyzer: ClaimAnalyzer) -> bool:
    """``name = [await] helper(...)`` where the helper returns whether its conditional write won
    (``return result.rowcount == 1``): a lease taken by row count."""
    for node in function_nodes(caller, facts):
        if not (isinstance(node, ast.Assign) and later(before, node) and name in
                [n for t in node.targets for n in target_names(t)]):
            continue
        value = unwrap(node.value)
        if not isinstance(value, ast.Call):
            continue
        target = analyzer._helper_target(value)
        if target is not None and _returns_row_count(target[0]):
            return True
    return False


def _returns_row_count(function: FunctionNode) -> bool:
    for node in ast.walk(function):
        if isinstance(node, ast.Return) and node.value is not None and any(
                isinstance(n, ast.Attribute) and n.attr == "rowcount" for n in ast.walk(node.value)):
            return True
    return False


#: Prefilter words for a state test followed by a write of that state: the field word, then how the write is
#: persisted (``save(``, a commit, a store method ``.update_x(``/``.save_x(``, a flag set to True).
_STATE_TRIGGER_WORDS = (b"status", b"state", b"sent", b"notified", b"alerted", b"mailed", b"reminded", b"processed",
                        b"published", b"delivered", b"redeemed", b"consumed", b"used")
_STATE_WRITE_WORDS = (b"save(", b"commit(", b".update_", b".save_", b".put_", b".store_", b"= True")
# A state field is an attribute or a key named by the word, alone or joined with ``_`` (``.used``,
# ``.is_used``, ``.used_at``, ``"notified_at"``): the word after a dot, an underscore or a quote, not in
# prose or in ``unused``.
CHECK_THEN_ACT_TRIGGERS = tuple((b"if ", joiner + word, write) for word in _STATE_TRIGGER_WORDS
                                for joiner in (b".", b"_", b'"', b"'") for write in _STATE_WRITE_WORDS)
#: Prefilter: an equality test, a return, and the consuming call as it is usually spelled.
CONSUME_TRIGGERS = tuple((b"==", b"return", word) for word in (b"delete(", b"remove", b"consume", b"invalidate"))


@register
class UnclaimedRowPickup(Rule):
    code = "OG302"
    name = "unclaimed-row-pickup"
    summary = "a worker selects rows by status and updates them without claiming them first"
    triggers = orm.ROW_PICKUP_TRIGGERS + CHECK_THEN_ACT_TRIGGERS + CONSUME_TRIGGERS
    skips_tests = True
    skips_migration_code = True

    def check(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        if _single_process(facts):
            return
        reported: Set[int] = set()
        for function in facts.functions:
            for pickup in _pickups(function, facts):
                write = self._orm_write(pickup, function, facts)
                if write is None or self._orm_claimed(pickup, function, facts):
                    continue
                if pickup.node.lineno in reported or _only_writes_rows(pickup, function, facts) or runs_claimed(
                        function, facts):
                    continue  # (``(await session.scalars(...)).all()``: the awaited call and the chain are one pickup)
                reported.add(pickup.node.lineno)
                yield self._report(pickup, write)
        yield from self._raw_sql(facts)
        for finding in [*self._check_then_act(facts), *self._consumes(facts)]:
            if finding.line not in reported:
                reported.add(finding.line)
                yield finding

    # single-use consume ------------------------------------------------------------------------------------
    def _consumes(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        for guard in facts.ifs:
            for index, statement in enumerate(guard.body):
                if not (isinstance(statement, ast.Expr) and isinstance(unwrap(statement.value), ast.Call)):
                    continue
                call = unwrap(statement.value)
                if not _returns_success(guard.body[index + 1:]) or _matching_guard(statement) is not guard:
                    continue
                function = facts.enclosing_function(guard)
                if function is None or not _deleting_call(call, facts):
                    continue
                if (_function_locks_rows(function, facts, guard.test) or _locked_before(guard.test, function, facts)
                        or runs_claimed(function, facts)):
                    continue
                yield self.finding(
                    call,
                    f"`{short(call, 50)}` consumes the matched single-use entry and success is returned without "
                    f"reading how many rows it deleted: two requests presenting the same code at once (on two "
                    f"replicas) both match it, both delete, and both succeed.",
                    "Make the delete the check: run it as one conditional statement and succeed only when it "
                    "removed a row (`DELETE ... WHERE id = :id` with `rowcount == 1`, Django "
                    "`filter(pk=...).delete()[0] == 1`), or lock the row (`SELECT ... FOR UPDATE`) before comparing.",
                )

    # check-then-act on one row ----------------------------------------------------------------------------
    def _check_then_act(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        # One finding per row field per function: the write followed by the work it guards, when there is one.
        best: dict = {}
        for guard in facts.ifs:
            reads = _state_reads(guard.test)
            if not reads:
                continue
            function = facts.enclosing_function(guard)
            if function is None:
                continue
            region = _region(guard, function, facts)
            for read in reads:
                key = (id(function), read.path, read.field)
                if key in best and best[key][3]:
                    continue
                for write in _state_writes(read, region, function, facts):
                    if not _guard_matches_write(read, guard, write):
                        continue
                    effects = _effects(region, write, read.path, facts)
                    stored = _persist_call(write, read.path, region) or write.node
                    after = [e for e in effects if later(e, stored) and _reaches(write.node, e)]
                    before = [e for e in effects if not later(e, write.node)]
                    if not after and not (_words(read.field) & _SENT_WORDS or _rows_source(
                            _root(read.path), guard, function, facts) is not None):
                        # Work done before a status is written (``if status != EXITED: reap(); status = EXITED``)
                        # is the job finishing; only a send-once flag or a row from a shared selection makes
                        # acting first a duplicate.
                        before = []
                    if not (after or before):
                        continue
                    if key not in best or (after and not best[key][3]):
                        best[key] = (guard, read, write, after, before, function)
                    if after:
                        break
        for guard, read, write, after, before, function in best.values():
            if (_function_locks_rows(function, facts, guard.test) or _locked_before(guard.test, function, facts)
                    or runs_claimed(function, facts)):
                continue
            source = _rows_source(_root(read.path), guard, function, facts)
            if source is not None and _source_locks(source, facts):
                continue
            yield self._report_check_then_act(read, write, after or before, bool(after), source)

    def _report_check_then_act(self, read: StateRead, write: StateWrite, effects: List[ast.Call],
                               acts_after: bool, source: Optional[ast.AST]) -> Diagnostic:
        effect = effects[0]
        field = f"{read.path}.{read.field}" if isinstance(read.node, ast.Attribute) else short(read.node, 50)
        if source is not None:
            where = source.value if isinstance(source, ast.Assign) else source
            hazard = (f"The rows selected here are each tested on `{field}` (line {read.node.lineno}), acted on "
                      f"(`{short(effect, 40)}`, line {effect.lineno}) and marked on line {write.node.lineno}, with no "
                      f"claim: two replicas running this select the same rows, both pass the test and both act.")
        elif acts_after:
            where = write.node
            hazard = (f"`{field}` is tested on line {read.node.lineno} and this write moves the row on without a "
                      f"condition, then `{short(effect, 40)}` (line {effect.lineno}) does the work: two replicas (or "
                      f"a retried job) both read the old state, both write the new one and both do the work.")
        else:
            where = read.node
            hazard = (f"`{field}` is tested here, `{short(effect, 40)}` (line {effect.lineno}) acts, and only then "
                      f"line {write.node.lineno} records it: two replicas both pass this test before either "
                      f"records, and both act.")
        suggestion = (f"Claim the transition before acting: a conditional update that moves `{read.field}` from the "
                      f"old value to the new one and acts only when it changed one row (Django "
                      f"`filter(pk=..., {read.field}=<old>).update({read.field}=<new>) == 1`, SQL `UPDATE ... WHERE "
                      f"id = ... AND {read.field} = <old>` with the row count read), or read the row with "
                      f"`select_for_update()` inside the transaction and test it there.")
        return self.finding(where, hazard, suggestion)

    # ORM ----------------------------------------------------------------------------------------------------
    def _orm_write(self, pickup: Pickup, function: FunctionNode, facts: ModuleFacts) -> Optional[ast.AST]:
        rows = _loop_rows(pickup, function, facts)
        if not rows:
            return None
        changed = False
        for node in function_nodes(function, facts):
            if not (hasattr(node, "lineno") and later(node, pickup.node)):
                continue
            if isinstance(node, (ast.Assign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in rows
                       for t in targets):
                    changed = True
                continue
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            method, receiver = node.func.attr, node.func.value
            if pickup.framework == "django":
                if method in orm.DJANGO_INSTANCE_WRITES and isinstance(receiver, ast.Name) and receiver.id in rows:
                    return node
                if method in orm.DJANGO_QUERYSET_WRITES and names_in(node) & rows and django_queryset(node) is not None:
                    if not _django_status_filter(django_queryset(node)[1]):
                        return node
            else:
                if not _session_matches(pickup.session, receiver):
                    continue
                if method in orm.SA_FLUSH and changed:
                    return node
                if method == orm.SA_DELETE and node.args and names_in(node.args[0]) & rows:
                    return node
                if method == "execute" and node.args and names_in(node.args[0]) & rows:
                    statement = _sa_update(node.args[0], facts)
                    if statement is not None and not _sa_status_condition(statement):
                        return node
        return None

    def _orm_claimed(self, pickup: Pickup, function: FunctionNode, facts: ModuleFacts) -> bool:
        """A conditional transition whose result is checked:
        ``filter(pk=…, status=…).update(…)`` / ``update(M).where(…, M.status == …)``; or each row read again
        under a row lock before it is written (``o = M.objects.select_for_update().get(pk=o.pk)``)."""
        if _reread_locked(_loop_rows(pickup, function, facts), pickup.node, function, facts):
            return True
        for node in function_nodes(function, facts):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if pickup.framework == "django" and node.func.attr in ("update", "aupdate"):
                queryset = django_queryset(node)
                if queryset is not None and _django_status_filter(queryset[1]) and result_tested(node, facts):
                    return True
            if pickup.framework == "sqlalchemy" and node.func.attr == "execute" and node.args:
                links = _sa_update(node.args[0], facts)
                if links is not None and _sa_status_condition(links) and result_tested(node, facts):
                    return True
        return False

    def _report(self, pickup: Pickup, write: ast.AST) -> Diagnostic:
        model = pickup.model.rsplit(".", 1)[-1]
        hazard = (f"`{short(pickup.node, 60)}` picks {model} rows by `{pickup.column}` and `{short(write, 40)}` on "
                  f"line {write.lineno} updates them without claiming them: two replicas running this select the same "
                  f"rows and both process them.")
        field = pickup.column.split("__")[0]
        if pickup.framework == "django":
            suggestion = (f"Claim the rows: inside `transaction.atomic()` select them with "
                          f"`{model}.objects.select_for_update(skip_locked=True).filter(...)`, or move each row with a "
                          f"conditional update `{model}.objects.filter(pk=row.pk, {field}=<pending>).update({field}="
                          f"<running>)` and process it only when that returns 1.")
        else:
            suggestion = (f"Claim the rows: select them with `.with_for_update(skip_locked=True)` in the transaction "
                          f"that updates them, or move each row with `session.execute(update({model}).where("
                          f"{model}.id == row.id, {model}.{field} == <pending>).values({field}=<running>))` and "
                          f"process it only when `rowcount == 1`.")
        return self.finding(pickup.node, hazard, suggestion)

    # raw SQL ---------------------------------------------------------------------------------------------
    def _raw_sql(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        for executions in _sql_by_function(facts):
            for select in executions:
                if select.sql.statement_types != ("SelectStmt",) or select.sql.for_update:
                    continue
                statement = parse_statements(select.text)[0]
                column = _sql_status_column(statement.whereClause, pickup=True)
                tables = _tables(statement.fromClause)
                if column is None or len(tables) != 1:
                    continue
                table = next(iter(tables))
                writes = [e for e in executions if later(e.call, select.call) and _writes_table(e, table)]
                if not writes:
                    continue
                if any(_sql_status_column(parse_statements(w.text)[0].whereClause) and _sql_result_checked(w, facts)
                       for w in writes):
                    continue
                write = writes[0]
                yield self.finding(
                    select.call,
                    f"The SELECT here picks `{table}` rows by `{column}` and the statement on line {write.call.lineno} "
                    f"updates them without claiming them: two replicas running this select the same rows and both "
                    f"process them.",
                    f"Claim the rows: add `FOR UPDATE SKIP LOCKED` to this SELECT and update them in the same "
                    f"transaction, or claim with one statement (`UPDATE {table} SET {column} = 'running' WHERE id IN "
                    f"(SELECT id FROM {table} WHERE {column} = 'pending' LIMIT 10 FOR UPDATE SKIP LOCKED) RETURNING "
                    f"id`), or move each row with `UPDATE {table} SET … WHERE id = :id AND {column} = 'pending'` and "
                    f"act only when a row changed.",
                )


def _sa_update(node: ast.AST, facts: ModuleFacts):
    """Links of ``update(Model).where(...).values(...)`` (through one name binding), else None."""
    node = unwrap(node)
    if isinstance(node, ast.Name):
        value = bound_value(node, facts)
        if value is None:
            return None
        node = unwrap(value)
    head, links = chain(node)
    if isinstance(head, ast.Call) and facts.callee(head) in orm.SA_UPDATE:
        return links
    return None


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


# -- check-then-act on one row's state ---------------------------------------------------------------------------
#: Words of a field that records how far a row has got: ``status``, ``last_state``, ``reminder_sent``,
#: ``alerted_at``, ``is_used``.
_STATE_WORDS = frozenset({
    "status", "state", "sent", "notified", "alerted", "mailed", "emailed", "reminded", "processed", "published",
    "delivered", "handled", "claimed", "submitted", "redeemed", "consumed", "used", "done",
})
#: Words of a flag that, once set, stops a mail or notification going out again.
_SENT_WORDS = frozenset({"sent", "notified", "alerted", "mailed", "emailed", "reminded"})
#: Methods that persist an instance already changed in Python (not themselves an effect of the work).
_PERSIST_METHODS = frozenset({"save", "asave", "add", "commit", "flush", "merge", "refresh_from_db", "refresh"})
#: Calls whose effect stays with the request being answered (a flash message for the next page).
_REQUEST_LOCAL_MODULES = ("django.contrib.messages",)
#: Method-name beginnings of a project's read and write-back of a whole record (``get_backfill`` /
#: ``update_backfill``, ``update_event_by_id``).
_LOAD_PREFIXES = ("get", "load", "fetch", "find", "read")
_STORE_PREFIXES = ("update", "save", "put", "store", "upsert", "replace", "write")
#: Query methods that only read.
_READ_METHODS = frozenset({
    "get", "filter", "exclude", "first", "last", "exists", "count", "values", "values_list", "all", "only",
    "select_related", "prefetch_related", "order_by", "aget", "afirst", "acount", "aexists", "scalar", "scalars",
    "one", "one_or_none", "get_object_or_404",
})


def _words(name: str) -> Set[str]:
    return set(name.lower().split("_"))


def _state_field(name: str) -> bool:
    return bool(name) and not name[0].isupper() and (status_column(name) or bool(_words(name) & _STATE_WORDS))


#: ``a.b.c`` for a chain of names and attributes only (no calls): the same reading as OG301's.
_path = plain_name


def _root(path: str) -> str:
    return path.split(".", 1)[0]


@dataclass
class StateRead:
    node: ast.AST  # the read: ``obj.status`` / ``obj.meta.get("alerted_at")``
    path: str  # the object holding the field: ``obj`` / ``obj.meta``
    field: str


def _state_reads(test: ast.AST) -> List[StateRead]:
    reads = []
    for node in ast.walk(test):
        path = field = None
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and _state_field(node.attr):
            above = parent(node)
            if isinstance(above, ast.Call) and above.func is node:
                continue
            path, field = _path(node.value), node.attr
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            path, field = _path(node.func.value), node.args[0].value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(
                node.slice.value, str):
            path, field = _path(node.value), node.slice.value
        if path is None or not _state_field(field or "") or _root(path)[:1].isupper():
            continue
        if _compared_to_a_value(node, path):
            reads.append(StateRead(node, path, field))
    return reads


def _compared_to_a_value(read: ast.AST, path: str) -> bool:
    """The read is tested for truth or compared with a constant (or another field of the same row), not with a
    value from elsewhere (``token.state != request_state`` checks a caller's input)."""
    above = parent(read)
    if isinstance(above, ast.Compare):
        others = [above.left] + list(above.comparators)
        others = [o for o in others if o is not read]
        return all(_is_constant(o) or (isinstance(o, ast.Constant)) or (
            _path(o) is not None and _root(_path(o)) == _root(path)) for o in others)
    return isinstance(above, (ast.UnaryOp, ast.BoolOp, ast.If))


def _bails(body: List[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _end(node: ast.AST):
    return (node.end_lineno or node.lineno, node.end_col_offset or 0)


def _region(guard: ast.If, function: FunctionNode, facts: ModuleFacts) -> List[ast.AST]:
    """What runs because the test passed: the rest of the function after an ``if ...: return`` guard, or the
    ``if`` body."""
    if _bails(guard.body) and not guard.orelse:
        end = _end(guard)
        loop = _enclosing_loop(guard, function)
        inside = None
        if loop is not None and isinstance(guard.body[-1], (ast.Continue, ast.Break)):
            inside = {id(n) for n in ast.walk(loop)}  # ``continue`` skips to the next row, not past the loop
        return [n for n in function_nodes(function, facts)
                if hasattr(n, "lineno") and (n.lineno, n.col_offset) > end and (inside is None or id(n) in inside)]
    if _bails(guard.body):
        return []
    return [n for statement in guard.body for n in [statement, *walk_no_nested_functions(statement)]]


def _enclosing_loop(node: ast.AST, function: FunctionNode) -> Optional[ast.AST]:
    for above in ancestors(node):
        if above is function:
            return None
        if isinstance(above, (ast.For, ast.AsyncFor, ast.While)):
            return above
    return None


@dataclass
class StateWrite:
    node: ast.AST  # the assignment or the store call
    persisted: bool
    value: Optional[ast.AST] = None  # the state written, when one value is visible


def _state_writes(read: StateRead, region: List[ast.AST], function: FunctionNode,
                  facts: ModuleFacts) -> Iterable[StateWrite]:
    root = _root(read.path)
    for node in region:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Attribute):
                path, field = _path(target.value), target.attr
            elif isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant):
                path, field = _path(target.value), target.slice.value
            else:
                continue
            if path != read.path or field != read.field or not _is_constant(node.value):
                continue
            if _persisted_after(node, path, region, function, facts):
                yield StateWrite(node, True, node.value)
            elif (bool(_words(field) & _SENT_WORDS) and isinstance(node.value, ast.Constant)
                    and node.value.value is True and "." in path and root != "self"):
                yield StateWrite(node, False, node.value)  # a send-once flag of a settings store, written on assignment
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr.lower().startswith(_STORE_PREFIXES):
            arguments = list(node.args) + [k.value for k in node.keywords]
            if not any(root in names_in(a) for a in arguments):
                continue
            keys = {k.arg for k in node.keywords} | {k.arg for n in arguments for k in ast.walk(n) if isinstance(k, ast.keyword)} | {
                key.value for n in arguments for d in ast.walk(n) if isinstance(d, ast.Dict)
                for key in d.keys if isinstance(key, ast.Constant)}
            if read.field in keys:
                yield StateWrite(node, True, _keyed_value(node, read.field))
            elif any(isinstance(a, ast.Name) and a.id == root for a in node.args) and _loaded_by_same_store(
                    root, node, read.node, function, facts):
                yield StateWrite(node, True)


def _keyed_value(call: ast.Call, field: str) -> Optional[ast.AST]:
    for node in ast.walk(call):
        if isinstance(node, ast.keyword) and node.arg == field:
            return node.value
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == field:
                    return value
    return None


def _same(a: ast.AST, b: ast.AST) -> bool:
    return ast.dump(a, annotate_fields=False) == ast.dump(b, annotate_fields=False)


def _guard_matches_write(read: StateRead, guard: ast.If, write: StateWrite) -> bool:
    """The test asks whether the transition the write makes is still to be made: it lets through only the
    old state (``status == PENDING`` / ``if status != PENDING: return``) and the write moves to another one,
    or it stops when the new state is already there (``if state in (SENT, SENDING): raise`` before writing
    SENDING; ``if not sent:`` before ``sent = True``).  A test that only stops on some other state (``if
    status == STOPPED: return`` before writing SUCCESS) is a cancellation check, not a dedupe."""
    if write.value is None:
        return True  # the whole record written back: the state it carries is not visible
    must_hold = not (_bails(guard.body) and not guard.orelse)
    condition: ast.AST = read.node
    above = parent(condition)
    if isinstance(above, ast.Compare):
        condition = above
    path = []
    node = condition
    while node is not guard.test:
        node = parent(node)
        if node is None or not isinstance(node, ast.expr):
            return False
        path.append(node)
    # Polarity from the top of the test down: each ``not`` flips what the read must be for the guarded code
    # to run.  ``and``/``or`` keep it: the other operands only add cases (``if meta and meta.get(k) == v:
    # continue`` still skips the rows already marked).
    for above in path:
        if isinstance(above, ast.UnaryOp) and isinstance(above.op, ast.Not):
            must_hold = not must_hold
    if condition is read.node:
        # ``if not obj.sent:`` lets through a falsy flag, which the write must make truthy.
        written = write.value.value if isinstance(write.value, ast.Constant) else True
        return bool(written) != must_hold
    if len(condition.ops) != 1:
        return False
    op = condition.ops[0]
    other = condition.comparators[0] if condition.left is read.node else condition.left
    values = list(other.elts) if isinstance(other, (ast.Tuple, ast.List, ast.Set)) else [other]
    equal = isinstance(op, (ast.Eq, ast.In, ast.Is))
    if not isinstance(op, (ast.Eq, ast.In, ast.Is, ast.NotEq, ast.NotIn, ast.IsNot)):
        return False
    written_listed = any(_same(write.value, v) for v in values)
    # Passing requires state in values (equal == must_hold): the write must move to a value not listed.
    # Passing requires state not in values: the write must move to one of them.
    return (not written_listed) if equal == must_hold else written_listed


def _reaches(write: ast.AST, node: ast.AST) -> bool:
    """Whether ``node`` (after ``write``) can run after it: not when the block holding the write ends in a
    ``return``/``raise`` before reaching ``node``."""
    child = write
    for above in ancestors(write):
        if isinstance(above, ast.If) and _contains(above, node):
            in_body = any(_contains(s, child) for s in above.body)
            if in_body != any(_contains(s, node) for s in above.body):
                return False  # the other branch of an ``if`` the write is in
        if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef)):
            break
        child = above
    statement = write
    while not isinstance(statement, ast.stmt):
        statement = parent(statement)
    block = parent(statement)
    for field in ("body", "orelse", "finalbody", "handlers"):
        statements = getattr(block, field, None)
        if isinstance(statements, list) and any(s is statement for s in statements):
            rest = statements[[i for i, s in enumerate(statements) if s is statement][0] + 1:]
            for index, following in enumerate(rest):
                if isinstance(following, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
                    return any(_contains(s, node) for s in rest[:index + 1])
            return True
    return True


def _persist_call(write: StateWrite, path: str, region: List[ast.AST]) -> Optional[ast.AST]:
    """The ``obj.save()`` / commit that stores an assigned state (work prepared before it is not after it)."""
    if not isinstance(write.node, ast.Assign):
        return None
    for node in region:
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and later(node, write.node)
                and node.func.attr in _PERSIST_METHODS and (
                    _path(node.func.value) == path or any(_path(a) == path for a in node.args)
                    or node.func.attr in orm.SA_FLUSH)):
            return node
    return None


def _persisted_after(assign: ast.AST, path: str, region: List[ast.AST], function: FunctionNode,
                     facts: ModuleFacts) -> bool:
    """``obj.save()`` / ``session.add(obj)`` after the change, or a commit of the session ``obj`` was loaded
    through."""
    for node in region:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and later(node, assign)):
            continue
        method = node.func.attr
        if method in ("save", "asave") and _path(node.func.value) == path:
            return True
        if method in ("add", "merge") and any(_path(a) == path for a in node.args):
            return True
        if method in orm.SA_FLUSH and _sa_loaded(_root(path), function, facts):
            return True
    return False


def _sa_loaded(name: str, function: FunctionNode, facts: ModuleFacts) -> bool:
    for node in function_nodes(function, facts):
        if isinstance(node, ast.Assign) and name in [n for t in node.targets for n in target_names(t)]:
            if sa_source(node.value, facts, many=False) is not None:
                return True
    return False


def _loaded_by_same_store(name: str, store: ast.Call, before: ast.AST, function: FunctionNode,
                          facts: ModuleFacts) -> bool:
    """``row = repo.get_x(...)`` ... ``repo.update_x(row)``: the whole record read and written back through
    the same object."""
    receiver = _path(store.func.value)
    if receiver is None:
        return False
    for node in function_nodes(function, facts):
        if not (isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and later(before, node)
                and name in [n for t in _targets(node) for n in target_names(t)]):
            continue
        for call in ast.walk(node.value):
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and call.func.attr.lower().startswith(_LOAD_PREFIXES) and _path(call.func.value) == receiver):
                return True
    return False


def _targets(node: ast.AST) -> List[ast.AST]:
    return node.targets if isinstance(node, ast.Assign) else [node.target]


def _effects(region: List[ast.AST], write: StateWrite, path: str, facts: ModuleFacts) -> List[ast.Call]:
    """Calls that do the work the state guards (send, enqueue, convert, submit): calls made for what they do
    (their result dropped) or that hand the row to other code, not the write and its save, not logging or
    an audit-log entry, and not what only computes a value for a test or an argument."""
    skipped: Set[int] = {id(n) for n in ast.walk(write.node)}
    effects = []
    for node in region:
        if id(node) in skipped or not isinstance(node, ast.Expr):
            continue
        call = unwrap(node.value)
        if not isinstance(call, ast.Call) or id(call) in skipped or is_log_call(call):
            continue
        name = call_name(call) or ""
        receiver = _path(call.func.value) if isinstance(call.func, ast.Attribute) else None
        if name in _PURE_CALLS or name.lower().startswith("log") or name in _READ_METHODS:
            continue
        if receiver is not None and "log" in receiver.lower():
            continue  # a logger or metrics client (``stats_logger.incr``)
        if (facts.callee(call) or "").startswith(_REQUEST_LOCAL_MODULES):
            continue
        if name in _PERSIST_METHODS and (receiver == path or receiver is None or _is_session_like(call)):
            continue
        effects.append(call)
    return effects


def _is_session_like(call: ast.Call) -> bool:
    """``session.commit()`` / ``db.session.flush()`` / ``session.add(row)``: persisting, not work."""
    return isinstance(call.func, ast.Attribute) and call.func.attr in _PERSIST_METHODS and call.func.attr != "save"


def _function_locks_rows(function: FunctionNode, facts: ModuleFacts, before: Optional[ast.AST] = None) -> bool:
    """A row lock taken (before ``before``, when given), or a conditional transition whose result is read."""
    for node in function_nodes(function, facts):
        if not isinstance(node, ast.Call):
            continue
        if before is not None and later(node, before) and call_name(node) not in ("update", "aupdate", "execute"):
            continue
        name = call_name(node)
        if name in (orm.DJANGO_ROW_LOCK, orm.SA_ROW_LOCK):
            return True
        if any(k.arg in orm.ROW_LOCK_KEYWORDS and not _falsy(k.value) for k in node.keywords):
            return True
        if name in ("update", "aupdate") and django_queryset(node) is not None and _django_status_filter(
                django_queryset(node)[1]) and result_tested(node, facts):
            return True
        if name == "execute" and node.args:
            links = _sa_update(node.args[0], facts)
            if links is not None and _sa_status_condition(links) and result_tested(node, facts):
                return True
    return False


def _falsy(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and not node.value


def _rows_source(name: str, guard: ast.AST, function: FunctionNode, facts: ModuleFacts) -> Optional[ast.AST]:
    """When ``name`` is the target of a loop around ``guard``: the statement that selected what it iterates
    (``rows = repo.due(...)``; ``for row in rows``), else the loop's own iterable."""
    for above in ancestors(guard):
        if above is function:
            return None
        if isinstance(above, (ast.For, ast.AsyncFor)) and name in target_names(above.target):
            iterated = unwrap(above.iter)
            source: ast.AST = above.iter
            if isinstance(iterated, ast.Name):
                for node in function_nodes(function, facts):
                    if isinstance(node, ast.Assign) and later(above, node) and iterated.id in [
                            n for t in node.targets for n in target_names(t)]:
                        source = node
            return source
    return None


def _source_locks(source: ast.AST, facts: ModuleFacts) -> bool:
    """The rows come from a project function that selects them under a row lock."""
    for call in ast.walk(source):
        if not isinstance(call, ast.Call):
            continue
        if call_name(call) in (orm.DJANGO_ROW_LOCK, orm.SA_ROW_LOCK):
            return True
        found = ClaimAnalyzer.of_module(facts, _resolver if facts.context.cross_file else None)._helper_target(call)
        if found is not None:
            target, analyzer = found
            if _function_locks_rows(target, analyzer.facts) or any(
                    "FOR UPDATE" in (s.value.upper() if isinstance(s.value, str) else "")
                    for s in ast.walk(target) if isinstance(s, ast.Constant)):
                return True
    return False


# -- single-use consumes that ignore the row count -------------------------------------------------------------
#: Library callables that build a DELETE statement (``session.execute(delete(Code).where(...))``).
_SA_DELETE_BUILDERS = frozenset({"sqlalchemy.delete", "sqlalchemy.sql.delete", "sqlalchemy.sql.expression.delete",
                                 "sqlmodel.delete"})


def _matching_guard(statement: ast.stmt) -> Optional[ast.If]:
    """The innermost ``if`` around ``statement`` whose passing branch holds it and whose test compares a
    presented value with a stored one (``tan == hash(otp, salt)``, ``compare_digest(a, b)``)."""
    for above in ancestors(statement):
        if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        if isinstance(above, ast.If) and any(_contains(s, statement) for s in above.body):
            test = above.test
            if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq) and not (
                    _is_constant(test.comparators[0]) or _is_constant(test.left)):
                return above
            if isinstance(test, ast.Call) and call_name(test) in ("compare_digest", "constant_time_compare"):
                return above
            return None
    return None


def _deleting_call(call: ast.Call, facts: ModuleFacts, depth: int = 0) -> bool:
    """The call deletes stored rows: a Django ``.delete()``, ``session.delete(obj)``, ``delete(Model)`` run,
    SQL ``DELETE``, or a project function (a method found through the class's bases too) that does one of
    these and returns nothing."""
    name = call_name(call)
    if name in ("delete", "adelete"):
        return True
    if any(isinstance(n, ast.Call) and facts.callee(n) in _SA_DELETE_BUILDERS for n in ast.walk(call)):
        return True
    if depth >= 2:
        return False
    found = _resolve_method(call, facts)
    if found is None:
        return False
    function, foreign = found
    if any(isinstance(n, ast.Return) and n.value is not None for n in walk_no_nested_functions(function)):
        return False  # it reports something back (a count, a flag): the caller may act on it
    for node in walk_no_nested_functions(function):
        if isinstance(node, ast.Call) and (foreign.callee(node) in _SA_DELETE_BUILDERS or (
                call_name(node) in ("delete", "adelete") and not node.args)):
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lstrip().upper().startswith(
                "DELETE "):
            return True
    return False


def _resolve_method(call: ast.Call, facts: ModuleFacts):
    """The ``def`` a call reaches: a module function, ``self.method`` in the class or (CLI) its bases in the
    project, or an imported function."""
    func = call.func
    analyzer = ClaimAnalyzer.of_module(facts, _resolver if facts.context.cross_file else None)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        cls = facts.enclosing_class(call)
        if cls is None:
            return None
        return _method_in_class(cls, func.attr, facts, 0)
    found = analyzer._helper_target(call)
    return (found[0], found[1].facts) if found is not None else None


def _method_in_class(cls: ast.ClassDef, name: str, facts: ModuleFacts, depth: int):
    for statement in cls.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == name:
            return statement, facts
    if depth >= 4 or not facts.context.cross_file:
        return None
    for base in cls.bases:
        qualified = facts.qualify(base) or ""
        module, _, class_name = qualified.rpartition(".")
        path = project.module_path(module, project.roots_for(facts))
        foreign = project.module_facts(path, facts.config) if path else None
        if foreign is None:
            continue
        for statement in foreign.tree.body:
            if isinstance(statement, ast.ClassDef) and statement.name == class_name:
                found = _method_in_class(statement, name, foreign, depth + 1)
                if found is not None:
                    return found
    return None


def _returns_success(statements: List[ast.stmt]) -> bool:
    """The next statement reports success: ``return True`` / ``return 1`` / ``return <value>``."""
    for statement in statements:
        if isinstance(statement, ast.Expr) and (is_log_call(statement.value) or (
                isinstance(unwrap(statement.value), ast.Call) and call_name(unwrap(statement.value)) in orm.SA_FLUSH)):
            continue  # logging, or the commit that makes the delete stick
        if isinstance(statement, ast.Return) and statement.value is not None:
            value = statement.value
            return not (isinstance(value, ast.Constant) and not value.value)
        return False
    return False
