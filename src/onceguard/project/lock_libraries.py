"""Where a module takes a lock through a lock library, and whether that waits (knowledge/lock_libraries.py).

A lock object is followed from where it is made (``lock = r.lock("nightly", timeout=60)``,
``with advisory_lock(KEY, wait=False) as acquired``, ``self.guard = AdvisoryLockGuard(...)``) to where it
is taken: entering a ``with``, ``acquire()``, ``guard.run(key, fn)``.  Spin-waits are loops that retry a
Redis claim or a non-waiting acquire and sleep between tries: they wait as surely as a blocking call.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import List, Optional

from ..analysis.facts import ModuleFacts, parent, spells_triggers, walk, walk_no_nested_functions
from ..analysis.redis_arguments import argument, is_false, is_none
from ..knowledge import lock_libraries as known
from ..knowledge.lock_libraries import LockApi
from .forwarding import Forwarded, callee_through, forwarded
from .redis_clients import redis_call


@dataclass
class LibraryLock:
    made: ast.Call  # the constructor, or ``client.lock(...)``
    api: LockApi
    key: Optional[ast.AST]
    taken: ast.AST  # where it is taken: the with item's expression, the acquire() or run() call
    waits: bool
    #: ``with advisory_lock(k, wait=False) as acquired``: the flag the body must test (None: no ``as``).
    acquired_name: Optional[str] = None
    in_with: Optional[ast.AST] = None  # the With statement when taken by one
    scope: Optional[ast.AST] = None


@dataclass
class SpinWait:
    loop: ast.While
    claim: ast.Call  # the Redis claim or acquire retried
    key: Optional[ast.AST]
    scope: Optional[ast.AST]


def _zero(node: Optional[ast.AST]) -> bool:
    return isinstance(node, ast.Constant) and node.value in (0, 0.0) and node.value is not False


def _says_no_wait(call: ast.Call, flags, bounds, fails=()) -> Optional[bool]:
    """True: told not to wait; False: told to wait; None: not said."""
    for flag in fails:
        value = argument(call, flag)
        if value is not None and not (isinstance(value, ast.Constant) and is_false(value)):
            return True if isinstance(value, ast.Constant) else None
    for flag in flags:
        value = argument(call, flag)
        if value is not None and isinstance(value, ast.Constant):
            return is_false(value)
        if value is not None:
            return None  # a variable: unknown
    for bound in bounds:
        value = argument(call, bound)
        if value is not None and not is_none(value):
            return True if _zero(value) else False
    return None


def _api_of(call: ast.Call, facts: ModuleFacts) -> Optional[LockApi]:
    callee = facts.callee(call) or ""
    if callee in known.CONSTRUCTORS:
        return known.CONSTRUCTORS[callee]
    client_lock = _client_lock(call, facts)
    if client_lock is not None:
        return client_lock
    through = forwarded(call, facts)
    if through is None:
        return None
    if through.callee in known.CONSTRUCTORS:
        return known.CONSTRUCTORS[through.callee]
    # ``named_lock("export")`` where ``def named_lock(name): return get_redis().lock(f"lock:{name}", ...)``:
    # the client is the helper's to resolve (its module, its factory), unless the caller handed it in.
    return _client_lock(through.call, _facts_of_receiver(through, call, facts))


def _client_lock(call: ast.Call, facts: ModuleFacts) -> Optional[LockApi]:
    """The lock ``<redis client>.lock(name, ...)`` makes: redis-py's, or the client library's own."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == known.CLIENT_LOCK_METHOD and call.args):
        return None
    client = redis_call(call, facts)
    if client is None:
        return None
    return known.CLIENT_LOCKS_BY_LIBRARY.get(client.library, known.CLIENT_LOCK)


#: The locks a client's ``.lock(...)`` makes.
_CLIENT_LOCKS = (known.CLIENT_LOCK, *known.CLIENT_LOCKS_BY_LIBRARY.values())


def _is_client_lock(call: ast.Call, facts: ModuleFacts) -> bool:
    """``<redis client>.lock(name, ...)``."""
    return _client_lock(call, facts) is not None


def _facts_of_receiver(through: Forwarded, call: ast.Call, facts: ModuleFacts) -> ModuleFacts:
    """The module a forwarded method call's receiver is written in: the caller's when it is one of the
    arguments the caller passed (``make_lock(client, "export")``), else the helper's."""
    receiver = through.call.func.value if isinstance(through.call.func, ast.Attribute) else None
    passed = [a for a in list(call.args) + [k.value for k in call.keywords]]
    if receiver is not None and any(node is receiver for argument in passed for node in walk(argument)):
        return facts
    return through.facts


def _waits_when_made(call: ast.Call, api: LockApi) -> bool:
    said = _says_no_wait(call, api.no_wait, api.wait_bound, api.fails_when)
    return said is not True


def _made_by(call: ast.Call, api: LockApi, facts: ModuleFacts) -> ast.Call:
    """The call whose arguments made the lock: ``call`` itself, or the constructor (or client ``.lock(...)``)
    a project helper forwards to (``lock = make_lock(conn, "export")``)."""
    if (facts.callee(call) or "") in known.CONSTRUCTORS:
        return call
    if known.CONSTRUCTORS.get(callee_through(call, facts)) is api:
        through = forwarded(call, facts)
        return through.call if through is not None else call
    if any(api is client_lock for client_lock in _CLIENT_LOCKS) and not _is_client_lock(call, facts):
        through = forwarded(call, facts)  # ``named_lock("export")``: the ``.lock(...)`` it returns
        return through.call if through is not None else call
    return call


def waits_when_entered(call: ast.Call, facts: ModuleFacts) -> bool:
    """``with <call>:`` waits for a known lock library's lock (redis-py's default, ``blocking_timeout=20``)."""
    api = _api_of(call, facts)
    if api is None or not api.with_takes_lock:
        return False
    return _waits_when_made(_made_by(call, api, facts), api)


def library_locks(facts: ModuleFacts) -> List[LibraryLock]:
    return facts.cached("library_locks", _find_locks)


def spells_lock_library(facts: ModuleFacts) -> bool:
    """The module's text holds a lock library's words (``known.TRIGGERS``): only then are its locks looked for,
    which resolves every call of the module.  A rule admitted by other words asks this first."""
    return spells_triggers(facts, known.TRIGGERS)


def _find_locks(facts: ModuleFacts) -> List[LibraryLock]:
    found: List[LibraryLock] = []
    for node in walk(facts.tree):
        if not isinstance(node, ast.Call):
            continue
        api = _api_of(node, facts)
        if api is None:
            continue
        made = _made_by(node, api, facts)
        key = argument(made, api.key)
        scope = facts.enclosing_function(node)
        holder = parent(node)
        if isinstance(holder, ast.withitem) and holder.context_expr is node:
            name = holder.optional_vars.id if isinstance(holder.optional_vars, ast.Name) else None
            if api.with_takes_lock:
                found.append(LibraryLock(made, api, key, node, _waits_when_made(made, api), name, parent(holder), scope))
            continue
        statement = facts.statement_of(node)
        bound = None
        if isinstance(statement, ast.Assign) and statement.value is node and len(statement.targets) == 1:
            bound = statement.targets[0]
        if bound is None:
            continue
        found.extend(_taken_through(bound, made, api, key, scope, facts))
    return found


def _same_target(node: ast.AST, bound: ast.AST) -> bool:
    if isinstance(bound, ast.Name):
        return isinstance(node, ast.Name) and node.id == bound.id
    if isinstance(bound, ast.Attribute) and isinstance(bound.value, ast.Name) and bound.value.id == "self":
        return (isinstance(node, ast.Attribute) and node.attr == bound.attr and isinstance(node.value, ast.Name)
                and node.value.id == "self")
    return False


def _taken_through(bound: ast.AST, made: ast.Call, api: LockApi, key, scope, facts: ModuleFacts) -> List[LibraryLock]:
    """``lock = ...`` then ``with lock:`` / ``lock.acquire(...)`` / ``guard.run(k, fn)`` in the same function
    (or, for ``self.x``, in the same class)."""
    if isinstance(bound, ast.Attribute):
        area = facts.enclosing_class(made)
    else:
        area = scope if scope is not None else facts.tree
    if area is None:
        return []
    found = []
    # A module-level or ``self`` lock is taken in the functions that use it; a local one in its own function.
    walker = walk(area) if isinstance(bound, ast.Attribute) or scope is None else walk_no_nested_functions(area)
    for node in walker:
        if isinstance(node, ast.withitem) and _same_target(node.context_expr, bound) and api.with_takes_lock:
            name = node.optional_vars.id if isinstance(node.optional_vars, ast.Name) else None
            found.append(LibraryLock(made, api, key, node.context_expr, _waits_when_made(made, api), name,
                                     parent(node), facts.enclosing_function(node)))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and _same_target(node.func.value, bound)):
            if node.func.attr == known.ACQUIRE:
                said = _says_no_wait(node, api.acquire_no_wait, api.acquire_wait_bound)
                if said is None:
                    # redis-py's acquire() falls back to what the lock was made with; the others wait.
                    waits = _waits_when_made(made, api) if api.library == "redis-py" else True
                else:
                    waits = not said
                found.append(LibraryLock(made, api, key, node, waits, scope=facts.enclosing_function(node)))
            elif api.runs_callable and node.func.attr == api.runs_callable and node.args:
                found.append(LibraryLock(made, api, node.args[0], node, True, scope=facts.enclosing_function(node)))
    return found


# -- spin-waits ---------------------------------------------------------------------------------------------

_CLAIMS = frozenset({"set", "setnx", "add", "exists", "get"})


def _sleeps(loop: ast.While, facts: ModuleFacts) -> bool:
    return any(isinstance(n, ast.Call) and callee_through(n, facts) in known.SLEEP_CALLS
               for statement in loop.body for n in walk_no_nested_functions(statement))


def _claim_in(test: ast.AST, facts: ModuleFacts) -> Optional[ast.Call]:
    for node in walk(test):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _CLAIMS and node.args and redis_call(node, facts) is not None:
                return node
            if node.func.attr == known.ACQUIRE:
                return node
    return None


def spin_waits(facts: ModuleFacts) -> List[SpinWait]:
    def build(_facts: ModuleFacts) -> List[SpinWait]:
        found = []
        for node in walk(facts.tree):
            if not isinstance(node, ast.While) or not _sleeps(node, facts):
                continue
            claim = _claim_in(node.test, facts)
            if claim is None:
                # ``while True: if r.set(k, v, nx=True, ex=30): break; time.sleep(1)``
                for statement in node.body:
                    if isinstance(statement, ast.If) and any(isinstance(s, ast.Break) for s in statement.body):
                        claim = _claim_in(statement.test, facts)
                        if claim is not None:
                            break
            if claim is None:
                continue
            key = claim.args[0] if claim.args and claim.func.attr != known.ACQUIRE else _key_of_acquire(claim, facts)
            found.append(SpinWait(node, claim, key, facts.enclosing_function(node)))
        return found

    return facts.cached("lock_spin_waits", build)


def _key_of_acquire(call: ast.Call, facts: ModuleFacts) -> Optional[ast.AST]:
    return next((lock.key for lock in library_locks(facts) if lock.taken is call), None)


def yields_acquired_flag(call: ast.Call, facts: ModuleFacts) -> bool:
    """``advisory_lock("charge", wait=False)`` (django-pglocks): a lock library's context manager told not to wait,
    which binds whether it got the lock to ``as acquired`` (its body runs either way: the flag is the claim)."""
    api = _api_of(call, facts)
    return api is not None and api.yields_acquired and _says_no_wait(call, api.no_wait, api.wait_bound) is True
