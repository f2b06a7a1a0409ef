"""OG607: a cache that lives in one process, used to coordinate requests as if every replica shared it.

A ``cachetools`` cache, Flask-Caching's ``SimpleCache``/``NullCache`` and Django's local-memory, file and
dummy backends (Django's default when the project sets no ``CACHES``) keep their entries in one process.
As a read-through cache of derivable data that is right: each replica fills its own copy on a miss.  As
shared state it is not, and the rule reports two such uses:

- a store: one function writes records into the cache that no other process can derive (the status of work
  this process started, a result), and another function reads them and never fills the cache on a miss — a
  status endpoint on another replica finds nothing;
- coordination calls: ``cache.add`` whose result decides (a lock, a once-only marker) and ``incr``/``decr``
  (a counter, a rate limit) on such a cache — each replica holds its own lock and its own count.
"""
from __future__ import annotations

import ast
import re
from typing import Iterator, List, Optional, Set, Tuple

from ..project import process_state as state
from ..analysis.facts import ModuleFacts, ancestors, parent, spells_triggers, walk
from ..analysis.names import dotted
from ..knowledge import process_state as known
from ..model import Diagnostic, Fix, Related
from ..project.flask_cache_types import cache_types
from ..project.forwarding import forwarded
from ..project.module_caches import imports_a_module_cache
from ..project.minted_keys import minted_by_callers, minted_key, minted_value
from ..project.reach import Reach, runs
from ..project.settings_objects import django_settings_modules
from ..project.django_caches import alias_is_per_process, cache_alias_bound, caches_settings, django_cache_behind
from .memoized_effects import TRIGGERS as ONCE_GATE_TRIGGERS, once_gates
from .base import Rule
from .registry import register

_STORE_SUGGESTION = ("Keep work status and results where every replica reads them: a database row keyed by the "
                     "job id, a Redis hash with a TTL (`HSET` + `EXPIRE`), or the task queue's result backend; "
                     "a per-process cache may only hold what a miss can compute again")
_COORDINATION_SUGGESTION = ("Point the cache at a store every replica shares (Django `RedisCache`/`PyMemcacheCache` "
                            "in `CACHES`, Flask-Caching `CACHE_TYPE = \"RedisCache\"`), so `add` is one lock and "
                            "`incr` one counter for all of them; or use Redis directly (`SET key token NX EX ttl`, "
                            "`INCR` + `EXPIRE`)")


def _keeps_in_memory(value: ast.AST, facts: ModuleFacts) -> bool:
    """``value`` makes a cache that keeps its entries in this process: a cachetools or cachelib cache, or a
    Flask-Caching ``Cache`` whose every configured backend is the in-memory one."""
    constructor = state.constructed(value, facts)
    if constructor in known.PROCESS_CACHE_CONSTRUCTORS:
        return True
    if constructor in known.FLASK_CACHE_CONSTRUCTORS:
        types = cache_types(value, facts)
        return bool(types) and types <= known.FLASK_MEMORY_CACHE_TYPES
    return False


def _cache_bindings(facts: ModuleFacts) -> Iterator[state.Binding]:
    """Module-level names and class or instance attributes bound to a per-process cache object."""
    for statement in state._top_level_statements(facts.tree):
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None \
                and _keeps_in_memory(statement.value, facts):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    yield state.Binding(statement.value, statement, facts, state.MODULE, target.id)
    yield from _imported_cache_bindings(facts)
    for cls in facts.classes:
        seen: Set[str] = set()
        for node in walk(cls):
            target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else (
                node.target if isinstance(node, ast.AnnAssign) else None)
            value = getattr(node, "value", None)
            if target is None or value is None or state.constructed(value, facts) not in known.PROCESS_CACHE_CONSTRUCTORS:
                continue
            name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
            if name and name not in seen and facts.enclosing_class(node) is cls:
                seen.add(name)
                binding = state.class_attribute_binding(cls, name, facts)
                if binding is not None:
                    yield binding


#: A module that makes a cache object (``TTLCache(``, ``SimpleCache(``, Flask-Caching's ``Cache(``).
_MAKES_CACHE = re.compile(rb"Cache[ \t]*\(")


def _imported_cache_bindings(facts: ModuleFacts) -> Iterator[state.Binding]:
    """Names this module imports that another module binds to a per-process cache (``from .extensions import
    cache``): the records this module keeps there are in the same process's memory (command line only)."""
    if not facts.context.cross_file:
        return
    from ..project import index as project

    text = "\n".join(facts.lines)
    for local, target in sorted(facts.imports.aliases.items()):
        # (a cache is used through its methods or as a mapping; a name spelled neither way is not kept here)
        if "." not in target or (f"{local}." not in text and f"{local}[" not in text):
            continue
        # (read only when the module it names makes a cache by that name: most imports are of anything else)
        module, _, name = target.rpartition(".")
        roots = project.roots_for(facts)
        path = project.module_path(module, roots)
        source = project.read_bytes(path) if path is not None else b""
        if not _MAKES_CACHE.search(source) or name.encode() not in source:
            continue
        found = project.find_assignment(target, facts.config, roots)
        if found is None:
            continue
        value, other = found
        if other is facts or other.context.is_test or not _keeps_in_memory(value, other):
            continue
        statement = parent(value)
        if statement is not None:
            yield state.Binding(value, statement, other, state.MODULE, local)


def _status_record(value: ast.AST, facts: ModuleFacts) -> bool:
    """A value that records what happened here: a constant, or a record built with a constant field
    (``Status(state="running")``, ``{"state": "done"}``), also by a small helper that returns it."""
    while isinstance(value, ast.Await):
        value = value.value
    through = forwarded(value, facts) if isinstance(value, ast.Call) else None
    if through is not None:
        value = through.call
    if isinstance(value, ast.Constant):
        return True
    if isinstance(value, ast.Dict):
        return any(isinstance(v, ast.Constant) and isinstance(v.value, str) for v in value.values)
    if isinstance(value, ast.Call):
        name = value.func.attr if isinstance(value.func, ast.Attribute) else getattr(value.func, "id", "")
        if not name[:1].isupper():
            return False
        arguments = list(value.args) + [k.value for k in value.keywords]
        return any(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in arguments)
    return False


def _cache_clears(facts: ModuleFacts) -> Iterator[Tuple[ast.AST, ast.Attribute]]:
    """(the call that clears, ``memo.cache_clear``) for ``memo.cache_clear()`` and for ``memo.cache_clear`` handed
    as a callback to a call that runs it (``transaction.on_commit(memo.cache_clear)``)."""
    for call in facts.calls_named("cache_clear"):
        if isinstance(call.func, ast.Attribute) and not call.args:
            yield call, call.func
    for call in facts.calls:
        for handed in [*call.args, *(k.value for k in call.keywords)]:
            if isinstance(handed, ast.Attribute) and handed.attr == "cache_clear":
                yield call, handed


def _written_value(node: ast.AST) -> Optional[ast.AST]:
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        return node.value
    if isinstance(node, ast.Call) and len(node.args) >= 2:
        return node.args[1]  # ``cache.set(key, value)``
    return None


def _store_use(binding: state.Binding, facts: ModuleFacts):
    """(write, read) when one function writes status records into the cache and another function reads it
    without ever filling it."""
    found = state.accesses(binding, facts)
    writes = [a for a in found.of_kind(state.WRITE_RECORD, state.WRITE_MARK)
              if a.function is not None and (_status_record(_written_value(a.node) or a.node, facts)
                                             or minted_key(a.node, facts) or minted_by_callers(a.node, facts)
                                             or minted_value(a.node, _written_value(a.node), facts))]
    if not writes:
        return None
    writers = found.functions(state.WRITE_RECORD, state.WRITE_MARK, state.WRITE_DERIVED, state.WRITE_OBJECT,
                              state.WRITE_COUNTER, state.WRITE_CLOCK)
    for read in found.of_kind("decide", "read"):
        if read.function is not None and id(read.function) not in writers:
            return writes[0], read
    return None


# -- coordination calls on a per-process Django or Flask cache ----------------------------------------------
def _django_cache_is_per_process(facts: ModuleFacts) -> Optional[str]:
    """Why the project's Django cache is per process: no ``CACHES`` setting anywhere (the default is local
    memory), or every backend it names is a local-memory, file or dummy one.  None when unknown (flake8 sees
    one file) or shared."""
    if not facts.context.cross_file:
        return None
    backends: List[str] = []
    for setting in caches_settings(facts):
        values = [value.value for node in walk(setting) if isinstance(node, ast.Dict)
                  for key, value in zip(node.keys, node.values)
                  if isinstance(key, ast.Constant) and key.value == "BACKEND"
                  and isinstance(value, ast.Constant) and isinstance(value.value, str)]
        if any(isinstance(key, ast.Constant) and key.value == "BACKEND" and not isinstance(value, ast.Constant)
               for node in walk(setting) if isinstance(node, ast.Dict)
               for key, value in zip(node.keys, node.values)):
            return None  # a backend chosen at run time: unknown
        if not values:
            return None  # built from the environment or elsewhere: unknown, stay silent
        backends.extend(values)
    if not backends:
        # The default applies only where the settings are in view: a fragment of a project says nothing.
        if not django_settings_modules(facts):
            return None
        return "the settings set no `CACHES` and Django's default cache is per process"
    if all(b in known.DJANGO_PROCESS_BACKENDS for b in backends):
        return f"`CACHES` names only per-process backends ({', '.join(sorted({b.rsplit('.', 1)[-1] for b in backends}))})"
    return None


def _counts_written_back(facts: ModuleFacts) -> List[Tuple[ast.Call, ast.Call]]:
    """(read, write) in one function: ``used = cache.get(key, 0)`` on Django's cache, then ``cache.set(key, used +
    1)`` of the same key: a counter written out in two steps."""
    found = []
    for write in facts.calls_named(*_CACHE_WRITES):
        if not (isinstance(write.func, ast.Attribute) and len(write.args) >= 2
                and (facts.qualify(write.func.value) or "") in known.DJANGO_CACHE_NAMES):
            continue
        function = facts.enclosing_function(write)
        changed = {n.id for node in walk(write.args[1])
                   if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub))
                   for n in (node.left, node.right) if isinstance(n, ast.Name)}
        key = ast.dump(write.args[0])
        for read in facts.calls_named(*_CACHE_READS):
            statement = facts.statement_of(read)
            if (read.args and ast.dump(read.args[0]) == key and facts.enclosing_function(read) is function
                    and isinstance(read.func, ast.Attribute) and ast.dump(read.func.value) == ast.dump(write.func.value)
                    and isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id in changed
                                                                  for t in statement.targets)):
                found.append((read, write))
                break
    return found


#: Django's cache API: reading a value and setting one (sync and async).
_CACHE_READS = ("get", "aget")
_CACHE_WRITES = ("set", "aset")


def _result_decides(call: ast.Call) -> bool:
    """The result of ``cache.add(...)`` is tested or kept: it says whether this caller got the key."""
    above = parent(call)
    if isinstance(above, ast.Await):
        above = parent(above)
    return not isinstance(above, ast.Expr)


def _refused_by_exception(call: ast.Call, made: Optional[str]) -> bool:
    """``try: await cache.add(key, ...) except ValueError: return False``: a cache whose ``add`` raises when the key
    is present answers through the exception, and a handler that leaves acts on the answer."""
    raised = known.ADD_RAISES.get(made or "")
    if raised is None:
        return False
    for above in ancestors(call):
        if isinstance(above, ast.Try) and any(_catches(handler, raised) and _leaves(handler.body)
                                              for handler in above.handlers):
            return True
        if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef)):
            break
    return False


def _catches(handler: ast.ExceptHandler, name: str) -> bool:
    caught = handler.type
    names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
    return caught is None or any(dotted(n) in (name, f"builtins.{name}", "Exception") for n in names)


def _leaves(body: List[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue))


def _membership(test: ast.AST, name: str) -> Optional[Tuple[ast.AST, bool]]:
    """(key, present) for ``key in <name>`` (present: True) or ``key not in <name>`` (False)."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.In, ast.NotIn)) \
            and isinstance(test.comparators[0], ast.Name) and test.comparators[0].id == name:
        return test.left, isinstance(test.ops[0], ast.In)
    return None


def _leaves_without_reading(body: List[ast.stmt], name: str) -> bool:
    """The branch leaves (``return False``, ``return``, ``raise``, ``continue``) and reads nothing out of the cache:
    a key seen is a request to refuse, not a value to hand back (which would be a memo)."""
    if not body or not isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue)):
        return False
    return not any(isinstance(n, ast.Name) and n.id == name for statement in body for n in walk(statement))


def _reads_values(function: ast.AST, name: str) -> bool:
    """``name[key]`` read, or ``name.get(...)``/``.pop(...)``: the function hands back what the cache holds."""
    for node in walk(function):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == name \
                and isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == name \
                and node.attr in ("get", "pop", "setdefault", "values", "items"):
            return True
    return False


def _once_only_markers(name: str, facts: ModuleFacts) -> List[ast.AST]:
    """The assignments ``<name>[key] = ...`` that follow a test of ``key`` in ``name`` whose present branch leaves
    without reading the cache, in the same function."""
    found: List[ast.AST] = []
    for function in facts.functions:
        tested = []
        for node in walk(function):
            if isinstance(node, ast.If):
                membership = _membership(node.test, name)
                if membership is None:
                    continue
                key, present = membership
                if present and _leaves_without_reading(node.body, name):
                    tested.append((ast.dump(key), node))
                elif not present and not _reads_values(function, name):
                    # ``if key not in seen: seen[key] = now; return True``: set only when absent, never read
                    tested.append((ast.dump(key), node))
            elif tested and isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and target.value.id == name \
                        and any(ast.dump(target.slice) == key and node.lineno >= test.lineno for key, test in tested) \
                        and facts.enclosing_function(node) is function:
                    found.append(node)
    return found


#: Decorators that memoise a function's answers in process memory.
_MEMO_DECORATORS = frozenset({"functools.lru_cache", "functools.cache", "lru_cache", "cache"})
#: Calls by which a memoised function reads what the replicas share (SQL, an ORM query, a cache server).
_SHARED_READS = frozenset({"execute", "scalars", "scalar", "query", "fetch", "fetchrow", "fetchall", "objects",
                           "hgetall", "get_many", "filter", "all"})


def _memoised_function(reference: ast.AST, facts: ModuleFacts):
    """(def, its module) of an ``lru_cache``-decorated function ``reference`` names, here or (CLI) imported."""
    from ..analysis.applied_decorators import decorators
    from ..project import index as project

    found = None
    if isinstance(reference, ast.Name) and not facts.imports.is_imported(reference.id):
        function = next((f for f in facts.functions_by_name.get(reference.id, ())
                         if facts.enclosing_function(f) is None), None)
        found = (function, facts) if function is not None else None
    elif facts.context.cross_file and isinstance(reference, (ast.Name, ast.Attribute)):
        qualified = facts.qualify(reference) or ""
        found = project.find_function(qualified, facts.config, project.roots_for(facts)) if "." in qualified else None
    if found is None:
        return None
    function, where = found
    for decorator in decorators(function, where):
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (where.qualify(target) or "") in _MEMO_DECORATORS:
            return function, where
    return None


#: Decorators of cachetools that keep a function's answers in the cache object handed as ``cache=``.
_CACHETOOLS_MEMO_DECORATORS = frozenset({"cachetools.cached", "cachetools.func.cached"})
#: What takes entries out of a mapping: one key, or all of them.
_EVICTIONS = frozenset({"pop", "clear", "popitem", "__delitem__"})


def _cachetools_memos(facts: ModuleFacts):
    """name of a module-level per-process cache -> the function ``@cached(cache=name)`` fills it with shared data."""
    from ..analysis.applied_decorators import decorators

    bound = {binding.name for binding in _cache_bindings(facts) if binding.scope == state.MODULE}
    memos = {}
    for function in facts.functions:
        for decorator in decorators(function, facts):
            if not isinstance(decorator, ast.Call) or (facts.qualify(decorator.func) or "") not in \
                    _CACHETOOLS_MEMO_DECORATORS:
                continue
            handed = next((k.value for k in decorator.keywords if k.arg == "cache"),
                          decorator.args[0] if decorator.args else None)
            if isinstance(handed, ast.Name) and handed.id in bound and _reads_shared_data(function, facts):
                memos[handed.id] = function
    return memos


def _taken_out_of(node: ast.AST) -> Tuple[Optional[str], str]:
    """(the module-level name an entry is taken out of, how it is written) for ``name.pop(...)``,
    ``name.clear()``, ``del name[...]``; (None, "") otherwise."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _EVICTIONS \
            and isinstance(node.func.value, ast.Name):
        return node.func.value.id, f"{node.func.value.id}.{node.func.attr}(...)"
    if isinstance(node, ast.Delete):
        for target in node.targets:
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                return target.value.id, f"del {target.value.id}[...]"
    return None, ""


def _reads_shared_data(function, facts: ModuleFacts) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _SHARED_READS
               or isinstance(n, ast.Attribute) and n.attr == "objects" for n in walk(function))


@register
class PerProcessCacheCoordination(Rule):
    code = "OG607"
    name = "per-process-cache-coordination"
    summary = ("a per-process cache (cachetools, SimpleCache, Django local memory) used as shared state: a status "
               "store, a lock or a counter other replicas never see")
    triggers = known.CACHE_TRIGGERS + ONCE_GATE_TRIGGERS
    skips_tests = True

    @staticmethod
    def project_files(config, path: str) -> bool:
        """A module that imports another module's module-level cache (``from .extensions import cache``)."""
        return imports_a_module_cache(config, path)

    def check(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        context = facts.context
        if context.is_test or context.is_migration or Reach.of_module(facts).module_is_one_off:
            return
        if spells_triggers(facts, ONCE_GATE_TRIGGERS):
            yield from once_gates(self, facts)
        if not (spells_triggers(facts, known.CACHE_TRIGGERS)
                or imports_a_module_cache(facts.config, facts.context.path or "")):
            return  # (admitted by a memoised function alone: no cache of the kinds below is in sight)
        yield from self._stores(facts)
        yield from self._coordination(facts)
        yield from self._markers(facts)
        yield from self._cleared_memos(facts)
        yield from self._invalidated_caches(facts)

    def _invalidated_caches(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        """A ``cachetools`` cache a ``@cached(cache=...)`` function fills with what the replicas share (a role, a
        flag read from the database), whose entries request or job code takes out when it changes that data
        (``_roles.pop(hashkey(user_id))``, ``del _roles[key]``, ``_roles.clear()``): the change reaches this
        process's copy only; every other replica serves the stale entry until it expires."""
        memos = _cachetools_memos(facts)
        if not memos:
            return
        for node in facts.nodes:
            name, taken = _taken_out_of(node)
            if name is None or name not in memos:
                continue
            function = facts.enclosing_function(node)
            memo = memos[name]
            if function is None or function is memo:
                continue
            answer = runs(node, facts)
            if not answer.every_replica or runs(node, facts, startup_only=True).every_replica:
                continue  # not request or job code (start-up empties every replica's copy as it boots)
            yield self.finding(
                node,
                f"`{taken}` takes the entry out of this process's copy of `{name}`, the cache of `{memo.name}()`, so "
                "every other replica keeps serving the value it cached before the change.",
                "A cachetools cache lives in each worker process of each replica; invalidating it here refreshes one "
                "of them. Read the value from the shared store each time, keep the cache in a store every replica "
                "shares (Redis, with the same invalidation), or publish the change (Redis pub/sub) to a listener "
                "in every replica that evicts its own entry; a short `ttl` bounds how long the others stay stale.",
                related=[Related(facts.context.path, memo.lineno, memo.col_offset + 1,
                                 f"`{memo.name}` caches what it reads in `{name}`, per process")],
            )

    def _cleared_memos(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        """``get_flags.cache_clear()`` in request or job code, ``get_flags`` an ``lru_cache`` memo of what the
        database holds: the change it follows is seen at once by this process only; every other replica keeps
        serving its own copy until it restarts."""
        reach = None
        for call, func in _cache_clears(facts):
            memo = _memoised_function(func.value, facts)
            if memo is None or not _reads_shared_data(*memo):
                continue
            function = facts.enclosing_function(call)
            reach = reach or Reach.of_module(facts)
            if function is None or not reach.is_request_or_job(function):
                continue
            name = memo[0].name
            yield self.finding(
                call,
                f"`{name}.cache_clear()` empties only this process's memo of `{name}()`, so every other replica "
                "keeps serving the value it cached before the change.",
                "An `lru_cache` lives in each worker process of each replica; clearing it here refreshes one of "
                "them. Read the value from the shared store each time (a Redis hash, the database), or cache it "
                "with a short TTL and accept that long a delay, or publish the change (Redis pub/sub) to a "
                "listener in every replica that clears its own memo.",
                related=[Related(memo[1].context.path, memo[0].lineno, memo[0].col_offset + 1,
                                 f"`{name}` is memoised in process memory here")],
            )

    def _markers(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        """``if key in seen: return False`` ... ``seen[key] = ...``: an ``add`` written out, a once-only marker."""
        for binding in _cache_bindings(facts):
            if binding.scope != state.MODULE:
                continue
            for marker in _once_only_markers(binding.name, facts):
                kind = (state.constructed(binding.value, facts) or "cache").rsplit(".", 1)[-1]
                yield self.finding(
                    marker,
                    f"`{binding.name}` (a `{kind}` in process memory) is tested for the key and then given it, as a "
                    "once-only marker, so each replica keeps its own and each lets the same key through once.",
                    "The test and the set are two steps on a store only this process sees: another replica (or a "
                    "restart) has never seen the key. " + _COORDINATION_SUGGESTION,
                    related=[Related(binding.facts.context.path, binding.line, 1, f"`{binding.name}` is made here")],
                )

    def _stores(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        for binding in _cache_bindings(facts):
            use = _store_use(binding, facts)
            if use is None:
                continue
            write, read = use
            kind = (state.constructed(binding.value, binding.facts) or "cache").rsplit(".", 1)[-1]
            writer, reader = write.function.name, read.function.name
            made = [] if binding.facts is facts else [
                Related(binding.facts.context.path, binding.line, 1, f"`{binding.name}` is made here")]
            yield self.finding(
                binding.statement if binding.facts is facts else write.node,
                f"`{binding.name}` is a `{kind}` in process memory used as a store by {writer}() and {reader}(), so "
                "a request served by another replica finds nothing.",
                f"Only {writer}() fills it and {reader}() reads it without filling it on a miss, so a request that a "
                "load balancer sends to another replica (or that comes after a restart) finds nothing. "
                + _STORE_SUGGESTION,
                fix=Fix("shared-store-snippet", f"store it in Redis with a TTL: `await redis.hset(f\"{binding.attr or binding.name}:{{key}}\", "
                        "mapping=status)` and `await redis.expire(..., ttl)`; read with `hgetall`", "display-only"),
                related=[Related(facts.context.path, write.node.lineno, write.node.col_offset + 1,
                                 f"{writer}() writes a record"),
                         Related(facts.context.path, read.node.lineno, read.node.col_offset + 1,
                                 f"{reader}() reads it")] + made,
            )

    def _coordination(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        django_why: Optional[str] = None
        asked = False
        for call in facts.calls_named(*known.COORDINATION_METHODS):
            func = call.func
            if not isinstance(func, ast.Attribute):
                continue
            method = func.attr
            receiver = func.value
            spelled = f"`{dotted(receiver) or 'cache'}.{method}()`"
            receiver = cache_alias_bound(receiver, facts) or receiver  # ``counters = caches["quota"]``
            where = facts
            kept = django_cache_behind(receiver, facts)  # (``self.cache = caches[alias]`` in ``__init__``)
            if kept is not None:
                receiver, where = kept
            qualified = where.qualify(receiver) or ""
            alias = None
            if isinstance(receiver, ast.Subscript):
                qualified = where.qualify(receiver.value) or ""
                key = receiver.slice
                alias = key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None
            binding = made = None
            if qualified not in known.DJANGO_CACHE_NAMES and isinstance(receiver, (ast.Name, ast.Attribute)):
                binding = state.binding_of(receiver, facts)  # (a cache the module makes: which kind it is)
                made = state.constructed(binding.value, binding.facts) if binding is not None else None
            if method == "add" and not (_result_decides(call) or _refused_by_exception(call, made)):
                continue
            why = None
            if qualified in known.DJANGO_CACHE_NAMES and alias not in (None, "default"):
                why = alias_is_per_process(facts, alias)
            elif qualified in known.DJANGO_CACHE_NAMES:
                if not asked:
                    django_why, asked = _django_cache_is_per_process(facts), True
                why = django_why
            elif made in known.FLASK_CACHE_CONSTRUCTORS:
                types = cache_types(binding.value, binding.facts)
                if types and types <= known.FLASK_PROCESS_CACHE_TYPES:
                    why = f"Flask-Caching's `CACHE_TYPE = {sorted(types)[0]!r}` is a per-process store"
            elif made in known.ADD_RAISES:
                why = f"`{made.rsplit('.', 1)[-1]}` keeps its entries in this process's memory"
            if why is None:
                continue
            use, own = ("a lock or once-only marker", "lock") if method == "add" else ("a counter", "count")
            yield self._per_process_coordination(call, f"{spelled} is used as {use}", why, own)
        for read, write in _counts_written_back(facts):
            if not asked:
                django_why, asked = _django_cache_is_per_process(facts), True
            if django_why is not None:
                yield self._per_process_coordination(
                    read, f"`cache.{read.func.attr}()` reads a count that `cache.{write.func.attr}()` on line "
                    f"{write.lineno} writes back changed", django_why, "count")

    def _per_process_coordination(self, call: ast.Call, use: str, why: str, own: str) -> Diagnostic:
        return self.finding(
            call,
            f"{use}, but {why}, so each replica keeps its own {own}.",
            "Every replica (and every worker process) has its own entries, and none sees the others'. "
            + _COORDINATION_SUGGESTION,
            fix=Fix("shared-cache-snippet", 'configure a shared backend: `CACHES = {"default": {"BACKEND": '
                    '"django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://cache:6379/0"}}` '
                    '(Flask-Caching: `CACHE_TYPE = "RedisCache"`)', "display-only"),
        )
