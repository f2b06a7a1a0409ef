"""Redis leases: a lock key that can outlive its holder (OG501) and a release that can drop somebody
else's lock (OG502).  reference/frameworks.md §5.

Only receivers whose origin is visible count: a client built by ``redis.Redis(...)``,
``redis.from_url``, ``redis.asyncio``, ``django_redis.get_redis_connection``, Django's ``cache`` /
``caches[...]``, or a parameter annotated with one of those types.  A key is a lock when its use says
so: the same key is deleted as a release, a two-step acquire's result guards the work, or the key is
named as one (``lock:report``, ``report_lock``).  Cache writes with an expiry and plain cache
invalidation are neither.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Tuple

from ..executed_sql import sql_text
from ..facts import ModuleFacts, ancestors, walk_no_nested_functions
from ..handles import Handle, Handles
from ..knowledge import redis_clients as known
from ..model import Diagnostic
from ..registry import register
from .base import Rule

# -- which receivers are Redis ---------------------------------------------------------------------------


class RedisClients(Handles):
    """The bindings machinery of :class:`Handles`, fed with Redis constructors instead of database ones."""

    CACHE_KEY = "redis_clients"
    CONSTRUCTORS = known.CONSTRUCTORS
    OBJECTS = known.OBJECTS
    ANNOTATIONS = known.ANNOTATIONS

    def of(self, expr: Optional[ast.AST], _depth: int = 0) -> Optional[Handle]:
        if isinstance(expr, ast.Subscript):  # django.core.cache.caches["locks"]
            if self.facts.qualify(expr.value) in known.CACHE_MAPPINGS:
                return Handle(known.DJANGO_CACHE, "django", "caches")
            return None
        return super().of(expr, _depth)

    def _of_call(self, call: ast.Call, depth: int) -> Optional[Handle]:
        callee = self.facts.callee(call)
        if callee in self.CONSTRUCTORS:
            kind, library = self.CONSTRUCTORS[callee]
            return Handle(kind, library, callee.rsplit(".", 1)[-1], call)
        return None


def redis_call(call: ast.Call, facts: ModuleFacts) -> Optional[Handle]:
    """The client a ``<client>.<command>(...)`` call is sent to, when its origin is visible."""
    if not isinstance(call.func, ast.Attribute):
        return None
    return RedisClients.of_module(facts).of(call.func.value)


# -- arguments ----------------------------------------------------------------------------------------


def has_spread(call: ast.Call) -> bool:
    """``*args`` or ``**kwargs``: which arguments are passed is not visible."""
    return any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)


def argument(call: ast.Call, arg: known.Arg, keyword: Optional[str] = None) -> Optional[ast.AST]:
    name = keyword or arg.keyword
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    if arg.position is not None and arg.position < len(call.args):
        return call.args[arg.position]
    return None


def is_none(node: Optional[ast.AST]) -> bool:
    return node is None or (isinstance(node, ast.Constant) and node.value is None)


def is_false(node: Optional[ast.AST]) -> bool:
    return node is None or (isinstance(node, ast.Constant) and node.value in (False, None, 0))


def key_argument(call: ast.Call, handle: Handle, arg: known.Arg) -> Optional[ast.AST]:
    keyword = known.CACHE_KEY_KEYWORD if handle.kind == known.DJANGO_CACHE else None
    return argument(call, arg, keyword)


def short(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- keys ---------------------------------------------------------------------------------------------

_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


def _words(text: str) -> Iterable[str]:
    return (w.lower() for w in _WORD.findall(text))


def key_names_a_lock(key: Optional[ast.AST], facts: ModuleFacts) -> bool:
    """``"lock:report"``, ``f"{job}_lock"``, ``LOCK_KEY``, ``self.lock_key``: the key calls itself a lock."""
    if key is None:
        return False
    texts: List[str] = []
    extracted = sql_text(key, facts)
    if extracted is not None:
        texts.append(extracted[0])
    for node in ast.walk(key):
        if isinstance(node, ast.Name):
            texts.append(node.id)
        elif isinstance(node, ast.Attribute):
            texts.append(node.attr)
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                texts.extend(_self_attribute_texts(node, facts))
    return any(word in known.LOCK_KEY_WORDS for text in texts for word in _words(text))


def _self_attribute_texts(node: ast.Attribute, facts: ModuleFacts) -> List[str]:
    cls_node = facts.enclosing_class(node)
    if cls_node is None:
        return []
    texts = []
    for _, value, is_annotation in RedisClients.of_module(facts)._self_attributes(cls_node).get(node.attr, []):
        if not is_annotation and value is not None:
            extracted = sql_text(value, facts)
            if extracted is not None:
                texts.append(extracted[0])
    return texts


def key_scope(key: ast.AST, facts: ModuleFacts) -> Tuple[str, int]:
    """Where two spellings of the same key mean the same key: a function, a class (``self.key``), the module."""
    function = facts.enclosing_function(key)
    if isinstance(key, ast.Attribute) and isinstance(key.value, ast.Name) and key.value.id == "self":
        cls_node = facts.enclosing_class(key)
        if cls_node is not None:
            return ("class", id(cls_node))
    if isinstance(key, ast.Name) and function is not None and key.id not in _local_names(function, facts):
        return ("module", 0)
    return ("function", id(function))


def _local_names(function: ast.AST, facts: ModuleFacts) -> frozenset:
    def build(_facts: ModuleFacts) -> frozenset:
        names = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
        for node in walk_no_nested_functions(function):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
        return frozenset(names)

    return facts.cached(f"local_names:{id(function)}", build)


def key_identity(key: ast.AST, facts: ModuleFacts) -> Tuple[Tuple[str, int], str]:
    return key_scope(key, facts), ast.dump(key)


# -- how a result is used -----------------------------------------------------------------------------


def result_tested(call: ast.Call, facts: ModuleFacts) -> bool:
    """The call's result decides whether work runs: tested by ``if``/``while``, returned, or kept and tested."""
    node: ast.AST = call
    for above in ancestors(call):
        if isinstance(above, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            return node is above.test
        if isinstance(above, ast.Return):
            return True
        if isinstance(above, (ast.Assign, ast.AnnAssign)):
            targets = above.targets if isinstance(above, ast.Assign) else [above.target]
            return _names_tested({t.id for t in targets if isinstance(t, ast.Name)}, call, facts)
        if not isinstance(above, ast.expr):
            return False
        node = above
    return False


def _names_tested(names: set, call: ast.Call, facts: ModuleFacts) -> bool:
    if not names:
        return False
    function = facts.enclosing_function(call)
    for node in walk_no_nested_functions(function if function is not None else facts.tree):
        if isinstance(node, (ast.If, ast.While)):
            tested = node.test
        elif isinstance(node, ast.Return) and node.value is not None:
            tested = node.value
        else:
            continue
        if any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(tested)):
            return True
    return False


# -- lock acquisitions ----------------------------------------------------------------------------------


@dataclass
class Acquire:
    call: ast.Call
    handle: Handle
    command: str  # set, setnx, add
    key: Optional[ast.AST]
    identity: Optional[tuple]  # see key_identity
    nx: bool
    expires: bool
    two_step_expiry: Optional[ast.Call] = None  # the EXPIRE that follows a SETNX


def _calls_after_in_function(call: ast.Call, names: Iterable[str], facts: ModuleFacts) -> List[ast.Call]:
    function = facts.enclosing_function(call)
    return [
        c for c in facts.calls_named(*names)
        if facts.enclosing_function(c) is function and (c.lineno, c.col_offset) > (call.lineno, call.col_offset)
    ]


def _find_acquires(facts: ModuleFacts) -> List[Acquire]:
    found: List[Acquire] = []
    for call in facts.calls_named("set", "aset", known.SETNX, *known.CACHE_ADD):
        handle = redis_call(call, facts)
        if handle is None or has_spread(call):
            continue
        command = call.func.attr
        if handle.kind == known.REDIS and command in ("set", known.SETNX):
            key = argument(call, known.SET_KEY)
            if command == known.SETNX:
                nx, expires = True, False
            else:
                nx = not is_false(argument(call, known.SET_NX))
                expires = any(not is_none(argument(call, arg)) for arg in known.SET_EXPIRY)
        elif handle.kind == known.DJANGO_CACHE and command in known.CACHE_SET | known.CACHE_ADD:
            key = argument(call, known.CACHE_KEY)
            timeout = argument(call, known.CACHE_TIMEOUT)
            # An omitted timeout is the backend default, which expires; only an explicit None never does.
            expires = not (timeout is not None and is_none(timeout))
            nx = command in known.CACHE_ADD or not is_false(argument(call, known.CACHE_NX))
        else:
            continue
        if key is None or not is_false(argument(call, known.Arg("xx"))):
            continue  # SET XX only refreshes a key somebody already holds
        acquire = Acquire(call, handle, command, key, key_identity(key, facts), nx, expires)
        if not expires:
            for later in _calls_after_in_function(call, known.EXPIRY_COMMANDS, facts):
                if redis_call(later, facts) is not None and later.args and ast.dump(later.args[0]) == ast.dump(key):
                    acquire.two_step_expiry = later
                    break
        found.append(acquire)
    return found


def _find_releases(facts: ModuleFacts) -> List[Tuple[ast.Call, Handle, ast.AST]]:
    """``r.delete(key)``, ``cache.delete(key)``, ``r.execute_command("DEL", key)`` on a Redis receiver."""
    found = []
    for call in facts.calls_named(*known.DELETE_COMMANDS):
        handle = redis_call(call, facts)
        if handle is not None and len(call.args) == 1 and not call.keywords:
            found.append((call, handle, call.args[0]))
    for call in facts.calls_named("execute_command"):
        if (len(call.args) == 2 and isinstance(call.args[0], ast.Constant)
                and str(call.args[0].value).upper() in known.RAW_DELETE):
            handle = redis_call(call, facts)
            if handle is not None:
                found.append((call, handle, call.args[1]))
    found.sort(key=lambda item: (item[0].lineno, item[0].col_offset))
    return found


@dataclass
class Leases:
    releases: List[Tuple[ast.Call, Handle, ast.AST]]
    released_keys: Dict[tuple, ast.Call]
    locks: List[Acquire]  # acquires whose use shows they take a lock
    lock_keys: Dict[tuple, Acquire]

    @classmethod
    def of_module(cls, facts: ModuleFacts) -> "Leases":
        return facts.cached("redis_leases", cls._build)

    @classmethod
    def _build(cls, facts: ModuleFacts) -> "Leases":
        acquires = _find_acquires(facts)
        releases = _find_releases(facts)
        released = {key_identity(key, facts): call for call, _, key in releases}
        leases = cls(releases, released, [], {})
        for acquire in acquires:
            if leases.is_lock(acquire, facts):
                leases.locks.append(acquire)
                leases.lock_keys.setdefault(acquire.identity, acquire)
        return leases

    def is_lock(self, acquire: Acquire, facts: ModuleFacts) -> bool:
        """Whether an acquire is a lock by its use, not by a guess."""
        if key_names_a_lock(acquire.key, facts):
            return True
        released = acquire.identity in self.released_keys
        if acquire.nx:
            # SET NX whose key is deleted again is a lock; SETNX then EXPIRE whose result guards work is a
            # lease.  An NX key that is only tested is a run-once marker and may well be meant to stay.
            return released or (acquire.two_step_expiry is not None and result_tested(acquire.call, facts))
        # A plain SET is a lock only when the code checks the key first and deletes it afterwards.
        return released and _checked_before(acquire, facts)


def _checked_before(acquire: Acquire, facts: ModuleFacts) -> bool:
    function = facts.enclosing_function(acquire.call)
    dump = ast.dump(acquire.key)
    for call in facts.calls_named("get", "exists", "aget"):
        if (facts.enclosing_function(call) is function and call.lineno <= acquire.call.lineno and call.args
                and ast.dump(call.args[0]) == dump and redis_call(call, facts) is not None):
            return True
    return False


# -- messages -----------------------------------------------------------------------------------------


def _acquire_suggestion(handle: Handle) -> str:
    if handle.kind == known.DJANGO_CACHE:
        return ("Take the lock atomically with an expiry: `cache.add(key, token, timeout=ttl)` on a shared "
                "backend (django-redis, Memcached), or django-redis's `cache.lock(key, timeout=ttl)`; keep the work "
                "well under the TTL.")
    return ("Take the lock in one command with a random token and an expiry: "
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
        if acquire.two_step_expiry is not None:
            expire = acquire.two_step_expiry
            return self.finding(
                acquire.call,
                f"`{spelled}` claims the key and `{short(expire.func)}(…)` on line {expire.lineno} gives it an "
                f"expiry in a second command: if this replica dies between the two, the key never expires and "
                f"the work it guards never runs again on any replica.",
                suggestion,
            )
        if not acquire.nx:
            also = "" if acquire.expires else " and without an expiry"
            verb = "`cache.set`" if acquire.handle.kind == known.DJANGO_CACHE else "a plain SET"
            return self.finding(
                acquire.call,
                f"`{spelled}` takes a lock with {verb}, without NX{also}: two replicas that check the key at "
                f"the same moment both set it and both run"
                + ("" if acquire.expires else "; a holder that dies leaves it held forever") + ".",
                suggestion,
            )
        if not acquire.expires:
            return self.finding(
                acquire.call,
                f"`{spelled}` takes a lock with no expiry: if the holder crashes or is killed before releasing "
                f"it, the key stays forever and no replica runs this work again.",
                suggestion,
            )
        return None

    def _lock_objects(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        """``r.lock(name)`` (redis-py, django-redis) and ``redis_lock.Lock(r, name)`` without a TTL."""
        for call in facts.calls_named(*known.LOCK_METHODS):
            handle = redis_call(call, facts)
            if handle is None or has_spread(call):
                continue
            timeout = argument(call, known.LOCK_METHODS[call.func.attr])
            if is_none(timeout):
                yield self._no_ttl(call, f"{short(call.func)}({short(call.args[0], 40) if call.args else ''}, …)",
                                   "timeout")
        for name, arg in known.LOCK_CLASSES.items():
            for call in facts.calls_named(name.rsplit(".", 1)[-1]):
                if facts.callee(call) != name or has_spread(call):
                    continue
                if is_none(argument(call, arg)):
                    yield self._no_ttl(call, f"{short(call.func)}(…)", arg.keyword)

    def _no_ttl(self, call: ast.Call, spelled: str, keyword: str) -> Diagnostic:
        return self.finding(
            call,
            f"`{spelled}` creates a lock without `{keyword}=`: it never expires, so a holder that dies keeps "
            f"it held and every replica waits or skips the work forever.",
            f"Pass `{keyword}=` (seconds) a little above the longest run, and renew it with `extend()` for long "
            f"work, or take it with `r.set(key, token, nx=True, px=ttl_ms)`.",
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
        for call, handle, key in leases.releases:
            identity = key_identity(key, facts)
            acquire = leases.lock_keys.get(identity)
            if acquire is None and not key_names_a_lock(key, facts):
                continue
            spelled = f"{short(call.func)}({short(key, 40)})"
            if _token_compared_first(call, key, facts):
                hazard = (f"`{spelled}` releases the lock after comparing its value in a separate GET: the lease "
                          f"can expire and pass to another replica between the two round trips, and this "
                          f"deletes that replica's lock.")
            else:
                hazard = (f"`{spelled}` releases the lock without checking that this replica still holds it: if "
                          f"the lease expired and another replica took it, this deletes the other replica's lock "
                          f"and a third one can start the same work.")
            yield self.finding(call, hazard, _release_suggestion(handle))


def _release_suggestion(handle: Handle) -> str:
    lua = ("a compare-and-delete Lua script (`r.register_script(\"if redis.call('get', KEYS[1]) == ARGV[1] then "
           "return redis.call('del', KEYS[1]) end return 0\")(keys=[key], args=[token])`)")
    if handle.kind == known.DJANGO_CACHE:
        return (f"Release only your own lock: use django-redis's `cache.lock(key, timeout=ttl)` (its release "
                f"checks the token) or {lua} on `get_redis_connection()`; for work that must never overlap, also "
                f"pass a fencing token (INCR) with every write.")
    return (f"Release only your own lock: {lua}, or use redis-py's `r.lock(key, timeout=ttl)` whose release "
            f"checks the token; for work that must never overlap, also pass a fencing token (INCR) with every "
            f"write and have the store reject older ones.")


def _token_compared_first(call: ast.Call, key: ast.AST, facts: ModuleFacts) -> bool:
    """``if r.get(key) == token: r.delete(key)``: compared, but in two round trips."""
    dump = ast.dump(key)
    for above in ancestors(call):
        if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return False
        if isinstance(above, ast.If):
            for node in ast.walk(above.test):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr in ("get", "aget") and node.args and ast.dump(node.args[0]) == dump):
                    return True
    return False
