"""OG101–OG106: PostgreSQL advisory locks that do not lock what their authors think.

A session-level advisory lock belongs to one server connection.  Taken
through a pool, a Session or PgBouncer, the unlock can run on another
connection (the lock leaks) or the pool resets the connection at once (the
lock is a no-op).  Blocking variants make replicas queue and all run the
job; keys from ``hash()`` differ per process; an unlock outside ``finally``
is skipped by the first exception; a try-lock whose answer is never read
guards nothing.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterable, Iterator, List, Optional, Set, Tuple

from ..analysis.executed_sql import ExecutedSql, executed_sql
from ..analysis.facts import ModuleFacts, ancestors, position, walk, walk_no_nested_functions
from ..analysis.handles import Handle
from ..project.db_handles import ProjectHandles
from ..project.poolers import pooled_everywhere
from ..knowledge import advisory_locks as known
from ..knowledge import databases as db
from ..knowledge.advisory_locks import AdvisoryFunction
from ..model import Diagnostic
from ..analysis.names import dotted
from .registry import register
from .base import Rule
from .lock_checkouts import checkout_of
from .session_blocks import bound_to_one_connection, ended_by_callers_block


@dataclass
class LockUse:
    executed: ExecutedSql
    function: AdvisoryFunction
    handle: Optional[Handle]
    scope: Optional[ast.AST]  # the enclosing function, None at module level

    @property
    def call(self) -> ast.Call:
        return self.executed.call

    @property
    def receiver_text(self) -> Optional[str]:
        return dotted(self.executed.receiver) if self.executed.receiver is not None else None

    def shown(self) -> str:
        receiver = self.receiver_text
        method = self.executed.method
        return f"{receiver}.{method}(...)" if receiver and method else f"{self.function.name}(...)"


def lock_uses(facts: ModuleFacts) -> List[LockUse]:
    def build(_facts: ModuleFacts) -> List[LockUse]:
        handles = ProjectHandles.of_module(facts)
        uses = []
        for executed in executed_sql(facts):
            for advisory in executed.sql.advisory:
                uses.append(LockUse(executed, advisory.function, handles.of(executed.receiver),
                                    facts.enclosing_function(executed.call)))
        return uses

    return facts.cached("advisory_lock_uses", build)


def _is_session_object(handle: Handle) -> bool:
    return handle.how in db.SESSION_HOWS or handle.how in (
        db.SESSION_CONNECTION, "PooledPostgresqlDatabase", "PooledPostgresqlExtDatabase")


def _last_in_block(call: ast.Call, block: ast.AST) -> bool:
    """The lock is the block's last statement: nothing it could guard runs before the block ends, so it is
    meant for what comes after (``def _lock(): with engine.connect() as c: c.execute("SELECT pg_advisory_lock…")``)."""
    body = getattr(block, "body", None)
    if not body:
        return False
    last = body[-1]
    return any(node is call for node in walk(last)) and not isinstance(last, (ast.If, ast.For, ast.While, ast.Try))


def session_text(use: LockUse) -> Optional[str]:
    """The Session a lock runs through: ``db`` for ``conn = await db.connection(); conn.execute(...)``."""
    handle = use.handle
    if handle is not None and handle.how == db.SESSION_CONNECTION:
        origin = handle.origin.context_expr if isinstance(handle.origin, ast.withitem) else handle.origin
        while isinstance(origin, ast.Await):
            origin = origin.value
        if isinstance(origin, ast.Call) and isinstance(origin.func, ast.Attribute):
            return dotted(origin.func.value)
    return use.receiver_text


def _parameters(function: ast.AST) -> List[str]:
    args = function.args  # type: ignore[attr-defined]
    return [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]


def _argument_for(call: ast.Call, function: ast.AST, parameter: str) -> Optional[ast.AST]:
    """The expression a call passes for one parameter of a module function (``self`` skipped for methods)."""
    for keyword in call.keywords:
        if keyword.arg == parameter:
            return keyword.value
    args = function.args  # type: ignore[attr-defined]
    positional = [a.arg for a in args.posonlyargs + args.args]
    if positional and positional[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
        positional = positional[1:]
    if parameter in positional:
        index = positional.index(parameter)
        if index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[:index + 1]):
            return call.args[index]
    return None


class SessionLockFlow:
    """Lock helpers judged at their callers: which module functions lock, unlock or end the transaction
    of a Session they receive as a parameter, and what their callers do between lock and unlock.

    ``async def take_lock(session: AsyncSession, key)`` that runs ``pg_try_advisory_lock`` is harmless
    when every caller unlocks before it commits, and a leak when a caller commits in between: the
    Session hands its connection back to the pool at COMMIT and the unlock runs on another one."""

    _ROUNDS = 4

    def __init__(self, facts: ModuleFacts, uses: List[LockUse]) -> None:
        self.facts = facts
        self.functions = [f for fs in facts.functions_by_name.values() for f in fs]
        self.calls: List[tuple] = []  # (call, caller function, callee function)
        for function in self.functions:
            for node in walk_no_nested_functions(function):
                if isinstance(node, ast.Call):
                    callee = self._callee(node)
                    if callee is not None:
                        self.calls.append((node, function, callee))
        self.locks: dict = {}
        self.unlocks: dict = {}
        self.enders: dict = {}
        for use in uses:
            scope = use.scope
            root = (session_text(use) or "").split(".")[0]
            if scope is None or not root or root not in _parameters(scope):
                continue
            table = self.unlocks if use.function.unlock else self.locks
            table.setdefault(id(scope), set()).add(root)
        for function in self.functions:
            parameters = set(_parameters(function))
            for call in _calls_named(function, SESSION_ENDERS):
                root = dotted(call.func.value) or ""
                if root in parameters:
                    self.enders.setdefault(id(function), set()).add(root)
        for _ in range(self._ROUNDS):
            changed = False
            for call, caller, callee in self.calls:
                parameters = set(_parameters(caller))
                for table in (self.locks, self.unlocks, self.enders):
                    for parameter in list(table.get(id(callee), ())):
                        argument = _argument_for(call, callee, parameter)
                        if isinstance(argument, ast.Name) and argument.id in parameters:
                            names = table.setdefault(id(caller), set())
                            if argument.id not in names:
                                names.add(argument.id)
                                changed = True
            if not changed:
                break

    def _callee(self, call: ast.Call) -> Optional[ast.AST]:
        func = call.func
        if isinstance(func, ast.Name) and not self.facts.imports.is_imported(func.id):
            found = self.facts.functions_by_name.get(func.id, [])
            return found[0] if len(found) == 1 else None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            cls_node = self.facts.enclosing_class(call)
            if cls_node is not None:
                for statement in cls_node.body:
                    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == func.attr:
                        return statement
        return self.facts.module_method(func)  # ``service.take_lock(session)`` on a module-level instance

    def _passes(self, call: ast.Call, callee: ast.AST, table: dict, text: str) -> bool:
        return any(dotted(_argument_for(call, callee, p) or ast.Constant(None)) == text
                   for p in table.get(id(callee), ()))

    def judge(self, use: LockUse) -> Optional[tuple]:
        """None: no caller in view; ("clean", None); or ("flag", (what, why)) with the caller that breaks it:
        what it does, as a clause of the message, and why that leaks the lock, for the help."""
        root = (session_text(use) or "").split(".")[0]
        if use.scope is None or root not in _parameters(use.scope):
            return None
        frontier = [(use.scope, root)]
        seen = set()
        verdicts = []
        while frontier:
            function, parameter = frontier.pop()
            if (id(function), parameter) in seen:
                continue
            seen.add((id(function), parameter))
            for call, caller, callee in self.calls:
                if callee is not function:
                    continue
                argument = _argument_for(call, function, parameter)
                text = dotted(argument) if argument is not None else None
                if text is None:
                    continue
                if (isinstance(argument, ast.Name) and argument.id in _parameters(caller)
                        and argument.id not in self.unlocks.get(id(caller), ())):
                    frontier.append((caller, argument.id))  # the caller is a lock helper too
                    continue
                verdicts.append(self._at_caller(call, caller, text))
        if not verdicts:
            return None
        flagged = [v for v in verdicts if v is not None]
        return ("flag", flagged[0]) if flagged else ("clean", None)

    def _at_caller(self, call: ast.Call, caller: ast.AST, text: str) -> Optional[Tuple[str, str]]:
        """What ``caller`` does that leaks the lock taken at ``call``, and why; None when it is unlocked in one
        transaction."""
        after = position(call)
        unlocks = [position(u.call) for u in lock_uses(self.facts)
                   if u.function.unlock and u.scope is caller and session_text(u) == text]
        enders = [c for c in _calls_named(caller, SESSION_ENDERS) if dotted(c.func.value) == text]
        for other, where, callee in self.calls:
            if where is caller:
                if self._passes(other, callee, self.unlocks, text):
                    unlocks.append(position(other))
                if self._passes(other, callee, self.enders, text):
                    enders.append(other)
        unlocks = [u for u in unlocks if u > after]
        name = getattr(caller, "name", "the caller")
        if not unlocks:
            return (f"`{name}` (line {call.lineno}) takes it on `{text}` and never unlocks it there",
                    "The Session's connection goes back to the pool still holding the lock.")
        first_unlock = min(unlocks)
        between = [c for c in enders if after < position(c) < first_unlock]
        if not between:
            return None
        ender = min(between, key=position)
        return (f"`{name}` (line {call.lineno}) ends the transaction at line {ender.lineno} before unlocking",
                f"At COMMIT/ROLLBACK the Session hands its connection back to the pool, so the unlock at line "
                f"{first_unlock[0]} runs on another server connection and the lock leaks on an idle pooled "
                "connection.")


def session_lock_flow(facts: ModuleFacts, uses: List[LockUse]) -> SessionLockFlow:
    return facts.cached("advisory_session_lock_flow", lambda _facts: SessionLockFlow(facts, uses))


def _calls_named(scope: ast.AST, names: Iterable[str]) -> List[ast.Call]:
    wanted = set(names)
    return [node for node in walk_no_nested_functions(scope)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in wanted
            and dotted(node.func.value) is not None]


def _calls_on(receiver: str, names: Iterable[str], scope: ast.AST) -> List[ast.Call]:
    wanted = set(names)
    found = []
    for node in walk_no_nested_functions(scope):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in wanted
                and dotted(node.func.value) == receiver):
            found.append(node)
    return found


def _inside_pinning_with(use: LockUse, method_names: Set[str]) -> bool:
    """``async with database.connection():`` pins one connection for the task (encode/databases)."""
    receiver = use.receiver_text
    for above in ancestors(use.call):
        if isinstance(above, (ast.With, ast.AsyncWith)):
            for item in above.items:
                expr = item.context_expr
                if (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)
                        and expr.func.attr in method_names and dotted(expr.func.value) == receiver):
                    return True
    return False


SESSION_ENDERS = ("commit", "rollback", "close", "remove", "expire_all")
XACT_SUGGESTION = (
    "Take `pg_try_advisory_xact_lock` inside a transaction (released at COMMIT/ROLLBACK on the same "
    "connection), or hold one pinned connection for lock, work and unlock"
)


def _guard_key(use: LockUse, facts: ModuleFacts) -> str:
    """The guard's key as the OG201 fix writes it: ``module.function`` of the locked work."""
    from ..project.bindings import own_module_name

    name = getattr(use.scope, "name", None) or "job"
    module = own_module_name(facts)
    return f"{module}.{name}" if module else name


def _lease_first(use: LockUse, facts: ModuleFacts, rest: str) -> str:
    """``rest`` behind the onceguard lease, for a try-lock (its holder runs the work, the others skip, as
    with ``run_exclusive``): a lease expires with a dead holder and is released by compare-and-delete, so
    neither the pool nor an exception path can leak it.  A blocking lock keeps ``rest`` alone: replacing
    it with a lease would turn waiting into skipping."""
    if not use.function.try_lock:
        return rest
    asynchronous = isinstance(use.scope, ast.AsyncFunctionDef)
    guard = "arun_exclusive" if asynchronous else "run_exclusive"
    call = f"{'await ' if asynchronous else ''}{guard}(\"{_guard_key(use, facts)}\", ttl, work)"
    return (f"Use a lease instead of the advisory lock: `{call}` (`from onceguard.guards import {guard}`), "
            f"which expires if its holder dies; or {rest[:1].lower()}{rest[1:]}")


def _node_line(origin: Optional[ast.AST], fallback: ast.AST) -> int:
    """The line where a handle was bound; a ``with`` item carries no position of its own."""
    if isinstance(origin, ast.withitem):
        origin = origin.context_expr
    return getattr(origin, "lineno", None) or getattr(fallback, "lineno", 0)


def _pinned_suggestion(handle: Handle) -> str:
    if handle.library == "asyncpg":
        return ("Use `async with pool.acquire() as conn:` and run lock, work and unlock on `conn` "
                "(or `pg_try_advisory_xact_lock` inside `async with conn.transaction():`)")
    if handle.library == "databases":
        return ("Wrap lock, work and unlock in `async with database.connection():` "
                "(or use `pg_try_advisory_xact_lock` inside `async with database.transaction():`)")
    if handle.library == "sqlalchemy":
        if _is_session_object(handle):
            return ("Take `pg_try_advisory_xact_lock` inside `with session.begin():` and do the work in that "
                    "transaction, or use `with engine.connect() as conn:` for lock, work and unlock")
        return ("Use `with engine.begin() as conn:` and `pg_try_advisory_xact_lock`, or "
                "`with engine.connect() as conn:` for lock, work and unlock in `try/finally`")
    if handle.library in ("psycopg", "psycopg2"):
        return ("Use `with pool.connection() as conn:` for lock, work and unlock in `try/finally`, or "
                "`pg_try_advisory_xact_lock` inside `with conn.transaction():`")
    return XACT_SUGGESTION


def _scoped_suggestion(handle: Handle) -> str:
    return ("Keep lock, work and unlock inside the one `with` block that checked the connection out, with the "
            "unlock in `finally:`; or take `pg_try_advisory_xact_lock` in the transaction that does the work. A "
            "helper that takes a lock must hand its connection to the caller (or be a context manager that "
            "yields inside the block), not close it on return")


@register
class SessionLockOnPool(Rule):
    code = "OG101"
    name = "session-lock-on-pool"
    summary = "session-level advisory lock or unlock run through a pool: lock and unlock can land on different connections"
    triggers = known.TRIGGERS

    def check(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        uses = [u for u in lock_uses(facts) if u.function.session and u.function.name != "pg_advisory_unlock_all"]
        for use in uses:
            handle = use.handle
            escaped = self._outlives_its_checkout(use, uses, facts)
            if escaped is not None:
                scope, message, why = escaped
                yield self.finding(use.call, message,
                                   f"{why} {_lease_first(use, facts, _scoped_suggestion(scope.handle))}")
                continue
            if handle is None:
                continue
            if handle.pooled:
                said = self._pooled_message(use, uses, facts)
                if said:
                    message, why = said
                    yield self.finding(use.call, message,
                                       f"{why} {_lease_first(use, facts, _pinned_suggestion(handle))}")
            elif handle.pinned and use.function.unlock:
                other = self._lock_on_other_checkout(use, uses)
                if other is not None:
                    yield self.finding(
                        use.call,
                        f"`{use.function.name}` runs on a connection checked out at line "
                        f"{_node_line(checkout_of(use), use.call)}, but the lock was taken on another checkout "
                        f"(line {_node_line(checkout_of(other), other.call)}), so the unlock releases nothing and "
                        "the lock stays held.",
                        "Each checkout may get a different server connection from the pool, so the lock stays held "
                        "by an idle pooled connection and no replica can take it again. "
                        + _lease_first(other, facts,
                                       "Keep lock, work and unlock on one checkout: a single `with ... as conn:` "
                                       "block with the unlock in `finally:`, or `pg_try_advisory_xact_lock` inside "
                                       "one transaction"),
                    )

    def _pooled_message(self, use: LockUse, uses: List[LockUse], facts: ModuleFacts) -> Optional[Tuple[str, str]]:
        """The message for a lock or unlock run through a pool, and why it fails, for the help."""
        handle = use.handle
        assert handle is not None
        shown = use.shown()
        if handle.library in db.RESETTING_POOL_LIBRARIES or (handle.closes_on_release and not _is_session_object(handle)):
            if handle.library == "databases" and _inside_pinning_with(use, {"connection", "transaction"}):
                return None
            if use.function.unlock:
                return (f"`{shown}` unlocks on whatever connection the pool hands out, which never held the lock, "
                        "so this releases nothing.",
                        "The pool resets each connection when a call returns, so the lock this unlock means was "
                        "already gone before the work ran.")
            how = "closed (`NullPool`)" if handle.closes_on_release else "reset"
            why = ("`NullPool` closes the connection" if handle.closes_on_release
                   else "The pool runs `pg_advisory_unlock_all()` on the connection")
            return (f"`{shown}` takes `{use.function.name}` on a pooled connection that is {how} as soon as the "
                    "call returns, so every replica \"acquires\" the lock.",
                    f"{why} as soon as the call returns: the lock is gone before the work starts.")
        if _is_session_object(handle) and session_text(use) and bound_to_one_connection(session_text(use), use.call,
                                                                                         facts):
            return None  # the Session works on a connection its caller checked out: commits leave it there
        if _is_session_object(handle) and use.scope is not None and use.function.is_lock:
            ended = ended_by_callers_block(use, facts)
            if ended is not None:
                return (f"`{shown}` takes `{use.function.name}` on a Session its caller's block goes on using "
                        f"before the unlock, and {ended}, so the lock leaks.",
                        "At COMMIT/ROLLBACK the Session hands its connection back to the pool, so the unlock after "
                        "the block runs on another server connection and the lock leaks on an idle pooled "
                        "connection.")
            if self._unlocked_in_same_transaction(use, uses):
                return None
            verdict = session_lock_flow(facts, uses).judge(use)
            if verdict is not None and verdict[0] == "clean":
                return None  # every caller unlocks before its transaction ends
            if verdict is not None:
                what, why = verdict[1]
                return (f"`{shown}` takes `{use.function.name}` on a Session's connection, and {what}, so the "
                        "lock leaks.", why)
            receiver = session_text(use)
            enders = [c for c in _calls_on(receiver, SESSION_ENDERS, use.scope) if position(c) > position(use.call)] \
                if receiver else []
            if enders:
                ender = min(enders, key=position)
                return (f"`{shown}` takes `{use.function.name}` through a Session, and `{dotted(ender.func)}()` at "
                        f"line {ender.lineno} hands its connection back to the pool still holding the lock.",
                        "The unlock later runs on whatever connection the Session checks out then, and the lock "
                        "leaks on an idle pooled connection.")
            return (f"`{shown}` takes the session-level `{use.function.name}` through a Session, so the unlock can "
                    "run on another server connection and leave the lock held.",
                    "A Session returns its connection to the pool at commit, rollback or close, so the lock can "
                    "leak on an idle pooled connection.")
        if _is_session_object(handle) and use.function.unlock and use.scope is not None:
            if any(other.function.is_lock and other.handle is not None and _is_session_object(other.handle)
                   and (other.scope is not use.scope or session_text(other) == session_text(use))
                   for other in uses):
                return None  # judged at the lock, through its callers
        noun = "Session" if _is_session_object(handle) else "pool"
        if use.function.unlock:
            return (f"`{shown}` unlocks through a {noun} ({handle.how}), so it may run on another server connection "
                    "than the lock's and leave the lock held.",
                    f"Each call through a {noun} may check out a different server connection.")
        return (f"`{shown}` takes the session-level `{use.function.name}` through a {noun} ({handle.how}), so lock "
                "and unlock can land on different server connections.",
                "The unlock then misses the lock, which leaks on an idle pooled connection, or a second replica "
                "gets that connection and \"holds\" the lock too.")

    @staticmethod
    def _outlives_its_checkout(use: LockUse, uses: List[LockUse], facts: ModuleFacts) -> Optional[tuple]:
        """A lock taken inside a ``with`` checkout that is meant to be held after the block ends: its result is
        returned or read after the block, or it is unlocked after the block.  The block's end hands the
        connection back (or closes it) whatever the pool is, so the lock either stays on an idle pooled
        connection or dies with the closed one: either way it no longer guards the caller's work."""
        if not use.function.is_lock or use.scope is None:
            return None
        scope = ProjectHandles.of_module(facts).scope_of(use.call, use.executed.receiver)
        if scope is None:
            return None
        root = (use.receiver_text or "").split(".")[0]
        if any(u.function.unlock and u.scope is use.scope and scope.contains(u.call)
               and (u.receiver_text or "").split(".")[0] == root and position(u.call) > position(use.call)
               for u in uses):
            return None  # unlocked before the block ends, on the same connection
        if any(u.function.unlock and SessionLockOnPool._lock_on_other_checkout(u, uses) is use for u in uses):
            return None  # reported at that unlock, which runs on the other checkout
        later_unlock = next((u for u in uses if u.function.unlock and u.scope is use.scope and scope.after(u.call)),
                            None)
        if scope.handle.closes_on_release:
            later_unlock = None  # the lock ended with the closed connection: a later unlock is a no-op, not a leak
        if later_unlock is None and not scope.result_leaves(use.call, use.scope) \
                and not _last_in_block(use.call, scope.block):
            return None  # the work, if any, is inside the block: the lock ends with it
        if scope.handle.closes_on_release:
            ending = "closes the connection, and the lock dies with it"
        elif scope.handle.library in db.RESETTING_POOL_LIBRARIES:
            ending = "hands the connection back to the pool, which resets it and drops the lock"
        else:
            ending = "hands the connection back to the pool still holding the lock"
        after = (f"the unlock at line {later_unlock.call.lineno} runs on whatever connection is checked out then"
                 if later_unlock is not None else
                 "the caller goes on as if it held the lock, and no unlock can reach that connection again")
        return (scope,
                f"`{use.function.name}` is taken in {scope.described} but meant to hold after it ends, so another "
                "replica can take the lock while this one still works.",
                f"The block's end at line {scope.end_line} {ending}: {after}.")

    @staticmethod
    def _unlocked_in_same_transaction(use: LockUse, uses: List[LockUse]) -> bool:
        """Session lock and unlock with no commit/rollback/close between them keep one connection."""
        receiver = session_text(use)
        unlocks = [u for u in uses if u.function.unlock and u.scope is use.scope and session_text(u) == receiver
                   and position(u.call) > position(use.call)]
        if not unlocks or receiver is None:
            return False
        enders = _calls_on(receiver, SESSION_ENDERS, use.scope)
        first_unlock = min(position(u.call) for u in unlocks)
        return not any(position(use.call) < position(c) < first_unlock for c in enders)

    @staticmethod
    def _lock_on_other_checkout(use: LockUse, uses: List[LockUse]) -> Optional[LockUse]:
        handle = use.handle
        checkout = checkout_of(use)
        if handle is None or handle.how not in db.PIN_METHODS or checkout is None or handle.closes_on_release:
            return None  # a NullPool checkout ends its server session, and the lock, when its block closes
        for other in uses:
            if (other.function.is_lock and other.function.session and other.scope is use.scope
                    and other.handle is not None and other.handle.pinned and other.handle.how in db.PIN_METHODS
                    and checkout_of(other) not in (None, checkout)
                    and position(other.call) < position(use.call)):
                return other
        return None


def _pgbouncer_evidence(facts: ModuleFacts) -> Optional[ast.AST]:
    """A DSN or connect() argument in this file that visibly goes through PgBouncer."""
    text = "\n".join(facts.lines)
    if "6432" not in text and "bouncer" not in text.lower():
        return None
    for node in walk(facts.tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            value = node.value.lower().replace(" ", "")
            looks_like_dsn = "://" in value or "host=" in value or "port=" in value
            if looks_like_dsn and ("pgbouncer" in value or ":6432" in value or "port=6432" in value):
                return node
        elif isinstance(node, ast.keyword) and node.arg == "port":
            if isinstance(node.value, ast.Constant) and str(node.value.value) == "6432":
                return node.value
    return None


@register
class SessionLockThroughPooler(Rule):
    code = "OG102"
    name = "session-lock-through-pooler"
    summary = "session-level advisory lock while the app talks to PostgreSQL through a transaction pooler"
    triggers = known.TRIGGERS

    def check(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        uses = [u for u in lock_uses(facts) if u.function.session and u.function.is_lock]
        if not uses:
            return
        evidence = _pgbouncer_evidence(facts)
        by_config = facts.config.transaction_pooler and not facts.context.is_migration
        shown = (pooled_everywhere(facts) if evidence is None and not by_config and not facts.context.is_migration
                 else None)
        if evidence is None and not by_config and shown is None:
            return
        if evidence is not None:
            why = f"this file connects through PgBouncer (line {evidence.lineno})"
        elif by_config:
            why = "the project uses a transaction pooler (`transaction-pooler = true`)"
        else:
            why = f"every database URL the project shows goes through a pooler ({shown.describe(facts.config.root)})"
        for use in uses:
            yield self.finding(
                use.call,
                f"`{use.function.name}` is session-level, but {why}, so the unlock can miss the lock or another "
                "replica can \"hold\" it too.",
                "A transaction pooler runs consecutive transactions of one client connection on different server "
                "connections: the unlock misses the lock (it leaks), or another replica gets the same server "
                "connection and \"holds\" the lock too. " + _lease_first(use, facts,
                             f"Use `pg_{'' if use.function.blocking else 'try_'}advisory_xact_lock` "
                             "inside one transaction; migrations should connect directly to PostgreSQL, bypassing "
                             "the pooler"),
            )


# The rules of the same family that judge keys, waiting, unlocking and answers (OG103–OG106) live in
# ``advisory_lock_discipline``, which imports this module; callers that import them from here get them
# lazily, so that neither module needs the other half-initialised.
_MOVED = frozenset({"BlockingLockInJob", "TryLockResultIgnored", "UnlockNotGuaranteed", "key_expressions",
                    "try_lock_result_ignored"})
#: OG104 lives in ``lock_keys``.
_MOVED_TO_KEYS = frozenset({"UnstableLockKey", "unstable_key_call"})


def __getattr__(name: str):
    if name in _MOVED:
        from . import advisory_lock_discipline

        return getattr(advisory_lock_discipline, name)
    if name in _MOVED_TO_KEYS:
        from . import lock_keys

        return getattr(lock_keys, name)
    raise AttributeError(name)
