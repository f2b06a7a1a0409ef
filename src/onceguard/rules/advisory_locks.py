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
from typing import Iterable, Iterator, List, Optional, Set

from ..analysis.executed_sql import ExecutedSql, bound_value, executed_sql
from ..analysis.facts import ModuleFacts, ancestors, parent, position, walk_no_nested_functions
from .fix_plans import try_lock_fix
from ..analysis.handles import Handle, Handles
from ..knowledge import advisory_locks as known
from ..knowledge import databases as db
from ..knowledge import schema as schema_known
from ..knowledge.advisory_locks import AdvisoryFunction
from ..model import Diagnostic, Fix
from ..analysis.names import dotted
from .registry import register
from ..analysis.sql import tokens
from .base import Rule


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
        handles = Handles.of_module(facts)
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
        return None

    def _passes(self, call: ast.Call, callee: ast.AST, table: dict, text: str) -> bool:
        return any(dotted(_argument_for(call, callee, p) or ast.Constant(None)) == text
                   for p in table.get(id(callee), ()))

    def judge(self, use: LockUse) -> Optional[tuple]:
        """None: no caller in view; ("clean", None); or ("flag", why) with the caller that breaks it."""
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

    def _at_caller(self, call: ast.Call, caller: ast.AST, text: str) -> Optional[str]:
        """Why the lock taken at ``call`` leaks in ``caller``, or None when it is unlocked in one transaction."""
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
            return (f"`{name}` (line {call.lineno}) takes it on `{text}` and never unlocks it there, so the "
                    "Session's connection goes back to the pool still holding it")
        first_unlock = min(unlocks)
        between = [c for c in enders if after < position(c) < first_unlock]
        if not between:
            return None
        ender = min(between, key=position)
        return (f"`{name}` (line {call.lineno}) takes it on `{text}`, then ends the transaction at line "
                f"{ender.lineno} before unlocking at line {first_unlock[0]}: at COMMIT/ROLLBACK the Session hands "
                "its connection back to the pool, so the unlock runs on another server connection and the lock "
                "leaks on an idle pooled connection")


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
    from ..project.claims import own_module_name

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
            if handle is None:
                continue
            if handle.pooled:
                message = self._pooled_message(use, uses, facts)
                if message:
                    yield self.finding(use.call, message, _lease_first(use, facts, _pinned_suggestion(handle)))
            elif handle.pinned and use.function.unlock:
                other = self._lock_on_other_checkout(use, uses)
                if other is not None:
                    yield self.finding(
                        use.call,
                        f"`{use.function.name}` runs on a connection checked out at line "
                        f"{_node_line(_checkout_of(use), use.call)}, but the lock was taken on another checkout "
                        f"(line {_node_line(_checkout_of(other), other.call)}): the pool may hand out a different "
                        "server "
                        "connection, so the "
                        "unlock releases nothing and the lock stays held by an idle pooled connection.",
                        _lease_first(other, facts,
                                     "Keep lock, work and unlock on one checkout: a single `with ... as conn:` block "
                                     "with the unlock in `finally:`, or `pg_try_advisory_xact_lock` inside one "
                                     "transaction"),
                    )

    def _pooled_message(self, use: LockUse, uses: List[LockUse], facts: ModuleFacts) -> Optional[str]:
        handle = use.handle
        assert handle is not None
        shown = use.shown()
        if handle.library in db.RESETTING_POOL_LIBRARIES or (handle.closes_on_release and not _is_session_object(handle)):
            if handle.library == "databases" and _inside_pinning_with(use, {"connection", "transaction"}):
                return None
            if use.function.unlock:
                return (f"`{shown}` unlocks on whatever connection the pool hands out; the lock was never held by "
                        "it, so this releases nothing.")
            how = ("closed (`NullPool`)" if handle.closes_on_release
                   else "reset (`pg_advisory_unlock_all()`)")
            return (f"`{shown}` takes `{use.function.name}` on a pooled connection that is {how} as soon as the "
                    "call returns: the lock is gone before the work starts, so every replica \"acquires\" it.")
        if _is_session_object(handle) and use.scope is not None and use.function.is_lock:
            if self._unlocked_in_same_transaction(use, uses):
                return None
            verdict = session_lock_flow(facts, uses).judge(use)
            if verdict is not None and verdict[0] == "clean":
                return None  # every caller unlocks before its transaction ends
            if verdict is not None:
                return (f"`{shown}` takes the session-level `{use.function.name}` on a Session's connection, and "
                        f"{verdict[1]}.")
            return (f"`{shown}` takes the session-level `{use.function.name}` through a Session, which returns its "
                    "connection to the pool at commit/rollback/close: the unlock can run on another server "
                    "connection and the lock leaks on an idle pooled connection.")
        if _is_session_object(handle) and use.function.unlock and use.scope is not None:
            if any(other.function.is_lock and other.handle is not None and _is_session_object(other.handle)
                   and (other.scope is not use.scope or session_text(other) == session_text(use))
                   for other in uses):
                return None  # judged at the lock, through its callers
        noun = "Session" if _is_session_object(handle) else "pool"
        if use.function.unlock:
            return (f"`{shown}` unlocks through a {noun} ({handle.how}): it may run on a different server "
                    "connection than the one holding the lock, release nothing, and leave the lock held.")
        return (f"`{shown}` takes the session-level `{use.function.name}` through a {noun} ({handle.how}): "
                "lock and unlock can land on different server connections, so the lock leaks on an idle pooled "
                "connection or a second replica \"holds\" it too.")

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
        checkout = _checkout_of(use)
        if handle is None or handle.how not in db.PIN_METHODS or checkout is None or handle.closes_on_release:
            return None  # a NullPool checkout ends its server session, and the lock, when its block closes
        for other in uses:
            if (other.function.is_lock and other.function.session and other.scope is use.scope
                    and other.handle is not None and other.handle.pinned and other.handle.how in db.PIN_METHODS
                    and _checkout_of(other) not in (None, checkout)
                    and position(other.call) < position(use.call)):
                return other
        return None


def _checkout_of(use: LockUse) -> Optional[ast.AST]:
    """The ``with pool.connection() as conn`` item whose connection runs this call.

    A name reused by several ``with`` blocks has one binding per block; the enclosing block is the one
    in force at the call."""
    receiver = use.receiver_text
    if receiver:
        root = receiver.split(".")[0]
        for above in ancestors(use.call):
            if isinstance(above, (ast.With, ast.AsyncWith)):
                for item in above.items:
                    if isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == root:
                        return item
            if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef)):
                break
    return use.handle.origin if use.handle is not None else None


def _pgbouncer_evidence(facts: ModuleFacts) -> Optional[ast.AST]:
    """A DSN or connect() argument in this file that visibly goes through PgBouncer."""
    text = "\n".join(facts.lines)
    if "6432" not in text and "bouncer" not in text.lower():
        return None
    for node in ast.walk(facts.tree):
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
        if evidence is None and not by_config:
            return
        why = (f"this file connects through PgBouncer (line {evidence.lineno})" if evidence is not None
               else "the project talks to PostgreSQL through a transaction pooler (`transaction-pooler = true`)")
        for use in uses:
            yield self.finding(
                use.call,
                f"`{use.function.name}` is session-level, but {why}: consecutive transactions of one client "
                "connection run on different server connections, so the unlock misses the lock (it leaks) or "
                "another replica gets the same server connection and \"holds\" the lock too.",
                _lease_first(use, facts,
                             f"Use `pg_{'' if use.function.blocking else 'try_'}advisory_xact_lock` "
                             "inside one transaction; migrations should connect directly to PostgreSQL, bypassing "
                             "the pooler"),
            )


# -- lock keys --------------------------------------------------------------------------------------

_UNSTABLE_CALLS = {
    "hash": "the built-in `hash()` is salted per process (PYTHONHASHSEED), so each replica computes a different key",
    "id": "`id()` is a memory address, different in every process",
}
_UNSTABLE_QUALIFIED_PREFIXES = {
    "random.": "a random key is different in every replica",
    "secrets.": "a random key is different in every replica",
    "uuid.uuid4": "a random UUID is different in every replica",
    "uuid.uuid1": "a time-and-host UUID is different in every replica",
    "os.getpid": "a process id is different in every replica",
}


def key_expressions(use: LockUse) -> List[ast.AST]:
    """The Python expressions the lock key is computed from: parameters and f-string holes."""
    executed = use.executed
    return list(executed.params) + list(executed.holes)


def _expand(nodes: Iterable[ast.AST], facts: ModuleFacts, depth: int = 2) -> Iterator[ast.AST]:
    """Walk key expressions, following names to the value they were bound to (two levels)."""
    stack = [(n, depth) for n in nodes]
    seen: Set[int] = set()
    while stack:
        node, level = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for inner in ast.walk(node):
            yield inner
            if isinstance(inner, ast.Name) and level > 0:
                value = bound_value(inner, facts)
                if value is not None:
                    stack.append((value, level - 1))


def _builtin_unshadowed(name: str, facts: ModuleFacts) -> bool:
    return not facts.imports.is_imported(name) and name not in facts.functions_by_name


def unstable_key_call(call: ast.Call, facts: ModuleFacts) -> Optional[str]:
    func = call.func
    if isinstance(func, ast.Name) and func.id in _UNSTABLE_CALLS and _builtin_unshadowed(func.id, facts):
        return _UNSTABLE_CALLS[func.id]
    qualified = facts.callee(call) or ""
    if facts.imports.is_imported((dotted(func) or "").split(".", 1)[0]):
        for prefix, why in _UNSTABLE_QUALIFIED_PREFIXES.items():
            if qualified.startswith(prefix):
                return why
    return None


@register
class UnstableLockKey(Rule):
    code = "OG104"
    name = "unstable-lock-key"
    summary = "advisory lock key computed with hash(), id(), random or uuid4: every replica locks a different key"
    triggers = known.TRIGGERS

    def check(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        reported: Set[int] = set()
        for use in lock_uses(facts):
            if use.function.name == "pg_advisory_unlock_all":
                continue
            for node in _expand(key_expressions(use), facts):
                if not isinstance(node, ast.Call) or id(node) in reported:
                    continue
                why = unstable_key_call(node, facts)
                if why is None:
                    continue
                reported.add(id(node))
                fix = None
                if isinstance(node.func, ast.Name) and node.func.id == "hash" and len(node.args) == 1:
                    fix = Fix("stable-lock-key", "replace hash() with zlib.crc32() of the encoded value", "unsafe")
                yield self.finding(
                    node,
                    f"the key of `{use.function.name}` (line {use.call.lineno}) comes from "
                    f"`{dotted(node.func) or 'a call'}(...)`: {why}. The replicas never contend for the lock "
                    "and all run the guarded work.",
                    "Derive the key with a stable digest: a constant, `zlib.crc32(name.encode())`, or "
                    "`int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), 'big', signed=True)`",
                    fix,
                )


# -- blocking locks ---------------------------------------------------------------------------------

_STABLE_DIGESTS = ("zlib.crc32", "binascii.crc32", "hashlib.")


def _is_fixed_key(nodes: List[ast.AST], facts: ModuleFacts) -> bool:
    """True when the key is the same for every call (a job-wide mutex), not a per-row or per-user key."""
    for node in nodes:
        if not _fixed(node, facts, 3):
            return False
    return True


def _fixed(node: ast.AST, facts: ModuleFacts, depth: int) -> bool:
    if depth < 0:
        return False
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_fixed(e, facts, depth) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(_fixed(v, facts, depth) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        return _fixed(node.operand, facts, depth)
    if isinstance(node, ast.BinOp):
        return _fixed(node.left, facts, depth) and _fixed(node.right, facts, depth)
    if isinstance(node, ast.Name):
        value = bound_value(node, facts)
        if value is not None:
            return _fixed(value, facts, depth - 1)
        # An upper-case name bound elsewhere (``from .locks import NIGHTLY_KEY``) is a constant by convention.
        return node.id.isupper() and node.id not in _parameter_names(node, facts)
    if isinstance(node, ast.Attribute):
        return node.attr.isupper()  # settings.NIGHTLY_LOCK_KEY, LockKeys.NIGHTLY
    if isinstance(node, ast.Call):
        callee = facts.callee(node) or ""
        if callee.startswith(_STABLE_DIGESTS) or callee.endswith((".encode", ".digest", ".hexdigest")) or callee in ("int", "str"):
            return all(_fixed(a, facts, depth) for a in node.args) and (
                not isinstance(node.func, ast.Attribute) or callee.startswith(_STABLE_DIGESTS)
                or _fixed(node.func.value, facts, depth))
        if isinstance(node.func, ast.Name) and node.func.id == "hash":
            return all(_fixed(a, facts, depth) for a in node.args)
    return False


def _parameter_names(node: ast.AST, facts: ModuleFacts) -> Set[str]:
    function = facts.enclosing_function(node)
    if function is None:
        return set()
    args = function.args
    return {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}


def _yields_to_caller(scope: Optional[ast.AST]) -> bool:
    """A generator (a ``@contextmanager`` lock helper) hands the locked section to its caller.

    Such a helper is a mutex around the caller's block, used by request code whose every call must do
    its work; waiting is what it is for.  A job that must run once takes its guard in its own body."""
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    return any(isinstance(node, (ast.Yield, ast.YieldFrom)) for node in walk_no_nested_functions(scope))


def _runs_migrations(scope: Optional[ast.AST], facts: ModuleFacts) -> bool:
    """The function holding the lock applies migrations itself (``command.upgrade``, ``call_command("migrate")``)."""
    if scope is None:
        return False
    for node in walk_no_nested_functions(scope):
        if not isinstance(node, ast.Call):
            continue
        callee = facts.callee(node) or ""
        if callee in schema_known.SCHEMA_CALLS or callee in schema_known.ALEMBIC_APPLY:
            return True
        if (callee in schema_known.DJANGO_CALL_COMMAND and node.args and isinstance(node.args[0], ast.Constant)
                and node.args[0].value in schema_known.DJANGO_SCHEMA_COMMANDS):
            return True
    return False


@register
class BlockingLockInJob(Rule):
    code = "OG103"
    name = "blocking-lock-in-job"
    summary = "blocking pg_advisory_lock on a job-wide key outside migration code: replicas queue and each runs the job"
    triggers = known.TRIGGERS
    skips_tests = True
    skips_migration_code = True

    def check(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        if facts.context.is_migration or facts.context.is_test:
            return
        for use in lock_uses(facts):
            function = use.function
            if not (function.blocking and function.is_lock):
                continue
            keys = key_expressions(use)
            if not _is_fixed_key(keys, facts):
                continue  # a per-row/per-user key serialises requests on purpose
            if _yields_to_caller(use.scope):
                continue  # a critical section: every caller's block must run, one at a time
            if _runs_migrations(use.scope, facts):
                continue  # a migration runner wherever it lives: pods should wait for each other there
            instead = "pg_try_advisory_xact_lock" if not function.session else "pg_try_advisory_lock"
            yield self.finding(
                use.call,
                f"`{function.name}` waits until the lock is free: with two replicas the second one queues behind "
                "the first and, once the lock is released, runs the same job again.",
                f"Skip instead of waiting: for a periodic job, `if not claim_period(\"{_guard_key(use, facts)}\", "
                "period): return` (`from onceguard.guards import claim_period`) also stops a replica that arrives "
                f"after the run has finished; or use `{instead}` and return when it is false. Blocking locks "
                "belong in migration runners, where pods should wait for each other",
                fix=try_lock_fix(use.call, use.scope, use.handle.library if use.handle else None, use.receiver_text,
                                 blocking=True),
            )


# -- unlock discipline ------------------------------------------------------------------------------


def _returns_result(use: LockUse) -> bool:
    """``return conn.fetchval("SELECT pg_try_advisory_lock(...)")``: an acquire helper, released elsewhere."""
    statement = ModuleFacts.statement_of(use.call)
    if isinstance(statement, ast.Return):
        return True
    if isinstance(statement, ast.Assign) and use.scope is not None:
        names = {t.id for t in statement.targets if isinstance(t, ast.Name)}
        for node in walk_no_nested_functions(use.scope):
            if isinstance(node, ast.Return) and node.value is not None:
                if any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node.value)):
                    return True
    return False


def _in_closing_block(use: LockUse) -> bool:
    handle = use.handle
    if handle is None or handle.origin is None or not isinstance(handle.origin, ast.withitem):
        return False
    return handle.closes_on_release or (handle.library, handle.how) in db.CLOSES_SESSION_ON_EXIT


@register
class UnlockNotGuaranteed(Rule):
    code = "OG105"
    name = "unlock-not-guaranteed"
    summary = "session-level advisory lock whose unlock is missing or not in a finally block"
    triggers = known.TRIGGERS

    def check(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        uses = lock_uses(facts)
        # Scopes that unlock without locking are release helpers: a lock elsewhere may be released there.
        release_helpers = ({id(u.scope) for u in uses if u.function.unlock}
                           - {id(u.scope) for u in uses if u.function.is_lock})
        for use in uses:
            function = use.function
            if not (function.session and function.is_lock) or use.scope is None or _in_closing_block(use):
                continue  # a block that closes or resets its connection on exit releases the lock on any error
            if use.handle is not None and use.handle.pooled:
                if self._ignored_and_kept_by_pool(use, uses, facts, release_helpers):
                    yield self.finding(
                        use.call,
                        f"`{function.name}` is taken through a pool and never released, and nothing reads its "
                        "result: the pooled connection that ran it goes back to the pool still holding the lock, "
                        "so any replica that tests this key later finds it taken until that connection dies.",
                        _lease_first(use, facts,
                                     "Take `pg_try_advisory_xact_lock` inside a transaction, test it, and let "
                                     "COMMIT/ROLLBACK release it; or hold one pinned connection and unlock in "
                                     "`finally:`"),
                    )
                continue  # otherwise OG101 says what is wrong with a lock taken through a pool
            unlocks = [u for u in uses if u.function.unlock and u.scope is use.scope
                       and (u.receiver_text == use.receiver_text or u.function.name == "pg_advisory_unlock_all")
                       and position(u.call) > position(use.call)]
            if unlocks:
                if any(ModuleFacts.in_finally(u.call, use.scope) for u in unlocks):
                    continue
                first = min(unlocks, key=lambda u: position(u.call))
                yield self.finding(
                    first.call,
                    f"`{first.function.name}` is not in a `finally:` block: an exception in the work after "
                    f"`{function.name}` (line {use.call.lineno}) skips it and the connection keeps the lock, so "
                    "the job stops running on every replica until that connection dies.",
                    _lease_first(use, facts,
                                 "Put the unlock in `try: ... finally:` on the same connection, or use "
                                 "`pg_try_advisory_xact_lock` inside a transaction, which is released at "
                                 "COMMIT/ROLLBACK"),
                )
                continue
            handle = use.handle
            if handle is None or not handle.pinned or _returns_result(use):
                continue
            if any(u.scope is use.scope and SessionLockOnPool._lock_on_other_checkout(u, uses) is use for u in uses
                   if u.function.unlock):
                continue  # unlocked on a second checkout: OG101 reports that unlock, the real fault
            if release_helpers - {id(use.scope)}:
                continue  # a release helper elsewhere in the module
            receiver = use.receiver_text
            if receiver and any(ModuleFacts.in_finally(c, use.scope)
                                for c in _calls_on(receiver.split(".")[0], ("close",), use.scope)):
                continue
            yield self.finding(
                use.call,
                f"`{function.name}` is never released in `{getattr(use.scope, 'name', 'this function')}`: the "
                "lock stays held by the connection (and by the pool that keeps it) after the work, so the next "
                "run on any replica finds it taken.",
                _lease_first(use, facts,
                             "Release it with `pg_advisory_unlock` in `finally:` on the same connection, or use "
                             "`pg_try_advisory_xact_lock` inside a transaction"),
            )


    @staticmethod
    def _ignored_and_kept_by_pool(use: LockUse, uses: List[LockUse], facts: ModuleFacts,
                                  release_helpers: Set[int]) -> bool:
        """A pool that does not reset its connections keeps a lock nobody unlocks (asyncpg's resets)."""
        handle = use.handle
        if handle is None or handle.library in db.RESETTING_POOL_LIBRARIES or not use.function.try_lock:
            return False
        if release_helpers or any(u.function.unlock and u.scope is use.scope for u in uses):
            return False  # released somewhere, on whichever connection: OG101 judges that
        return try_lock_result_ignored(use, facts)


# -- try-lock results -------------------------------------------------------------------------------

_READERS = ("fetchone", "fetchall", "fetchmany", "fetchval", "scalar", "scalar_one", "first", "one")


def _value_holder(call: ast.Call) -> ast.AST:
    """Climb from the SQL call through ``await``, ``.scalar()``, ``[0]`` to the expression that uses it."""
    node: ast.AST = call
    while True:
        above = parent(node)
        if isinstance(above, ast.Await):
            node = above
        elif isinstance(above, ast.Attribute) and above.value is node:
            node = above
        elif isinstance(above, ast.Call) and above.func is node:
            node = above
        elif isinstance(above, ast.Subscript) and above.value is node:
            node = above
        else:
            return node


def _name_read_after(name: str, statement: ast.AST, scope: ast.AST) -> bool:
    after = position(statement)
    for node in walk_no_nested_functions(scope):
        if (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)
                and position(node) > after):
            return True
        if isinstance(node, ast.Global) and name in node.names:
            return True
    return False


def try_lock_result_ignored(use: LockUse, facts: ModuleFacts) -> bool:
    if not use.function.try_lock:
        return False
    names = {name for name, _ in tokens(use.executed.text)}
    if "FROM" in names or "WHERE" in names:
        return False  # a lock per selected row: the rows returned are the answer
    holder = _value_holder(use.call)
    above = parent(holder)
    scope = use.scope or facts.tree
    if isinstance(above, ast.Expr):
        receiver = use.receiver_text
        return receiver is None or not any(
            position(c) > position(use.call) for c in _calls_on(receiver, _READERS, scope))
    if isinstance(above, ast.Assign) and len(above.targets) == 1 and isinstance(above.targets[0], ast.Name):
        target = above.targets[0].id
        return target == "_" or not _name_read_after(target, above, scope)
    return False


@register
class TryLockResultIgnored(Rule):
    code = "OG106"
    name = "try-lock-result-ignored"
    summary = "result of pg_try_advisory_* never read: the work runs whether or not the lock was acquired"
    triggers = known.TRIGGERS

    def check(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        for use in lock_uses(facts):
            if try_lock_result_ignored(use, facts):
                yield self.finding(
                    use.call,
                    f"the result of `{use.function.name}` is never read: the work below runs whether or not this "
                    "replica got the lock, so every replica runs it.",
                    _lease_first(use, facts, "Test the lock's result and skip the run when it is false: "
                                                  "`if not acquired: return`"),
                    fix=try_lock_fix(use.call, use.scope, use.handle.library if use.handle else None,
                                     use.receiver_text),
                )
