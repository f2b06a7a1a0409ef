"""Redis leases: a lock key that can outlive its holder (OG501) and a release that can drop somebody
else's lock (OG502).  reference/frameworks.md §5.

Only receivers whose origin is visible count: a client built by ``redis.Redis(...)``,
``redis.from_url``, ``redis.asyncio``, ``django_redis.get_redis_connection``, Django's ``cache`` /
``caches[...]``, Flask-Caching, a parameter annotated with one of those types, or a client the project
makes (a factory's return, a class that subclasses or wraps a client, an untyped parameter every caller
fills with one).  A key is a lease when its use says so: set only if absent (or checked for absence
first) to decide whether to do work and dropped again after it, a two-step acquire whose result guards
the work, or an NX key whose own text calls it a lock.  Read-through caches, cooldowns, counters and their
invalidation are not leases, and a key in a per-process Django cache excludes nobody on another replica.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Tuple

from ..analysis.facts import ModuleFacts, in_exclusive_branches, parent, walk, walk_no_nested_functions
from ..analysis.handles import Handle
from ..analysis.executed_sql import bound_value
from ..analysis.names import dotted
from ..analysis.redis_arguments import (acts_for_owner, argument, has_spread, is_false, is_none, key_argument,
                                        result_tested,
                                        short, words)
from ..knowledge import redis_clients as known
from ..knowledge.claims import REGISTER_SCRIPT_METHOD
from ..model import Diagnostic
from ..project.django_caches import per_process
from ..project.bindings import Bindings
from ..project.forwarding import forwarded
from ..project.redis_clients import RedisClients, client_calls, command_of, redis_call
from ..project.redis_keys import key_identity, key_names_a_lock, key_text
from .fix_plans import atomic_set_fix, lock_ttl_fix
from .lease_release_safety import after as _after, before_own_deadline, freed_only_on_failure, owner_checked_first
from .lease_release_safety import released_before_any_work
from .lease_release_safety import reads_of_key as _reads_of_key
from .lease_renewals import unsafe_renewals
from .registry import register
from .base import Rule

#: Other rule modules read Redis calls through these names.
_client_calls = client_calls
__all__ = ["RedisClients", "argument", "client_calls", "command_of", "has_spread", "key_argument", "key_text",
           "redis_call", "result_tested", "short"]


@dataclass
class Acquire:
    call: ast.Call
    handle: Handle
    command: str  # set, setnx, add, hset
    key: Optional[ast.AST]
    identity: Optional[tuple]  # see key_identity
    nx: bool
    expires: bool
    two_step_expiry: Optional[ast.Call] = None  # the EXPIRE that follows a SETNX


@dataclass
class Release:
    call: ast.Call
    handle: Handle
    key: ast.AST
    identity: tuple
    #: The body of the class's own delete helper: judged at the calls of the helper instead.
    judged_at_callers: bool = False


def _calls_after_in_function(call: ast.Call, names: Iterable[str], facts: ModuleFacts) -> List[ast.Call]:
    function = facts.enclosing_function(call)
    return [
        c for c in facts.calls_named(*names)
        if facts.enclosing_function(c) is function and (c.lineno, c.col_offset) > (call.lineno, call.col_offset)
    ]


def _expiry_of_cache_write(call: ast.Call, handle: Handle) -> bool:
    timeout = argument(call, known.CACHE_TIMEOUT)
    if handle.kind == known.DJANGO_CACHE:
        # An omitted timeout is the backend default, which expires; only an explicit None never does.
        return not (timeout is not None and is_none(timeout))
    # Flask-Caching / cachelib: None is the default timeout; 0 never expires.
    return not (isinstance(timeout, ast.Constant) and timeout.value == 0)


def _find_acquires(facts: ModuleFacts) -> List[Acquire]:
    found: List[Acquire] = []
    for call, handle, command in client_calls(facts, ("set", "add", "setnx", known.HASH_WRITE)):
        if has_spread(call) or (command == known.HASH_WRITE and handle.kind != known.REDIS):
            continue
        if handle.kind == known.REDIS:
            if command == "add":
                continue
            key = argument(call, known.SET_KEY)
            if command == known.HASH_WRITE:
                nx, expires = False, False  # HSET writes the fields whatever is there, and sets no expiry
            elif command == known.SETNX:
                nx, expires = True, False
            else:
                condition = next((k.value for k in call.keywords if k.arg == known.SET_CONDITION), None)
                nx = (isinstance(condition, ast.Attribute) and condition.attr == "NX") if condition is not None \
                    else not is_false(argument(call, known.SET_NX))  # (coredis: ``condition=PureToken.NX``)
                expires = any(not is_none(argument(call, arg)) for arg in known.SET_EXPIRY)
        elif handle.kind in (known.DJANGO_CACHE, known.CACHE):
            if command == known.SETNX:
                continue
            key = argument(call, known.CACHE_KEY)
            expires = _expiry_of_cache_write(call, handle)
            nx = command == "add" or not is_false(argument(call, known.CACHE_NX))
        else:  # a wrapper: its own spelling, so only what its arguments show
            key = argument(call, known.CACHE_KEY) or argument(call, known.Arg("name"))
            nx = command in ("add", known.SETNX) or not is_false(argument(call, known.CACHE_NX))
            expiry = [k.value for k in call.keywords if k.arg in known.WRAPPER_EXPIRY]
            if len(call.args) > 2:
                expiry.append(call.args[2])
            # Without one, the wrapper's default applies, which this rule cannot see: assume it expires.
            expires = not expiry or any(not is_none(e) for e in expiry)
        if key is None or not is_false(argument(call, known.Arg("xx"))):
            continue  # SET XX only refreshes a key somebody already holds
        acquire = Acquire(call, handle, command, key, key_identity(key, facts), nx, expires)
        if not expires and handle.kind == known.REDIS:
            for later in _calls_after_in_function(call, known.EXPIRY_COMMANDS, facts):
                if redis_call(later, facts) is not None and later.args and ast.dump(later.args[0]) == ast.dump(key):
                    acquire.two_step_expiry = later
                    break
        found.append(acquire)
    return found


def _find_releases(facts: ModuleFacts) -> List[Release]:
    """``r.delete(key)``, ``cache.delete(key)``, ``r.execute_command("DEL", key)``, a wrapper's
    ``delete_cache(key)``: one key dropped whatever its value."""
    found = []
    for call, handle, _ in client_calls(facts, ("delete",)):
        if len(call.args) == 1 and not call.keywords and not isinstance(call.args[0], ast.Starred):
            key = call.args[0]
            if isinstance(key, (ast.List, ast.Tuple)) and len(key.elts) == 1:
                key = key.elts[0]  # coredis: ``delete([key])`` takes the keys as one list
            found.append(Release(call, handle, key, key_identity(key, facts)))
    for call in facts.calls_named("execute_command"):
        if (len(call.args) == 2 and isinstance(call.args[0], ast.Constant)
                and str(call.args[0].value).upper() in known.RAW_DELETE):
            handle = redis_call(call, facts)
            if handle is not None:
                found.append(Release(call, handle, call.args[1], key_identity(call.args[1], facts)))
    found.extend(_releases_through_forwarding_helper(facts))
    found.extend(_releases_through_own_helper(facts, found))
    found.sort(key=lambda item: (item.call.lineno, item.call.col_offset))
    return found


def _releases_through_forwarding_helper(facts: ModuleFacts) -> List[Release]:
    """``_drop(key)`` where ``def _drop(k): return r.delete(k)``: the delete the helper makes, at its call."""
    found = []
    for call in facts.calls:
        if not isinstance(call.func, ast.Name) or call.func.id not in facts.functions_by_name:
            continue
        through = forwarded(call, facts)
        if through is None or through.facts is not facts:
            continue
        for inner, handle, _ in client_calls(facts, ("delete",), calls=[through.call]):
            if len(inner.args) == 1 and not inner.keywords and not isinstance(inner.args[0], ast.Starred):
                found.append(Release(call, handle, inner.args[0], key_identity(inner.args[0], facts)))
    return found


def _fixed_by_instance(key: ast.AST) -> bool:
    """A key made of constants and ``self`` attributes only: the same key wherever the method is called."""
    names = [n for n in walk(key) if isinstance(n, ast.Name)]
    return bool(names) and all(n.id == "self" for n in names) or isinstance(key, ast.Constant)


def _releases_through_own_helper(facts: ModuleFacts, deletes: List[Release]) -> List[Release]:
    """``def unlock(self): self.delete()`` where ``def delete(self): self.client.delete(self.key)``: the call of
    the class's own delete helper drops that key, and is judged where it is made (its function's name and
    its checks), as if the delete were written there."""
    helpers: Dict[Tuple[int, str], Release] = {}
    for release in deletes:
        function = facts.enclosing_function(release.call)
        cls_node = facts.enclosing_class(release.call)
        if function is None or cls_node is None or function.args.args[1:] or not _fixed_by_instance(release.key):
            continue
        body = [st for st in function.body if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant))]
        if len(body) == 1 and any(n is release.call for n in walk(body[0])):
            helpers[(id(cls_node), function.name)] = release
    found = []
    if not helpers:
        return found
    for call in facts.calls_named(*{name for _, name in helpers}):
        func = call.func
        if call.args or call.keywords or not (isinstance(func.value, ast.Name) and func.value.id == "self"):
            continue
        cls_node = facts.enclosing_class(call)
        inner = helpers.get((id(cls_node), func.attr)) if cls_node is not None else None
        if inner is not None and facts.enclosing_function(call) is not facts.enclosing_function(inner.call):
            found.append(Release(call, inner.handle, inner.key, inner.identity))
            inner.judged_at_callers = True
    return found


@dataclass
class Leases:
    releases: List[Release]
    locks: List[Acquire]  # acquires whose use shows they take a lock
    lock_keys: Dict[tuple, Acquire]
    #: keys the module takes only if absent (SET NX, SETNX, ``add``), whatever their use
    nx_keys: Dict[tuple, Acquire]
    #: identities of the keys a compare-and-delete script gives back (``_script_releases``)
    given_back: frozenset = frozenset()

    @classmethod
    def of_module(cls, facts: ModuleFacts) -> "Leases":
        return facts.cached("redis_leases", cls._build)

    @classmethod
    def _build(cls, facts: ModuleFacts) -> "Leases":
        acquires = _find_acquires(facts)
        releases = _find_releases(facts)
        leases = cls(releases, [], {}, {}, _script_releases(facts) if any(a.nx for a in acquires) else frozenset())
        for acquire in acquires:
            if per_process(acquire.handle, facts):
                continue
            if acquire.nx:
                leases.nx_keys.setdefault(acquire.identity, acquire)
            if leases.is_lock(acquire, facts):
                leases.locks.append(acquire)
                leases.lock_keys.setdefault(acquire.identity, acquire)
        return leases

    def _released_after(self, acquire: Acquire, facts: ModuleFacts) -> bool:
        function = facts.enclosing_function(acquire.call)
        return function is not None and any(
            r.identity == acquire.identity and facts.enclosing_function(r.call) is function
            and _after(acquire.call, r.call) and not in_exclusive_branches(acquire.call, r.call)
            for r in self.releases)

    def is_lock(self, acquire: Acquire, facts: ModuleFacts) -> bool:
        """Whether an acquire is a lock by its use: a key set only if absent (or checked for absence first) to
        decide whether to do work, and dropped when the work is done.  A cache is read, filled on a miss and
        deleted when stale; a cooldown key is set and left to expire."""
        if acquire.nx:
            if self._released_after(acquire, facts) or acquire.identity in self.given_back:
                return True  # (given back by its owner's compare-and-delete: a lease, whatever the key is called)
            if any(r.identity == acquire.identity and _names_a_release(r, facts, taken_with_nx=True)
                   for r in self.releases):
                return True
            # SETNX then EXPIRE whose result guards work is a lease whatever its name; an NX key that is only
            # tested is a run-once marker (and may well be meant to stay) unless its text calls it a lock.
            tested = result_tested(acquire.call, facts)
            return tested and (acquire.two_step_expiry is not None
                               or key_names_a_lock(acquire.key, facts, taken_with_nx=True)
                               or _owner_compared(acquire, facts))
        # A plain SET is a lock only when its absence was checked first, it stores a marker (not the value the
        # caller reads back) and it is dropped again when the work is done: by the same function, or by a
        # release of the same object (``wait_and_take()`` sets ``self.key``, ``release()`` deletes it).
        return ((self._released_after(acquire, facts) or self._released_by_its_object(acquire, facts)
                 or _answers_whether_taken(acquire, facts))
                and _checked_before(acquire, facts) and _stores_a_marker(acquire, facts))

    def _released_by_its_object(self, acquire: Acquire, facts: ModuleFacts) -> bool:
        owner = facts.enclosing_class(acquire.call)
        return owner is not None and any(
            r.identity == acquire.identity and facts.enclosing_class(r.call) is owner and _names_a_release(r, facts)
            for r in self.releases)


def _script_releases(facts: ModuleFacts) -> frozenset:
    """The identities of the keys a compare-and-delete Lua script is run on: ``client.eval(RELEASE, 1, key, token)``,
    or a script registered on a client (``release = client.register_script(RELEASE)``) called with ``keys=[key]``.
    Such a script deletes the key only while it holds the caller's token: the owner of a lease giving it back."""
    found = set()
    for call in facts.calls_named(*known.EVAL_METHODS):
        count = call.args[1] if len(call.args) > 2 else None
        if isinstance(count, ast.Constant) and type(count.value) is int and _gives_back(call.args[0], facts) \
                and redis_call(call, facts) is not None:
            found.update(key_identity(key, facts) for key in call.args[2:2 + count.value])
    registered = [r for r in facts.calls_named(REGISTER_SCRIPT_METHOD) if r.args and _gives_back(r.args[0], facts)
                  and redis_call(r, facts) is not None]
    # (a registered script is called by the name its registration is bound to: ``release(...)``, ``self._release(...)``)
    names = {dotted(target) for r in registered for statement in [parent(r)] if isinstance(statement, ast.Assign)
             for target in statement.targets} - {None}
    if names:
        bindings = Bindings.of_module(facts)
        for call in facts.calls:
            if dotted(call.func) not in names or not any(bindings.origin(call.func) is r for r in registered):
                continue
            keys = argument(call, known.Arg(known.SCRIPT_KEYS, 0))
            if isinstance(keys, (ast.List, ast.Tuple)):
                found.update(key_identity(key, facts) for key in keys.elts)
    return frozenset(found)


def _gives_back(script: ast.AST, facts: ModuleFacts) -> bool:
    text = bound_value(script, facts) if isinstance(script, ast.Name) else script
    return isinstance(text, ast.Constant) and isinstance(text.value, str) \
        and acts_for_owner(text.value, known.SCRIPT_RELEASES)


def _owner_compared(acquire: Acquire, facts: ModuleFacts) -> bool:
    """The key holds who took it: its value read back (``GET`` of the same key) is compared with the value the
    NX set stored (``return await r.get(key) == self.identity``). An owner's key is a lease, held by one
    replica and owed back; a marker meant to stay stores no owner to ask about."""
    stored = argument(acquire.call, known.Arg("value", 1))
    if stored is None or isinstance(stored, ast.Constant):
        return False
    spelled = ast.dump(stored)
    # the read back is looked for in the same object's methods, or in the same function when there is no class
    enclosing = facts.enclosing_class if facts.enclosing_class(acquire.call) is not None else facts.enclosing_function
    scope = enclosing(acquire.call)
    for call, _, _ in client_calls(facts, ("get",)):
        if enclosing(call) is not scope or not call.args or key_identity(call.args[0], facts) != acquire.identity:
            continue
        compare = parent(call)
        if isinstance(compare, ast.Await):
            compare = parent(compare)
        if isinstance(compare, ast.Compare) and any(ast.dump(side) == spelled
                                                     for side in [compare.left, *compare.comparators]):
            return True
    return False


def _answers_whether_taken(acquire: Acquire, facts: ModuleFacts) -> bool:
    """The function that sets the key answers its caller whether it did (``return True`` after the SET,
    ``return False`` on the other way): a try-lock its caller's work waits on, however the key is given back
    (a script, an expiry)."""
    function = facts.enclosing_function(acquire.call)
    if function is None:
        return False
    answers = {n.value.value for n in walk_no_nested_functions(function) if isinstance(n, ast.Return)
               and isinstance(n.value, ast.Constant) and isinstance(n.value.value, bool)}
    return answers == {True, False}


def _names_a_release(release: Release, facts: ModuleFacts, taken_with_nx: bool = False) -> bool:
    """A delete somewhere else is a release when its key's text calls it a lock or its function says so."""
    if key_names_a_lock(release.key, facts, taken_with_nx):
        return True
    function = facts.enclosing_function(release.call)
    return function is not None and bool(set(words(function.name)) & known.RELEASE_WORDS)


def _checked_before(acquire: Acquire, facts: ModuleFacts) -> bool:
    """A GET/EXISTS of the same key, earlier in the function, whose result decides whether to go on."""
    return any(result_tested(call, facts) and not in_exclusive_branches(call, acquire.call)
               for call in _reads_of_key(acquire.call, acquire.key, facts))


#: Methods that add to a collection in place: a value built up by them is data, not a marker.
_GROWING_METHODS = frozenset({"append", "extend", "update", "add", "insert", "setdefault", "__setitem__"})


def _stores_a_marker(acquire: Acquire, facts: ModuleFacts) -> bool:
    """``set(key, True)`` / ``set(key, token)``, not ``set(key, value)`` where ``value`` is what was read or what
    the function hands back (a read-through cache being filled), nor a value read from the same key or grown in
    place before it is written back (the key accumulates data across runs: deleting it is clean-up)."""
    value = argument(acquire.call, known.SET_VALUE)
    if not isinstance(value, ast.Name):
        return True
    function = facts.enclosing_function(acquire.call)
    for node in walk_no_nested_functions(function):
        if isinstance(node, ast.Return) and node.value is not None and any(
                isinstance(n, ast.Name) and n.id == value.id for n in walk(node.value)):
            return False
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _GROWING_METHODS
                and isinstance(node.func.value, ast.Name) and node.func.value.id == value.id):
            return False
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == value.id:
            return False
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == value.id for t in node.targets)
                and _reads_same_key(node.value, acquire, facts)):
            return False
    return True


def _reads_same_key(value: ast.AST, acquire: Acquire, facts: ModuleFacts) -> bool:
    """``collected = cache.get(key, set())``: the value comes from the key it is written back to."""
    while isinstance(value, ast.Await):
        value = value.value
    return (isinstance(value, ast.Call) and bool(value.args) and redis_call(value, facts) is not None
            and key_identity(value.args[0], facts) == acquire.identity)


# -- messages -----------------------------------------------------------------------------------------


#: The onceguard guards first: a lease held around work (renewed, released by compare-and-delete, a fencing
#: token) or a claim left to expire; asyncio code uses their ``a``-prefixed twins.
_GUARDS_FIRST = ("Use `run_exclusive(key, ttl, work)` for a lock held around work (renewed, released by "
                 "compare-and-delete) or `claim_once(key, ttl)` for a key left to expire "
                 "(`from onceguard.guards import run_exclusive, claim_once`). ")


def _acquire_suggestion(handle: Handle) -> str:
    if handle.kind == known.DJANGO_CACHE:
        return (_GUARDS_FIRST + "Or take the lock atomically with an expiry: "
                "`cache.add(key, token, timeout=ttl)` on a shared "
                "backend (django-redis, Memcached), or django-redis's `cache.lock(key, timeout=ttl)`; keep the work "
                "well under the TTL.")
    return (_GUARDS_FIRST + "Or take the lock in one command with a random token and an expiry: "
            "`r.set(key, token, nx=True, px=ttl_ms)` (token = `secrets.token_hex(16)`), or redis-py's "
            "`r.lock(key, timeout=ttl, blocking=False)`; keep the work well under the TTL or renew it.")


@register
class LeaseWithoutExpiry(Rule):
    code = "OG501"
    name = "lease-without-expiry"
    summary = "a Redis lock taken without both NX and an expiry, or with SETNX then EXPIRE"
    triggers = known.LEASE_TRIGGERS
    skips_tests = True

    def check(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        if facts.context.is_test:
            return  # test code exercises locks against fakes and runs in one process
        leases = Leases.of_module(facts)
        for acquire in leases.locks:
            diagnostic = self._judge(acquire)
            if diagnostic is not None:
                yield diagnostic
        yield from self._lock_objects(facts)

    def _judge(self, acquire: Acquire) -> Optional[Diagnostic]:
        spelled = f"{short(acquire.call.func)}({short(acquire.key, 40)}, …)"
        suggestion = _acquire_suggestion(acquire.handle)
        if acquire.command == known.HASH_WRITE:
            return self.finding(
                acquire.call,
                f"`{spelled}` takes a lease kept in a hash with HSET, which writes whatever is there, so two "
                f"replicas that read it free at the same moment both write themselves in and both run.",
                "Read and take it in one step: a Lua script (`r.register_script`) that checks the hash and sets the "
                "owner and its expiry only if it is free, or a string key taken with `SET key token NX PX ttl`. "
                + suggestion,
            )
        if acquire.two_step_expiry is not None:
            expire = acquire.two_step_expiry
            return self.finding(
                acquire.call,
                f"`{spelled}` claims the key and `{short(expire.func)}(…)` on line {expire.lineno} sets its expiry "
                f"separately, so a replica that dies in between leaves a key that never expires.",
                "Then the work it guards never runs again on any replica. " + suggestion,
                fix=atomic_set_fix(acquire.call, expire),
            )
        if not acquire.nx:
            also = "" if acquire.expires else " and without an expiry"
            verb = "`cache.set`" if acquire.handle.kind == known.DJANGO_CACHE else "a plain SET"
            return self.finding(
                acquire.call,
                f"`{spelled}` takes a lock with {verb}, without NX{also}, so two replicas that check the key at "
                f"the same moment both set it and both run.",
                ("" if acquire.expires else "Without an expiry, a holder that dies leaves the lock held forever. ")
                + suggestion,
            )
        if not acquire.expires:
            return self.finding(
                acquire.call,
                f"`{spelled}` takes a lock with no expiry, so a holder that dies before releasing it stops this "
                f"work on every replica for good.",
                "A holder that crashes or is killed never releases the key, and nothing else removes it. "
                + suggestion,
            )
        return None

    def _lock_objects(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        """``r.lock(name)`` (redis-py, django-redis) and ``redis_lock.Lock(r, name)`` without a TTL."""
        for call in facts.calls_named(*known.LOCK_METHODS):
            handle = redis_call(call, facts)
            if handle is None or has_spread(call):
                continue
            expiry = known.LOCK_METHODS_BY_LIBRARY.get(handle.library, known.LOCK_METHODS)[call.func.attr]
            if is_none(argument(call, expiry)) and not _only_inspected(call, facts):
                yield self._no_ttl(call, f"{short(call.func)}({short(call.args[0], 40) if call.args else ''}, …)",
                                   expiry.keyword, known.LOCK_EXPIRY_UNITS.get(handle.library, "seconds"))
        for name, arg in known.LOCK_CLASSES.items():
            for call in facts.calls_named(name.rsplit(".", 1)[-1]):
                if facts.callee(call) != name or has_spread(call):
                    continue
                if is_none(argument(call, arg)) and not _only_inspected(call, facts):
                    yield self._no_ttl(call, f"{short(call.func)}(…)", arg.keyword)

    def _no_ttl(self, call: ast.Call, spelled: str, keyword: str, unit: str = "seconds") -> Diagnostic:
        return self.finding(
            call,
            f"`{spelled}` creates a lock without `{keyword}=`, so a holder that dies keeps it forever and every "
            f"replica waits or skips the work.",
            f"Without `{keyword}=` the lock never expires. Use `run_exclusive(key, ttl, work)` (`from onceguard.guards import run_exclusive`), a lease renewed "
            f"while `work(lease)` runs; or pass `{keyword}=` ({unit}) a little above the longest run, and renew it "
            f"with `extend()` for long work.",
            fix=lock_ttl_fix(keyword) if unit == "seconds" else None,  # (the fix writes a number of seconds)
        )


@register
class UnsafeLeaseRelease(Rule):
    code = "OG502"
    name = "unsafe-lease-release"
    summary = "a Redis lock released with a plain DEL that does not check the holder's token"
    triggers = known.RELEASE_TRIGGERS
    skips_tests = True

    def check(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        if facts.context.is_test:
            return
        leases = Leases.of_module(facts)
        reported: Dict[tuple, ast.Call] = {}
        for release in leases.releases:
            if release.judged_at_callers:
                continue
            if release.identity not in leases.lock_keys and not key_names_a_lock(
                    release.key, facts, taken_with_nx=release.identity in leases.nx_keys):
                continue
            if per_process(release.handle, facts):
                continue
            if before_own_deadline(release, facts):
                continue  # released only while the lease it took cannot have expired: nobody else holds it yet
            if freed_only_on_failure(release, leases.releases, leases.locks, facts):
                continue
            if released_before_any_work(release, leases.locks, facts):
                continue  # taken back before any work: it cannot have expired into another holder's hands
            checked = owner_checked_first(release, facts)
            if checked == "sync":
                # The stored token is compared right before the delete: only a lease that expires within that one
                # round trip can be lost, and the holder has overrun its TTL by then anyway.
                continue
            place = (id(facts.enclosing_function(release.call)), release.identity)
            if place in reported:
                continue
            reported[place] = release.call
            spelled = f"{short(release.call.func)}({short(release.key, 40)})"
            if checked == "async":
                hazard = (f"`{spelled}` releases the lock after checking its value in a separate awaited GET, so it "
                          f"can delete the other replica's lock taken in between.")
                why = ("The event loop runs other tasks between the two round trips, long enough for the lease to "
                       "expire and pass to another replica. ")
            else:
                hazard = (f"`{spelled}` releases the lock without checking that this replica still holds it, so "
                          f"after an expiry it deletes the other replica's lock.")
                why = ("If the lease expired and another replica took it, this delete frees the lock for a third one "
                       "to start the same work. ")
            yield self.finding(release.call, hazard, why + _release_suggestion(release.handle))
        # (a key taken with NX and renewed elsewhere is a lease whatever releases it)
        yield from unsafe_renewals(self, facts, leases.nx_keys)


def _release_suggestion(handle: Handle) -> str:
    lua = ("a compare-and-delete Lua script (`r.register_script(\"if redis.call('get', KEYS[1]) == ARGV[1] then "
           "return redis.call('del', KEYS[1]) end return 0\")(keys=[key], args=[token])`)")
    guard = ("Let `run_exclusive(key, ttl, work)` hold the lock (`from onceguard.guards import run_exclusive`): it "
             "releases by compare-and-delete when `work(lease)` returns and gives `lease.fence` as a fencing token. ")
    if handle.kind == known.DJANGO_CACHE:
        return (guard + f"Or release only your own lock: use django-redis's `cache.lock(key, timeout=ttl)` (its release "
                f"checks the token) or {lua} on `get_redis_connection()`; for work that must never overlap, also "
                f"pass a fencing token (INCR) with every write.")
    return (guard + f"Or release only your own lock: {lua}, or use redis-py's `r.lock(key, timeout=ttl)` whose release "
            f"checks the token; for work that must never overlap, also pass a fencing token (INCR) with every "
            f"write and have the store reject older ones.")


def _only_inspected(call: ast.Call, facts: ModuleFacts, depth: int = 0) -> bool:
    """``Lock(r, key).locked()``, or a lock bound to a name that is only asked ``locked()`` / ``owned()``: built to
    look at the key, never acquired, so it has no lifetime to expire.  A small helper that returns the lock
    (``def make_lock(c, key): return Lock(c, key)``) is judged by what its callers do with it."""
    above = parent(call)
    if isinstance(above, ast.Attribute):
        return above.attr in known.LOCK_INSPECTORS
    statement = facts.statement_of(call)
    if isinstance(statement, ast.Return) and statement.value is call:
        return _callers_only_inspect(facts.enclosing_function(call), facts, depth)
    if not (isinstance(statement, ast.Assign) and statement.value is call and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)):
        return False
    name = statement.targets[0].id
    function = facts.enclosing_function(call)
    uses = [node for node in walk_no_nested_functions(function if function is not None else facts.tree)
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)]
    return bool(uses) and all(isinstance(parent(use), ast.Attribute) and parent(use).attr in known.LOCK_INSPECTORS
                              and isinstance(parent(parent(use)), ast.Call) for use in uses)


#: How many helpers that return a lock are followed to their callers.
_MAX_LOCK_HELPER_DEPTH = 3


def _callers_only_inspect(function: Optional[ast.AST], facts: ModuleFacts, depth: int) -> bool:
    """Every call of ``function`` (a module function handing back a lock) only inspects the lock it gets."""
    if (not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or depth >= _MAX_LOCK_HELPER_DEPTH
            or facts.enclosing_class(function) is not None or facts.enclosing_function(function) is not None):
        return False
    sites = [(site, facts) for site in facts.calls_named(function.name) if isinstance(site.func, ast.Name)]
    if facts.context.cross_file:
        from ..project.renamed_callers import project_callers

        sites += [(site, other) for site, other in project_callers(function, facts) if other is not facts]
    return bool(sites) and all(_only_inspected(site, other, depth + 1) for site, other in sites)
