"""Whether a migration run holds a blocking advisory lock on its own connection for the whole run: a lock
taken before it in the same function (or by every caller in the module), on the same connection, not
released before it; an xact lock inside the same transaction block; a lock helper around it; or the
connection handed in by a runner that OG403 checks instead (``config.attributes["connection"]``)."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Set, Tuple

from ..analysis.executed_sql import ExecutedSql, bound_value, executed_sql
from ..analysis.facts import FunctionNode, ModuleFacts, ancestors, call_name, position, walk_no_nested_functions
from ..analysis.names import dotted
from ..knowledge import databases as dbknown
from ..knowledge import schema as known
from . import index as project
from .forwarding import forwarded
from .reach import Reach, enclosing_function
from .schema_writes import is_lock_helper, is_true, keyword_of, with_binding


DJANGO_CONNECTION = "django"  # the connection of Django's migrate: the thread's ``django.db.connection``


@dataclass(frozen=True)
class Apply:
    call: ast.Call
    what: str
    connection: object  # an expression, or DJANGO_CONNECTION
    framework: str
    per_migration_transactions: bool = False
    #: held only where a lock is seen: a caller in another module is not taken to hold one (OG401 reports
    #: the write unless the lock shows; OG403 keeps quiet where it cannot see the runner's callers)
    seen_only: bool = False


def _connection_root(expr: ast.AST, facts: ModuleFacts, depth: int = 0) -> str:
    """A key for the server connection ``expr`` uses: cursors resolve to their connection."""
    if depth > 6:
        return dotted(expr) or ""
    if isinstance(expr, ast.Await):
        return _connection_root(expr.value, facts, depth + 1)
    if isinstance(expr, ast.Subscript):
        return _connection_root(expr.value, facts, depth + 1)
    if (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in dbknown.SAME_HANDLE_METHODS):
        return _connection_root(expr.func.value, facts, depth + 1)
    if isinstance(expr, ast.Name):
        bound = with_binding(expr, facts)
        if bound is None:
            value = bound_value(expr, facts)
            bound = value if isinstance(value, ast.Call) else None
        if (bound is not None and isinstance(bound, ast.Call) and isinstance(bound.func, ast.Attribute)
                and bound.func.attr in dbknown.SAME_HANDLE_METHODS):
            return _connection_root(bound.func.value, facts, depth + 1)
    return facts.qualify(expr) or dotted(expr) or ""



def _is_django_connection(root: str) -> bool:
    return root.startswith("django.db.connection")


def _blocking_locks(facts: ModuleFacts) -> List[Tuple[ExecutedSql, bool]]:
    """(sql, is session lock) for every blocking advisory lock the module sends, and every table lock in a mode
    that conflicts with itself (``LOCK TABLE alembic_version IN ACCESS EXCLUSIVE MODE``): held by the
    transaction, it makes the next runner wait as a transaction-level advisory lock does."""
    found = []
    for item in executed_sql(facts):
        if _self_excluding_table_lock(item):
            found.append((item, False))
            continue
        for advisory in item.sql.advisory:
            function = advisory.function
            if function.is_lock and function.blocking:
                found.append((item, function.session))
                break
    return found


def _self_excluding_table_lock(item: ExecutedSql) -> bool:
    """``LOCK TABLE t`` (ACCESS EXCLUSIVE by default) or in a mode two holders cannot share, waiting for it."""
    if known.LOCK_STATEMENT not in item.sql.statement_types:
        return False
    text = " ".join(item.text.upper().split())
    if known.NO_WAIT in text:
        return False
    return " MODE" not in text or any(mode in text for mode in known.SELF_CONFLICTING_LOCK_MODES)


def _unlocks(facts: ModuleFacts) -> List[ExecutedSql]:
    return [item for item in executed_sql(facts) if any(a.function.unlock for a in item.sql.advisory)]


#: A connection that commits each statement on its own: ``conn.autocommit = True``, ``connect(autocommit=True)``,
#: ``conn.autocommit(True)``, ``set_session(autocommit=True)``, an engine's ``isolation_level="AUTOCOMMIT"``.
_AUTOCOMMIT_WORDS = ("autocommit", "AUTOCOMMIT")
_AUTOCOMMIT_ON = re.compile(rb"autocommit\s*(=\s*|\(\s*)(True|1)\b|AUTOCOMMIT")


class LockFinder:
    _MAX_DEPTH = 4

    def __init__(self, facts: ModuleFacts) -> None:
        self.facts = facts
        self.locks = _blocking_locks(facts)
        self.unlocks = _unlocks(facts)
        self.reach = Reach.of_module(facts)

    def held(self, apply: Apply) -> bool:
        return self._held_at(apply.call, apply.connection, apply, 0, set())

    def _held_at(self, site: ast.AST, connection: object, apply: Apply, depth: int, visited: Set[int]) -> bool:
        facts = self.facts
        function = enclosing_function(site)
        if self._lock_helper_before(site, function) or handed_in_by_runner(connection, facts):
            return True
        for item, session in self.locks:
            if enclosing_function(item.call) is not function or position(item.call) >= position(site):
                continue
            if not self._same_connection(item.receiver, connection, apply):
                continue
            if session and not self._unlocked_between(item, site, function):
                return True
            if (not session and not apply.per_migration_transactions
                    and (self._same_transaction(item.call, site, function)
                         or self._same_implicit_transaction(item.call, site, function)
                         or self._committed_after(item, site, function))):
                return True
        if function is None or depth >= self._MAX_DEPTH or id(function) in visited:
            return False
        visited = visited | {id(function)}
        callers = list(self._call_sites(function))
        parameter = self._parameter_index(function, connection)
        if not callers:
            # Called from another module: a connection passed in, or Django's thread connection, may be
            # locked by that caller; we cannot see it, so we say nothing.
            if apply.seen_only:
                return False
            if parameter is not None:
                return True
            return connection is DJANGO_CONNECTION and not self._is_entrypoint(function)
        for site_call, passed in callers:
            caller_connection: object
            if connection is DJANGO_CONNECTION:
                caller_connection = DJANGO_CONNECTION
            elif parameter is None:
                return False  # the function opens its own connection: a caller's lock is on another one
            else:
                handed = _handed_connection(site_call, passed, parameter)
                if handed is None:
                    return True  # passed by keyword or in a way we do not follow
                caller_connection = handed
            if not self._held_at(site_call, caller_connection, apply, depth + 1, visited):
                return False
        return True

    def shared_by_a_caller(self, apply: Apply) -> bool:
        """``def _run(connection): context.configure(connection=connection) ...`` that one branch of env.py calls
        with ``config.attributes.get("connection")``: the run serves a runner that hands env.py its connection as
        well as the branch that opens one."""
        function = enclosing_function(apply.call)
        parameter = self._parameter_index(function, apply.connection) if function is not None else None
        if parameter is None:
            return False
        for call, passed in self._call_sites(function):
            handed = _handed_connection(call, passed, parameter)
            if handed is not None and handed_in_by_runner(handed, self.facts):
                return True
        return False

    def _is_entrypoint(self, function: FunctionNode) -> bool:
        return (self.reach.is_command(function) or function.name == "main"
                or self.reach.startup.reason(function) is not None)

    @staticmethod
    def _parameter_index(function: FunctionNode, connection: object) -> Optional[int]:
        if not isinstance(connection, ast.Name):
            return None
        names = [a.arg for a in function.args.posonlyargs + function.args.args]
        return names.index(connection.id) if connection.id in names else None

    def _call_sites(self, function: FunctionNode) -> Iterator[Tuple[ast.Call, Optional[ast.AST]]]:
        """(call, connection passed) for each call of ``function`` in this module: ``f(conn)``, or
        ``conn.run_sync(f)`` which calls ``f`` with ``conn``'s connection."""
        name = function.name
        for call in self.facts.calls_named(name):
            if isinstance(call.func, ast.Name):
                yield call, None
        for call in self.facts.calls_named(*known.RUN_SYNC_METHODS):
            if call.args and isinstance(call.args[0], ast.Name) and call.args[0].id == name:
                yield call, call.func.value if isinstance(call.func, ast.Attribute) else None

    def _same_connection(self, receiver: Optional[ast.AST], connection: object, apply: Apply) -> bool:
        if receiver is None:
            return False
        facts = self.facts
        root = _connection_root(receiver, facts)
        if connection is DJANGO_CONNECTION:
            return _is_django_connection(root)
        if apply.framework == known.ALEMBIC and root.startswith(tuple(known.ALEMBIC_CONTEXT)):
            return True  # ``context.execute(...)`` runs on the connection env.py configured
        return isinstance(connection, ast.AST) and root == _connection_root(connection, facts)

    def _unlocked_between(self, lock: ExecutedSql, site: ast.AST, function: Optional[FunctionNode]) -> bool:
        root = _connection_root(lock.receiver, self.facts) if lock.receiver is not None else ""
        for unlock in self.unlocks:
            if enclosing_function(unlock.call) is not function:
                continue
            if position(lock.call) < position(unlock.call) < position(site):
                unlock_root = _connection_root(unlock.receiver, self.facts) if unlock.receiver is not None else ""
                if unlock_root == root:
                    return True
        return False

    def _same_implicit_transaction(self, lock: ast.AST, site: ast.AST, function: Optional[FunctionNode]) -> bool:
        """``with psycopg.connect(dsn) as conn:``: a DB-API connection opens a transaction with its first statement
        and the block commits it at its end, so an xact lock taken in the block holds for what follows it there,
        unless the code commits in between."""
        around_site = {id(a) for a in ancestors(site)}
        for block in (a for a in ancestors(lock) if isinstance(a, (ast.With, ast.AsyncWith))):
            if id(block) not in around_site or not any(
                    isinstance(i.context_expr, ast.Call)
                    and (self.facts.callee(i.context_expr) or "") in known.TRANSACTIONAL_CONNECTS for i in block.items):
                continue
            return not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                           and n.func.attr in ("commit", "rollback") and position(lock) < position(n) < position(site)
                           for n in walk_no_nested_functions(block))
        return False

    def _committed_after(self, lock: ExecutedSql, site: ast.AST, function: Optional[FunctionNode]) -> bool:
        """``cur.execute("SELECT pg_advisory_xact_lock(...)")`` … the migrations … ``conn.commit()``: a DB-API
        connection opens a transaction with its first statement, and the function ends that transaction itself
        after the run, so the xact lock is held until then.  Not when anything commits or rolls back between the
        lock and the run, nor in a project that turns autocommit on anywhere (each statement its own transaction,
        the lock released at once)."""
        if function is None or lock.receiver is None:
            return False
        root = _connection_root(lock.receiver, self.facts)
        ends = [n for n in walk_no_nested_functions(function) if isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute) and n.func.attr in ("commit", "rollback") and not n.args]
        if any(position(lock.call) < position(end) < position(site) for end in ends):
            return False
        if not any(end.func.attr == "commit" and position(end) > position(site)
                   and _connection_root(end.func.value, self.facts) == root for end in ends):
            return False
        return not self._autocommit_in_sight()

    def _autocommit_in_sight(self) -> bool:
        facts = self.facts
        if _AUTOCOMMIT_ON.search("\n".join(facts.lines).encode("utf-8", "replace")):
            return True
        if not facts.context.cross_file:
            return False
        root = project.search_root(facts)
        return any(_AUTOCOMMIT_ON.search(project.read_bytes(path))
                   for word in _AUTOCOMMIT_WORDS for path in project.files_mentioning(word, root))

    @staticmethod
    def _same_transaction(lock: ast.AST, site: ast.AST, function: Optional[FunctionNode]) -> bool:
        """An xact lock holds for the run only inside the transaction block that also runs the migrations."""
        lock_blocks = {id(a) for a in ancestors(lock) if isinstance(a, (ast.With, ast.AsyncWith))}
        for above in ancestors(site):
            if above is function:
                break
            if isinstance(above, (ast.With, ast.AsyncWith)) and id(above) in lock_blocks:
                for item in above.items:
                    expr = item.context_expr
                    if isinstance(expr, ast.Call) and call_name(expr) in known.TRANSACTION_METHODS:
                        return True
        return False

    def _lock_helper_before(self, site: ast.AST, function: Optional[FunctionNode]) -> bool:
        """``with migration_lock(conn):`` around the run, or ``acquire_lock(conn)`` before it, in the same
        function: a lock we cannot see into, trusted."""
        for above in ancestors(site):
            if above is function:
                break
            if isinstance(above, (ast.With, ast.AsyncWith)):
                for item in above.items:
                    if is_lock_helper(item.context_expr):
                        return True
        scope = function if function is not None else self.facts.tree
        for node in walk_no_nested_functions(scope):
            if isinstance(node, ast.Call) and position(node) < position(site) and is_lock_helper(node):
                return True
        return False


def _handed_connection(call: ast.Call, passed: Optional[ast.AST], parameter: int) -> Optional[ast.AST]:
    """The connection a call site hands the function's connection parameter: what ``conn.run_sync(f)`` runs ``f``
    with, else the positional argument at ``parameter``; None when it is given otherwise (a keyword)."""
    if passed is not None:
        return passed
    return call.args[parameter] if parameter < len(call.args) else None


def handed_in_by_runner(connection: object, facts: ModuleFacts) -> bool:
    """env.py using ``config.attributes.get("connection")``: the runner that put it there holds (or not)
    the lock, and OG403 checks that runner."""
    if not isinstance(connection, ast.AST):
        return False
    if isinstance(connection, ast.Name):
        function = enclosing_function(connection)
        values = [
            statement.value for statement in facts.assigns
            if isinstance(statement, ast.Assign) and enclosing_function(statement) is function
            and any(isinstance(t, ast.Name) and t.id == connection.id for t in statement.targets)
        ]
        return any(_is_shared_connection(value) for value in values)
    return _is_shared_connection(connection)


def _is_shared_connection(node: ast.AST) -> bool:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
        key, holder = node.args[0], node.func.value
    elif isinstance(node, ast.Subscript):
        key, holder = node.slice, node.value
    else:
        return False
    return (isinstance(holder, ast.Attribute) and holder.attr == "attributes" and isinstance(key, ast.Constant)
            and key.value == known.ALEMBIC_SHARED_CONNECTION_KEY)


def _configure_call(run: ast.Call, facts: ModuleFacts) -> Optional[ast.Call]:
    function = enclosing_function(run)
    scope = function if function is not None else facts.tree
    found = None
    for node in walk_no_nested_functions(scope):
        if not isinstance(node, ast.Call) or position(node) >= position(run):
            continue
        if call_name(node) == "configure" and (facts.qualify(node.func) or "").rsplit(".", 1)[0] in known.ALEMBIC_CONTEXT:
            found = node
            continue
        through = forwarded(node, facts)  # ``_configure(connection=conn)`` returning ``context.configure(...)``
        if through is not None and through.callee.rsplit(".", 1)[0] in known.ALEMBIC_CONTEXT and (
                through.callee.rsplit(".", 1)[-1] == "configure"):
            found = through.call
    return found


def env_applications(facts: ModuleFacts) -> List[Apply]:
    """Alembic env.py: each ``context.run_migrations()`` after ``context.configure(connection=...)``."""
    found: List[Apply] = []
    for call in facts.calls_named(known.RUN_MIGRATIONS):
        if (facts.qualify(call.func) or "").rsplit(".", 1)[0] not in known.ALEMBIC_CONTEXT:
            continue
        configure = _configure_call(call, facts)
        if configure is None:
            continue
        connection = keyword_of(configure, "connection")
        if connection is None:
            continue  # offline mode: emits SQL, connects nowhere
        per_migration = keyword_of(configure, "transaction_per_migration")
        found.append(Apply(call, "context.run_migrations()", connection.value, known.ALEMBIC,
                           per_migration is not None and is_true(per_migration.value)))
    return found


def env_runs_locked(facts: ModuleFacts) -> Optional[bool]:
    """Whether this env.py holds a blocking advisory lock for its whole run: True, False, or None when it
    runs no migrations on a connection of its own (offline mode, or the runner's connection handed in)."""
    applications = env_applications(facts)
    if not applications:
        return None
    finder = LockFinder(facts)
    if any(handed_in_by_runner(apply.connection, facts) for apply in applications):
        return None
    return all(finder.held(apply) for apply in applications)


def shared_alembic_connections(facts: ModuleFacts) -> Dict[int, ast.AST]:
    """function id -> the connection a runner hands to env.py (``cfg.attributes["connection"] = conn``)."""
    shared: Dict[int, ast.AST] = {}
    for statement in facts.assigns:
        if not isinstance(statement, ast.Assign):
            continue
        for target in statement.targets:
            if (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute)
                    and target.value.attr == "attributes" and isinstance(target.slice, ast.Constant)
                    and target.slice.value == known.ALEMBIC_SHARED_CONNECTION_KEY):
                shared[id(enclosing_function(statement))] = statement.value
    return shared
