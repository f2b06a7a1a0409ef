"""OG603 unguarded start-up seeding: start-up code that every replica runs reads whether seed rows exist
and inserts the missing ones with nothing that makes the insert safe to race.

Replicas that boot together both read "no admin user" / "these config keys are missing", both insert;
the loser's start-up dies on the unique constraint (or retries forever), or, where no constraint applies,
the rows are duplicated.

What counts as evidence:

- the check: an ``if`` whose test reads rows of a model, directly (``Model.objects.filter(...).exists()``)
  or through names bound in the same function (``existing = {r[0] for r in (await db.execute(select(Model.key))).all()}``);
- the insert: a write that creates a row of the *same* model, in the ``if`` or in the functions of the
  project it calls there (``Model.objects.create``/``create_superuser``/``bulk_create``, ``session.add(Model(...))``,
  ``session.add_all([...])``, ``Model(...).save()``, ``insert(Model)``);
- start-up: the code runs at every replica's start-up as the project's own start-up reach says (framework
  hooks, lifespan, ``AppConfig.ready``, a server's ``__main__`` block, and callers in other modules).

Silent: an insert whose IntegrityError is handled, ``ON CONFLICT``/``ignore_conflicts``/``get_or_create``
(no plain insert at all), work under an advisory lock or a row claim, seeding in migrations, management
commands and scripts, and check-then-insert in request or job code (per-request data, not start-up).
"""
from __future__ import annotations

import ast
from typing import Dict, Iterable, Iterator, List, Optional, Set, Tuple

from ..analysis.facts import FunctionNode, ModuleFacts, ancestors, statement_list, walk, walk_no_nested_functions
from ..model import Diagnostic, Related
from .registry import register
from ..project.reach import runs_function
from .base import Rule

#: Manager methods that insert a row (Django).
_MANAGER_CREATES = frozenset({
    "create", "acreate", "bulk_create", "abulk_create", "create_user", "create_superuser",
    "acreate_user", "acreate_superuser",
})
#: Django's ``call_command`` and the commands that insert a fixture's rows (by primary key: two at once collide).
_COMMAND_RUNNERS = frozenset({"django.core.management.call_command"})
_FIXTURE_LOADS = frozenset({"loaddata"})
#: What a fixture load inserts: rows of the models its file names, which the code does not show.
FIXTURE_ROWS = "*"
#: Reads through a manager or a session whose rows the ``if`` then tests.
_QUERY_BUILDERS = frozenset({"select", "query"})
_SESSION_ADDS = frozenset({"add", "add_all"})
#: Calls one of which a read of rows makes: a query builder, ``session.get``, the end of a manager chain.
_ROW_READ_CALLS = tuple(_QUERY_BUILDERS | {
    "get", "aget", "filter", "exclude", "filter_by", "exists", "aexists", "first", "afirst", "last", "alast",
    "count", "acount", "all", "values", "values_list", "in_bulk", "aggregate", "scalar", "scalars", "execute",
    "one", "one_or_none", "fetch", "fetchrow", "fetchval", "get_or_none",
})
#: What handling the loser's duplicate looks like.
_DUPLICATE_ERRORS = frozenset({"IntegrityError", "UniqueViolation", "UniqueViolationError", "UniqueConstraintError"})
#: Row claims: the read locks what the insert depends on.
_CLAIM_METHODS = frozenset({"select_for_update", "with_for_update"})
_ADVISORY_TEXT = "advisory"
_CONFLICT_WORDS = ("on_conflict", "ON CONFLICT", "on conflict", "INSERT IGNORE", "OR IGNORE", "prefix_with")
#: Values that differ per replica: a row keyed by one of these is that replica's own (a worker's
#: heartbeat row), so two replicas never insert the same one.
_PER_REPLICA_VALUES = frozenset({"gethostname", "getfqdn", "getpid", "uuid1", "uuid4", "node"})
_DEPTH = 2

_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


# -- models read and written -------------------------------------------------------------------------
def _model_name(node: ast.AST) -> Optional[str]:
    """``Model`` or ``Model.column`` / ``models.Model`` naming a class (an upper-case first letter)."""
    while isinstance(node, ast.Attribute) and not node.attr[:1].isupper():
        node = node.value
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
    if isinstance(name, str) and name[:1].isupper():
        return name
    return None


def _manager_model(node: ast.AST) -> Optional[str]:
    """The model of a Django manager chain (``Model.objects.filter(...).exclude(...)``), or None."""
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            if node.attr == "objects":
                return _model_name(node.value)
            node = node.value
        elif isinstance(node, ast.Await):
            node = node.value
        else:
            return None


_BINDING_KINDS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.comprehension, ast.NamedExpr)


def _bindings(function: Optional[ast.AST], facts: Optional[ModuleFacts] = None) -> Dict[str, List[ast.AST]]:
    """Values bound to each local name in ``function`` (assignments, for-loop targets, with-as)."""
    found: Dict[str, List[ast.AST]] = {}
    if function is None:
        return found

    def bind(target: ast.AST, value: ast.AST) -> None:
        if isinstance(target, ast.Name):
            found.setdefault(target.id, []).append(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                bind(element, value)

    nodes = facts.own_nodes(function, _BINDING_KINDS) if facts is not None else walk_no_nested_functions(function)
    for node in nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                bind(target, node.value)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            bind(node.target, node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            bind(node.target, node.iter)
        elif isinstance(node, ast.NamedExpr):
            bind(node.target, node.value)
    return found


def _bindings_of(function: Optional[ast.AST], facts: ModuleFacts) -> Dict[str, List[ast.AST]]:
    """``_bindings`` once per function and module: every ``if`` of a function asks for the same table."""
    if function is None:
        return {}
    built = facts.cached("og603:bindings", lambda _facts: {})
    key = id(function)
    if key not in built:
        built[key] = _bindings(function, facts)
    return built[key]


def _models_read(expr: ast.AST, bindings: Dict[str, List[ast.AST]], depth: int = 0, seen: Optional[Set[str]] = None) -> Set[str]:
    """Models whose rows ``expr`` reads: a manager chain, ``select(Model...)``/``query(Model...)``,
    ``session.get(Model, key)``, or a local name bound to one of these."""
    seen = set() if seen is None else seen
    models: Set[str] = set()
    for node in walk(expr):
        if isinstance(node, ast.Attribute) and node.attr == "objects":
            name = _model_name(node.value)
            if name:
                models.add(name)
        elif isinstance(node, ast.Call):
            func = node.func
            last = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if last in _QUERY_BUILDERS:
                for argument in node.args:
                    name = _model_name(argument)
                    if name:
                        models.add(name)
            elif last in ("get", "aget") and isinstance(func, ast.Attribute) and node.args:
                name = _model_name(node.args[0]) if isinstance(node.args[0], (ast.Name, ast.Attribute)) else None
                if name:
                    models.add(name)
            elif last in _SQL_SENDS and isinstance(func, ast.Attribute) and node.args:
                models |= _sql_tables(node.args[0], "SelectStmt")  # ``SELECT id FROM roles WHERE name = %s``
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and depth < 4 and node.id not in seen:
            seen.add(node.id)
            for value in bindings.get(node.id, ()):
                models |= _models_read(value, bindings, depth + 1, seen)
    return models


#: Methods that send SQL text (DB-API cursors and connections, asyncpg, SQLAlchemy's ``exec_driver_sql``).
_SQL_SENDS = frozenset({"execute", "exec_driver_sql", "fetch", "fetchrow", "fetchval"})


def _sql_tables(text_node: ast.AST, kind: str) -> Set[str]:
    """The tables a SQL string written out reads (``SelectStmt``: its FROM) or inserts into (``InsertStmt``,
    only without ``ON CONFLICT``): what raw-SQL seeding checks and creates rows of."""
    from ..analysis.sql import parse_statements, sql_nodes

    if not (isinstance(text_node, ast.Constant) and isinstance(text_node.value, str)):
        return set()
    found: Set[str] = set()
    for statement in parse_statements(text_node.value) or ():
        if type(statement).__name__ != kind:
            continue
        if kind == "InsertStmt":
            if getattr(statement, "onConflictClause", None) is None and statement.relation is not None:
                found.add(statement.relation.relname)
            continue
        for node in sql_nodes(getattr(statement, "fromClause", None) or ()):
            if type(node).__name__ == "RangeVar":
                found.add(node.relname)
    return found


def _constructed_model(node: ast.AST, bindings: Dict[str, List[ast.AST]]) -> Optional[str]:
    """``Model(...)``, or a local name bound to it."""
    if isinstance(node, ast.Name):
        for value in bindings.get(node.id, ()):
            if isinstance(value, ast.Call):
                found = _constructed_model(value, {})
                if found:
                    return found
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
        return _model_name(node.func) if _last_is_class(node.func) else None
    return None


def _last_is_class(func: ast.AST) -> bool:
    last = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return last[:1].isupper()


def _inserted_model(call: ast.Call, bindings: Dict[str, List[ast.AST]], facts: ModuleFacts) -> Optional[str]:
    """The model a plain insert creates a row of, or None (not an insert, or one that tolerates the duplicate)."""
    func = call.func
    if (facts.callee(call) or "") in _COMMAND_RUNNERS and call.args and isinstance(call.args[0], ast.Constant) \
            and call.args[0].value in _FIXTURE_LOADS:
        return FIXTURE_ROWS  # ``call_command("loaddata", "initial_plans")``: the fixture's rows, of whatever model
    if not isinstance(func, ast.Attribute):
        if isinstance(func, ast.Name) and func.id == "insert" and call.args and \
                (facts.qualify(func) or "").startswith("sqlalchemy"):
            return _model_name(call.args[0])
        return None
    if func.attr in _SQL_SENDS and call.args:
        inserted = _sql_tables(call.args[0], "InsertStmt")  # ``INSERT INTO roles ...`` (no ON CONFLICT)
        return next(iter(sorted(inserted)), None)
    if func.attr in _MANAGER_CREATES:
        if any(k.arg == "ignore_conflicts" for k in call.keywords):
            return None
        return _manager_model(func.value)
    if func.attr in _SESSION_ADDS and call.args:
        argument = call.args[0]
        if func.attr == "add":
            return _constructed_model(argument, bindings)
        elements: List[ast.AST] = []
        if isinstance(argument, (ast.List, ast.Tuple, ast.Set)):
            elements = list(argument.elts)
        elif isinstance(argument, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            elements = [argument.elt]
        for element in elements:
            found = _constructed_model(element, bindings)
            if found:
                return found
        return None
    if func.attr in ("save", "asave") and not call.args:
        return _constructed_model(func.value, bindings)
    return None


# -- what the if runs ----------------------------------------------------------------------------------
def _local_callee(call: ast.Call, scope: Optional[FunctionNode], facts: ModuleFacts) -> Optional[FunctionNode]:
    """The def of this module a call runs: a nested def of an enclosing function, a module function, or a
    method of the caller's class called on ``self``/``cls``."""
    func = call.func
    if isinstance(func, ast.Name):
        outer = scope
        while outer is not None:
            for statement in outer.body:
                if isinstance(statement, _FUNCTION_TYPES) and statement.name == func.id:
                    return statement
            outer = facts.enclosing_function(outer)
        for statement in facts.tree.body:
            if isinstance(statement, _FUNCTION_TYPES) and statement.name == func.id:
                return statement
        return None
    if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls")
            and scope is not None):
        cls_node = facts.enclosing_class(scope)
        if cls_node is not None:
            for statement in cls_node.body:
                if isinstance(statement, _FUNCTION_TYPES) and statement.name == func.attr:
                    return statement
    return None


def _handles_duplicate(node: ast.AST, stop: Optional[ast.AST], facts: ModuleFacts) -> bool:
    """``node`` sits in a ``try`` that catches the duplicate-key error (below ``stop``), under any name the module
    imports it as."""
    for above in ancestors(node):
        if above is stop:
            return False
        if isinstance(above, ast.Try):
            for handler in above.handlers:
                types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
                for kind in types:
                    name = (facts.qualify(kind) or "").rsplit(".", 1)[-1] if kind is not None else ""
                    if name in _DUPLICATE_ERRORS or getattr(kind, "attr", getattr(kind, "id", "")) in _DUPLICATE_ERRORS:
                        return True
    return False


def _tolerates_conflicts(function: Optional[ast.AST], facts: ModuleFacts) -> bool:
    """The function writes with ``ON CONFLICT`` (or a dialect's ignore), takes an advisory lock, or claims
    rows with ``FOR UPDATE``: the seeding is already made safe to race."""
    if function is None:
        return False
    for node in walk_no_nested_functions(function):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _ADVISORY_TEXT in node.value.lower() or any(w in node.value for w in _CONFLICT_WORDS):
                return True
        elif isinstance(node, ast.Attribute):
            if node.attr in _CLAIM_METHODS or node.attr.startswith("on_conflict") or _ADVISORY_TEXT in node.attr.lower():
                return True
        elif isinstance(node, ast.Name) and _ADVISORY_TEXT in node.id.lower():
            return True
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _SENDS \
                and _handles_duplicate(node, function, facts):
            return True  # ``session.add(row)`` … ``try: session.commit() except IntegrityError:``: the loser skips
    return False


#: What sends the rows a Session was given: the duplicate surfaces there.
_SENDS = frozenset({"commit", "flush", "acommit", "aflush"})


def _under_lock(node: ast.AST) -> bool:
    """Inside ``with <something that locks>:`` in its function (a lock helper the project wrote)."""
    for above in ancestors(node):
        if isinstance(above, _FUNCTION_TYPES + (ast.ClassDef,)):
            return False
        if isinstance(above, (ast.With, ast.AsyncWith)):
            for item in above.items:
                expr = item.context_expr
                target = expr.func if isinstance(expr, ast.Call) else expr
                last = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
                if "lock" in last.lower() or _ADVISORY_TEXT in last.lower():
                    return True
    return False


def _inserts(statements: Iterable[ast.AST], scope: Optional[FunctionNode], facts: ModuleFacts, stop: ast.AST,
             depth: int, seen: Set[int]) -> Iterator[Tuple[str, ast.Call]]:
    """(model, insert call) for each plain insert the statements run, following this module's functions."""
    bindings = _bindings_of(scope, facts)
    for statement in statements:
        for node in walk_no_nested_functions(statement):
            if not isinstance(node, ast.Call):
                continue
            if _handles_duplicate(node, stop, facts):
                continue
            model = _inserted_model(node, bindings, facts)
            if model:
                yield model, node
                continue
            if depth >= _DEPTH:
                continue
            callee = _local_callee(node, scope, facts)
            if callee is None or id(callee) in seen or _tolerates_conflicts(callee, facts):
                continue
            seen.add(id(callee))
            for model, call in _inserts(callee.body, callee, facts, callee, depth + 1, seen):
                yield model, node


# -- start-up reach -------------------------------------------------------------------------------------
#: Why code runs at every replica's start-up, and the calls in other modules that lead there from the
#: start-up code (entry point first).
Reason = Tuple[str, Tuple[Related, ...]]


def _startup_reason_of_function(function: FunctionNode, facts: ModuleFacts, memo: Dict[int, Optional[Reason]]) -> Optional[Reason]:
    """Why ``function`` runs at every replica's start-up, as the project model answers (request and job code
    is not start-up: seeding per request is per-request data), or None."""
    key = id(function)
    if key not in memo:
        memo[key] = None
        answer = runs_function(function, facts, startup_only=True, through_migration_code=False)
        if answer.every_replica:
            reason = answer.reason
            if answer.calls:
                # The message names the start-up code's call; the whole way from there is in ``related``.
                first = answer.calls[0]
                where = (facts.config.relative(first.path) if first.path else "") or first.path
                reason = f"{reason}, via {where}:{first.line}"
            memo[key] = (reason, answer.calls)
    return memo[key]


def _per_replica_key(expr: ast.AST, bindings: Dict[str, List[ast.AST]], depth: int = 0) -> bool:
    """``expr`` (or a local name it uses) takes a value that differs per replica: the host name, the pid,
    a fresh uuid."""
    for node in walk(expr):
        if isinstance(node, ast.Call):
            func = node.func
            last = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if last in _PER_REPLICA_VALUES:
                return True
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and depth < 2:
            if any(_per_replica_key(value, bindings, depth + 1) for value in bindings.get(node.id, ())):
                return True
    return False


def _after_skip(check: ast.If) -> List[ast.stmt]:
    """``if Model.objects.filter(name=n).exists(): continue`` … ``Model.objects.create(name=n)``: an ``if`` that
    leaves when the row is there makes what follows it the missing row's branch (not ``if not rows: return``,
    which leaves when they are missing)."""
    if check.orelse or not check.body or not isinstance(check.body[-1], (ast.Continue, ast.Return, ast.Break)):
        return []
    if not _true_when_present(check.test):
        return []
    siblings = statement_list(check) or []
    return siblings[siblings.index(check) + 1:] if check in siblings else []


def _true_when_present(test: ast.AST) -> bool:
    """The test holds when the rows it reads are there: ``qs.exists()``, ``row``, ``row is not None``, ``n > 0``;
    not ``not row``, ``row is None``, ``n == 0``."""
    present = True
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, present = test.operand, not present
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.comparators[0], ast.Constant):
        op, value = test.ops[0], test.comparators[0].value
        if (isinstance(op, (ast.Is, ast.Eq)) and value in (None, 0, False)) or (isinstance(op, ast.Lt) and value == 1):
            present = not present
    return present


def _innermost(found: List[Tuple[ast.If, str, str]]) -> List[Tuple[ast.If, str, str]]:
    ids = {id(item[0]) for item in found}
    inner = []
    for item in found:
        contains_other = any(
            isinstance(node, ast.If) and node is not item[0] and id(node) in ids for node in walk(item[0])
        )
        if not contains_other:
            inner.append(item)
    return inner


@register
class UnguardedStartupSeeding(Rule):
    code = "OG603"
    name = "unguarded-startup-seeding"
    summary = "start-up code reads whether seed rows exist and inserts the missing ones: replicas booting together both insert"
    triggers = (
        (b".objects", b"create"),
        (b".add(", b"select("),
        (b".add(", b"query("),
        (b".add_all(",),
        (b".save(", b".objects"),
        (b"insert(", b"select("),
        # raw SQL: a SELECT of the rows, then an INSERT INTO the same table
        (b"INSERT INTO", b"SELECT"), (b"insert into", b"select"),
        # a fixture loaded when the rows are missing
        (b"loaddata", b".objects"),
    )
    skips_tests = True
    skips_migration_code = True

    def check(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        if facts.context.is_test or facts.context.is_migration:
            return
        memo: Dict[int, Optional[Reason]] = {}
        # The ``if`` statements of each function's own body (not of a nested def or class), in source
        # order: a function with none is never walked.
        ifs_of: Dict[int, List[ast.If]] = {}
        for statement in facts.ifs:
            for above in ancestors(statement):
                if isinstance(above, _SCOPES):
                    ifs_of.setdefault(id(above), []).append(statement)
                    break
        # Only a function that calls something reading rows can test whether seed rows exist: the others
        # are not walked for their bindings.
        readers = {id(function) for call in facts.calls_named(*_ROW_READ_CALLS)
                   for function in [facts.enclosing_function(call)] if function is not None}
        for function in facts.functions:
            if id(function) not in readers or id(function) not in ifs_of:
                continue
            found: List[Tuple[ast.If, str, str]] = []
            bindings: Optional[Dict[str, List[ast.AST]]] = None
            for node in ifs_of.get(id(function), ()):
                if _under_lock(node):
                    continue
                if bindings is None:
                    bindings = _bindings_of(function, facts)
                read = _models_read(node.test, bindings)
                if not read or _per_replica_key(node.test, bindings):
                    continue
                for model, call in _inserts(node.body + node.orelse + _after_skip(node), function, facts, node, 0,
                                            {id(function)}):
                    if (model in read or model == FIXTURE_ROWS) and not _per_replica_key(call, bindings):
                        found.append((node, model if model in read else sorted(read)[0], ""))
                        break
            if not found or _tolerates_conflicts(function, facts):
                continue
            found_reason = _startup_reason_of_function(function, facts, memo)
            if found_reason is None:
                continue
            reason, path = found_reason
            for node, model, _ in _innermost(found):
                yield self.finding(
                    node,
                    f"start-up seeding checks for `{model}` rows and inserts the missing ones in every replica "
                    f"({reason}), so replicas booting together both insert.",
                    "Replicas booting together both see nothing and both insert, so one start-up fails on the "
                    "unique constraint (or retries forever) or the row is duplicated. Make the insert safe to race: `INSERT ... ON CONFLICT DO NOTHING` (or get_or_create backed by a "
                    "unique constraint, handling IntegrityError); or seed once before the servers start (a data "
                    "migration or a release step); or hold a transaction-scoped advisory lock "
                    "(`pg_advisory_xact_lock`) around the check and the insert.",
                    end_node=node.test,
                    related=path,
                )
