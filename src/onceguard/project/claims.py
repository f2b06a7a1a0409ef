"""Does a function begin with a claim?  (Reusable by any rule that needs "only one replica goes on".)

The first statement with a side effect must be a claim.  Before it may stand
a docstring, logging, and assignments that compute keys or read config; the
claim may sit inside leading ``with`` and ``try`` blocks (a connection, a
transaction).  A claim is a claim function (tested, or wrapping the job), a
PostgreSQL try-lock executed and tested, Redis ``SET NX`` with an expiry
tested, a Redis lock (``acquire(blocking=False)`` tested, or ``with``), a
row claim (``FOR UPDATE SKIP LOCKED``, a conditional ``UPDATE`` whose row
count is checked), or a call to a function whose own leading statement is a
claim.  A helper may instead answer whether it got a claim: by what it
returns, or (a ``@contextmanager``, ``claim_contexts``) by what it yields to
``with ... as name:``; the job then tests that answer.

The kinds of claim are in ``claim_kinds``; what is read off code's spelling alone (log calls, assigned names, an
``if``'s failed side) in ``claim_syntax``; where a claim must have been won (a name's claim, an ``if``'s failed
branch, the claim dominating a statement) in ``claim_branches``, which ``ClaimAnalyzer`` extends.
"""
from __future__ import annotations

import ast
from typing import Callable, Dict, Iterable, List, Optional, Set, Tuple

from ..analysis.applied_decorators import decorators
from ..analysis.executed_sql import ExecutedSql, bound_value, executed_sql
from ..analysis.facts import (PARENT, FunctionNode, ModuleFacts, ancestors, call_name, parent, walk,
                              walk_no_nested_functions)
from ..analysis.names import plain_name
from ..analysis.redis_arguments import acts_for_owner
from ..knowledge import claims as known
from ..knowledge import orm
from .bindings import Bindings, own_module_names
from .claim_branches import ClaimBranches
from .claim_kinds import (ANSWER_KINDS, CACHE_ADD, CLAIM_FUNCTION, CONDITIONAL_UPDATE, HELPER_CONTEXT, HELPER_GUARD,
                          HELPER_RESULT, HUEY_LOCK, LOCK_ACQUIRE, OWNER_SCRIPT, QUEUED_ONCE, ROW_LOCK, SET_NX,
                          TRY_LOCK, UNIQUE_CREATE, UNIQUE_INSERT, ClaimHit, Lead)
from .claim_syntax import (_assigned, _fetch_from, _inserts_unless_present, _is_huey_lock, _is_preamble, _leaves,
                           _makes_lock, _negative_test, sets_with_nx, _non_blocking, _real_statements, _target_names,
                           _update_has_where, commits, mentions, sends_conflict_insert)
from .callable_objects import called_object_method
from .forwarding import forwarded
from .lock_libraries import waits_when_entered, yields_acquired_flag
from .unique_fields import (CREATE, GET_OR_CREATE, SESSION_ADD, adds_unique_row, catches_duplicates, creates_once,
                            creates_unique_row)


_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
_TRY_STAR = (ast.TryStar,) if hasattr(ast, "TryStar") else ()
_SCOPE_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)



# ------------------------------------------------------------------------------------------------
# Claim expressions
# ------------------------------------------------------------------------------------------------
#: Resolves a call to a function defined elsewhere (CLI, cross-file): returns (def, its module facts).
ForeignResolver = Callable[[ast.Call, ModuleFacts], Optional[Tuple[FunctionNode, ModuleFacts]]]


class ClaimAnalyzer(ClaimBranches):
    """Claim recognition for one module.  ``of_module`` caches one per module."""

    MAX_HELPER_DEPTH = 4

    def __init__(self, facts: ModuleFacts, resolver: Optional[ForeignResolver] = None) -> None:
        self.facts = facts
        self.resolver = resolver
        self.bindings = Bindings.of_module(facts)
        self._sql: Dict[int, ExecutedSql] = {}
        for entry in executed_sql(facts):
            self._sql.setdefault(id(entry.call), entry)
        self._claim_functions = frozenset(facts.config.claim_functions)
        self._own_modules = own_module_names(facts)
        self._helpers: Dict[int, Optional[str]] = {}
        self._project_defs: Dict[int, Optional[FunctionNode]] = {}
        self._in_progress: Set[int] = set()
        self._in_progress_guard: Set[int] = set()
        self._guarded: Dict[int, bool] = {}
        self._bound_claims: Dict[Tuple[int, str], Optional[ClaimHit]] = {}
        #: Whether a method may be found by its name alone when its receiver's class is unknown: a look
        #: over the whole project's definitions, asked only for scheduled jobs, where a wrongly missed claim
        #: is a false alarm.
        self.by_name = False

    @classmethod
    def of_module(cls, facts: ModuleFacts, resolver: Optional[ForeignResolver] = None) -> "ClaimAnalyzer":
        analyzer = facts.cached("claims", lambda f: cls(f, resolver))
        if resolver is not None and analyzer.resolver is None:
            analyzer.resolver = resolver
        return analyzer

    # -- single calls ---------------------------------------------------------------------------
    def is_claim_function(self, call: ast.Call) -> bool:
        name = call_name(call)
        if name is None:
            return False
        if name in known.CLAIM_FUNCTION_NAMES:
            # The name of a guard (``run_once``, ``claim_period``) from outside the project; a def of the project
            # so named is judged by what it does, as any helper (``service.run_once()`` may be one pass of work).
            return self._project_def(call) is None
        if name.startswith(known.CLAIM_FUNCTION_PREFIXES):
            return True  # ``claim_next()``, ``try_claim(...)``: what the caller asks for is a claim
        if (self.facts.callee(call) or "") in known.GUARD_FUNCTIONS:
            return True
        if self._claim_functions:
            qualified = self.facts.callee(call) or ""
            if qualified in self._claim_functions:
                return True
            if isinstance(call.func, ast.Name) and any(f"{m}.{name}" in self._claim_functions for m in self._own_modules):
                return True
        return False

    def _project_def(self, call: ast.Call) -> Optional[FunctionNode]:
        key = id(call)
        if key not in self._project_defs:
            found = self._helper_target(call)
            self._project_defs[key] = found[0] if found is not None else None
        return self._project_defs[key]

    def _is_lock_call(self, node: ast.AST) -> bool:
        """``client.lock("name", ...)``, ``redis_lock.Lock(...)``, ``Redlock(...)``, ``huey.lock_task(...)``, or a
        project helper that only returns one of those (``named_lock("sitemap")``)."""
        if not isinstance(node, ast.Call):
            return False
        if _makes_lock(node, self.facts):
            return True
        through = forwarded(node, self.facts)
        return through is not None and _makes_lock(through.call, through.facts)

    def _lock_object(self, expr: ast.AST) -> bool:
        if self._is_lock_call(expr):
            return True
        origin = self.bindings.origin(expr)
        return origin is not None and origin is not expr and self._is_lock_call(origin)

    def _owner_script(self, func: ast.AST) -> bool:
        """``func`` is a Lua script registered on a Redis client (``client.register_script(RENEW_IF_OWNER)``)
        whose text acts only when the key holds the caller's token (``if redis.call('GET', KEYS[1]) ==
        ARGV[1] then ... end return 0``): its answer is true for the holder alone, a claim's answer."""
        origin = self.bindings.origin(func)
        if not (isinstance(origin, ast.Call) and isinstance(origin.func, ast.Attribute)
                and origin.func.attr == known.REGISTER_SCRIPT_METHOD and origin.args):
            return False
        text = origin.args[0]
        if isinstance(text, ast.Name):
            text = bound_value(text, self.facts) or text
        return isinstance(text, ast.Constant) and isinstance(text.value, str) \
            and acts_for_owner(text.value, known.OWNER_SCRIPT_WRITES)

    def _made_non_blocking(self, expr: ast.AST) -> bool:
        """``lock = client.lock(name, timeout=60, blocking=False)``: an ``acquire()`` with no arguments of its own
        tries once, as the lock was told when it was made."""
        origin = expr if isinstance(expr, ast.Call) else self.bindings.origin(expr)
        return isinstance(origin, ast.Call) and _non_blocking(ast.Call(func=origin.func, args=[], keywords=[
            k for k in origin.keywords if k.arg in known.NO_WAIT_KEYWORDS]))

    def _waiting_lock(self, expr: ast.AST) -> bool:
        """A lock whose ``with`` waits: a known library's, or ``client.lock("name", timeout=60)`` (redis-py's and
        django-redis's lock waits unless told not to)."""
        origin = expr if isinstance(expr, ast.Call) else self.bindings.origin(expr)
        if not isinstance(origin, ast.Call):
            return False
        if isinstance(origin.func, ast.Attribute) and origin.func.attr == known.REDIS_LOCK_METHOD:
            return not _non_blocking(origin)
        return waits_when_entered(origin, self.facts)

    def call_claim(self, call: ast.Call, depth: int = 0) -> Optional[str]:
        """The kind of claim this one call makes, or None."""
        entry = self._sql.get(id(call))
        if entry is not None:
            sql = entry.sql
            if any(name in known.TRY_LOCK_FUNCTIONS for name in sql.function_names):
                return TRY_LOCK
            if sql.skip_locked:
                return ROW_LOCK
            if "UpdateStmt" in sql.statement_types + sql.cte_writes and _update_has_where(entry.text):
                return CONDITIONAL_UPDATE
            if "InsertStmt" in sql.statement_types and _inserts_unless_present(entry.text):
                return UNIQUE_INSERT
        if sends_conflict_insert(call, self.facts):
            return UNIQUE_INSERT  # ``session.execute(insert(Run).values(day=d).on_conflict_do_nothing())``
        if self.is_claim_function(call):
            return CLAIM_FUNCTION
        func = call.func
        if not isinstance(func, ast.Attribute):
            if isinstance(func, ast.Name):
                return self._helper_kind(call, depth)
            return None
        attr = func.attr
        keywords = {k.arg: k.value for k in call.keywords if k.arg}
        if sets_with_nx(call):
            # ``r.set(key, token, nx=True, ex=...)``, and a project's cache wrapper that passes the same
            # flags on (``cache.async_set_cache(key, token, nx=True, ttl=...)``).
            expiry = known.REDIS_EXPIRY_KEYWORDS if attr == known.REDIS_SET_METHOD else known.WRAPPER_EXPIRY_KEYWORDS
            if any(k in keywords for k in expiry) or attr == known.REDIS_SET_METHOD:
                # (without an expiry it is still won by one replica only; that it never expires is OG501's)
                return SET_NX
        if attr in known.DEDUPLICATING_ENQUEUES and _enqueues_under_kept_id(call, self.facts):
            return QUEUED_ONCE
        if attr == known.REDIS_SETNX_METHOD and len(call.args) >= 2:
            return SET_NX  # ``r.setnx(key, token)``: one replica sets it (OG501 speaks of its missing expiry)
        if self._owner_script(func):
            return OWNER_SCRIPT  # ``self._renew(keys=[k], args=[token, ttl])``: true only for the key's holder
        if attr in SESSION_ADD and adds_unique_row(call, self.facts) and (
                _duplicate_leaves(call, self.facts) or _sent_where_duplicate_leaves(call, self.facts)):
            # ``session.add(Run(job=..., day=d))`` then ``try: session.commit() except IntegrityError: return``
            return UNIQUE_CREATE
        if attr == known.LOCK_ACQUIRE_METHOD and self._lock_object(func.value) and (
                _non_blocking(call) or self._made_non_blocking(func.value)):
            return LOCK_ACQUIRE
        elif attr == known.CACHE_ADD_METHOD and call.args:
            receiver = func.value
            if isinstance(receiver, ast.Subscript):
                receiver = receiver.value
            if (self.facts.qualify(receiver) or "") in known.DJANGO_CACHES:
                return CACHE_ADD
        elif attr in GET_OR_CREATE and creates_once(call, self.facts):
            return UNIQUE_INSERT  # ``_, created = Run.objects.get_or_create(day=today)`` on a unique ``day``
        elif attr in CREATE and _duplicate_leaves(call, self.facts) and creates_unique_row(call, self.facts):
            return UNIQUE_CREATE  # ``try: Run.objects.create(week=w) except IntegrityError: return``
        elif attr in known.ROW_LOCK_METHODS:
            for keyword in call.keywords:
                if (keyword.arg == known.SKIP_LOCKED_KEYWORD and isinstance(keyword.value, ast.Constant)
                        and keyword.value.value is True):
                    return ROW_LOCK
        elif attr == known.ORM_UPDATE_METHOD and isinstance(func.value, ast.Call):
            inner = func.value.func
            if isinstance(inner, ast.Attribute) and inner.attr in known.ORM_FILTER_METHODS:
                return CONDITIONAL_UPDATE
        if attr in ("values", "where") or attr == known.ORM_UPDATE_METHOD:
            qualified = self.facts.callee(call) or ""
            head = qualified.split(".where", 1)[0]
            if head in known.SQLALCHEMY_UPDATE and ".where" in qualified:
                return CONDITIONAL_UPDATE
        # A method of the project (``self.x()``, a typed parameter's, a module-level instance's): its summary.
        return self._helper_kind(call, depth)

    def claim_in(self, expr: Optional[ast.AST], depth: int = 0) -> Optional[ClaimHit]:
        """The first claim made anywhere in ``expr`` (not inside lambdas or nested functions)."""
        if expr is None:
            return None
        nodes = [expr] if isinstance(expr, ast.Call) else []
        nodes.extend(walk_no_nested_functions(expr))
        seen: Set[int] = set()
        for node in nodes:
            if isinstance(node, ast.Call) and id(node) not in seen:
                seen.add(id(node))
                kind = self.call_claim(node, depth)
                if kind is not None:
                    return ClaimHit(kind, node)
        return None

    # -- helpers (same module, or the project through the resolver) ---------------------------
    def _only_override(self, call: ast.Call, stub: FunctionNode) -> Optional[Tuple[FunctionNode, "ClaimAnalyzer"]]:
        """``self.tick(...)`` in a base whose own ``tick`` is a stub (``raise NotImplementedError``): what runs is
        a subclass's override; with one override in the project, that one is the helper whose claim counts."""
        from .summaries import _is_stub, resolve

        if not _is_stub(stub):
            return None
        real = [(f, where) for f, where in resolve(call, self.facts, self.facts.enclosing_function(call),
                                                   by_name=False) if not _is_stub(f)]
        if len(real) != 1:
            return None
        function, where = real[0]
        return function, (self if where is self.facts else ClaimAnalyzer.of_module(where, self.resolver))

    def _helper_target(self, call: ast.Call) -> Optional[Tuple[FunctionNode, "ClaimAnalyzer"]]:
        func = call.func
        target = None
        if isinstance(func, ast.Name):
            target = self.bindings.module_function(func)
        elif isinstance(func, ast.Attribute):
            target = self.bindings.method(func)
            if target is not None and isinstance(func.value, ast.Name) and func.value.id == "self":
                overriding = self._only_override(call, target)
                if overriding is not None:
                    return overriding
        if target is not None:
            return target, self
        if self.resolver is not None and self.facts.context.cross_file:
            found = self.resolver(call, self.facts)
            if found is not None:
                function, foreign = found
                analyzer = ClaimAnalyzer.of_module(foreign, self.resolver)
                analyzer.by_name = analyzer.by_name or self.by_name
                return function, analyzer
        if isinstance(func, ast.Name):
            # ``await job(fire_at)`` with ``job`` handed an instance of a project class: its ``__call__``
            called = called_object_method(call, self.facts, self.facts.enclosing_function(call))
            if called is not None:
                method, where, _ = called
                analyzer = self if where is self.facts else ClaimAnalyzer.of_module(where, self.resolver)
                return method, analyzer
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            # ``self.job(day)`` with ``self.job`` the callable the class's constructions hand it (a generic
            # ticker): the one function they all hand
            handed = self._constructor_target(call)
            if handed is not None:
                return handed
        if isinstance(func, ast.Attribute):
            # ``lock_manager.acquire_lock(...)`` on a parameter, an attribute or a closure variable: the
            # project's method, from the receiver's class or (one candidate only) from its name.
            from .summaries import resolve

            candidates = resolve(call, self.facts, self.facts.enclosing_function(call), by_name=self.by_name)
            if len(candidates) == 1:
                function, foreign = candidates[0]
                if foreign is self.facts:
                    return function, self
                analyzer = ClaimAnalyzer.of_module(foreign, self.resolver)
                analyzer.by_name = analyzer.by_name or self.by_name
                return function, analyzer
        return None

    def _constructor_target(self, call: ast.Call) -> Optional[Tuple[FunctionNode, "ClaimAnalyzer"]]:
        from .handed_values import constructor_handed

        targets = []
        for value, where in constructor_handed(call, self.facts):
            if not isinstance(value, (ast.Name, ast.Attribute)):
                return None
            analyzer = self if where is self.facts else ClaimAnalyzer.of_module(where, self.resolver)
            called = ast.copy_location(ast.Call(func=value, args=[], keywords=[]), value)
            # asked where the construction hands it: ``Every(60, digests.send)`` with ``digests`` a local there
            setattr(called, PARENT, parent(value))
            found = analyzer._helper_target(called)
            if found is None:
                return None
            targets.append(found)
        if not targets or any(t[0] is not targets[0][0] for t in targets):
            return None
        return targets[0]

    def helper_of(self, call: ast.Call) -> Optional[Tuple[FunctionNode, "ClaimAnalyzer"]]:
        """The project function ``call`` runs, with the analyzer of its module, or None."""
        return self._helper_target(call)

    def _helper_kind(self, call: ast.Call, depth: int) -> Optional[str]:
        if depth >= self.MAX_HELPER_DEPTH:
            return None
        found = self._helper_target(call)
        if found is None:
            return self._aliased_helper_kind(call, depth)
        function, analyzer = found
        kind = analyzer.helper_kind(function, depth + 1)
        # Calling a claiming context manager only makes it: the answer arrives through ``with ... as``.
        return None if kind == HELPER_CONTEXT else kind

    def context_claim(self, expr: ast.AST, depth: int = 0) -> Optional[ClaimHit]:
        """``exclusive(key)`` in ``with exclusive(key) as acquired:`` when ``exclusive`` is a context manager of
        the project that yields its claim's answer: then ``acquired`` holds that answer."""
        if not isinstance(expr, ast.Call) or depth >= self.MAX_HELPER_DEPTH:
            return None
        if yields_acquired_flag(expr, self.facts):
            return ClaimHit(TRY_LOCK, expr)  # ``with advisory_lock(key, wait=False) as acquired:``
        found = self._helper_target(expr)
        if found is not None:
            function, analyzer = found
            if analyzer.helper_kind(function, depth + 1) == HELPER_CONTEXT:
                return ClaimHit(HELPER_CONTEXT, expr)
        return self._entered_claim(expr, depth)

    def context_claim_element(self, expr: ast.AST, index: int) -> Optional[ClaimHit]:
        """``job_lock(pool, KEY)`` in ``async with job_lock(pool, KEY) as (conn, acquired):`` when the project's
        context manager yields a tuple whose ``index``-th element is its claim's answer."""
        if not isinstance(expr, ast.Call):
            return None
        found = self._helper_target(expr)
        if found is None:
            return None
        function, analyzer = found
        if is_context_factory(function, analyzer.facts) and yields_claim_element(analyzer, function, index, 1):
            return ClaimHit(HELPER_CONTEXT, expr)
        return None

    def _entered_claim(self, expr: ast.Call, depth: int) -> Optional[ClaimHit]:
        """``with Lease(client, "batch", ttl_s=600) as held:``: a class of the project whose ``__enter__`` (or
        ``__aenter__``) returns a claim's answer binds that answer, as a claiming ``@contextmanager`` does."""
        if not isinstance(expr.func, (ast.Name, ast.Attribute)):
            return None
        cls, where = None, self.facts
        if isinstance(expr.func, ast.Name):
            cls = next((c for c in self.facts.classes if c.name == expr.func.id
                        and self.facts.enclosing_function(c) is None), None)
        if cls is None and self.facts.context.cross_file:
            from . import index as project

            qualified = self.facts.qualify(expr.func)
            found = project.find_class(qualified, self.facts.config, project.search_root(self.facts)) \
                if qualified else None
            if found is not None:
                cls, where = found
        if cls is None:
            return None
        analyzer = self if where is self.facts else ClaimAnalyzer.of_module(where, self.resolver)
        for statement in cls.body:
            if isinstance(statement, _FUNCTION_TYPES) and statement.name in ("__enter__", "__aenter__"):
                kind = analyzer.helper_kind(statement, depth + 1)
                if kind == HELPER_RESULT:
                    return ClaimHit(HELPER_CONTEXT, expr)
                if kind == HELPER_GUARD and _raises_when_lost(statement, analyzer):
                    # ``if not client.set(key, token, nx=True, ex=ttl): raise LockNotAcquired`` then ``return
                    # self``: the block is entered only by the winner
                    return ClaimHit(HELPER_GUARD, expr)
                own = _own_name(statement) + "."
                held = {name[len(own):] for name in analyzer.answer_names(statement, depth + 1, contexts=True)
                        if name.startswith(own) and "." not in name[len(own):]} \
                    if _returns_own_instance(statement) else set()
                if not held and _returns_own_instance(statement):
                    # ``await self.acquire()`` then ``return self``: what that method sets when its claim is won
                    held = won_state(analyzer, cls, statement)
                if held:
                    # ``self.acquired = bool(row[0])`` then ``return self``: the object bound by ``as`` carries the
                    # claim's answer (``with LeaderLease(pool, "rollup") as lease: if lease.acquired: ...``)
                    return ClaimHit(HELPER_CONTEXT, expr, frozenset(held))
        return None

    def _aliased_helper_kind(self, call: ast.Call, depth: int) -> Optional[str]:
        """``take_sweep = sweep_lease.take`` (perhaps in one arm of a setting, ``lambda: True`` in the other)
        then ``if not take_sweep(): continue``: the call is a call of the method the name is bound to."""
        if not isinstance(call.func, ast.Name):
            return None
        for value in self.bindings.values(call.func):
            if not isinstance(value, ast.Attribute):
                continue
            bound = ast.copy_location(ast.Call(func=value, args=call.args, keywords=call.keywords), call)
            setattr(bound, PARENT, parent(value))  # asked where the binding is, as the method is looked up there
            kind = self._helper_kind(bound, depth + 1)
            if kind is not None:
                return kind
        return None

    def helper_kind(self, function: FunctionNode, depth: int = 0) -> Optional[str]:
        """HELPER_GUARD when ``function`` leads with a claim, HELPER_RESULT when it returns one."""
        key = id(function)
        if key in self._helpers:
            return self._helpers[key]
        if key in self._in_progress:
            return None
        self._in_progress.add(key)
        try:
            kind = None
            lead = self.lead(function, depth=depth)
            if lead.claimed:
                # leading with a claim guards its own body, unless what it returns is the claim's answer
                # (``if r.set(k, me, nx=True, px=ttl): return True`` … ``return self.renew()``): the caller's
                # test of that answer is the guard. Rows a ``SKIP LOCKED`` select hands back are the caller's
                # alone whatever it tests: no other replica gets them, so the call is the claim.
                kind = HELPER_RESULT if lead.kind != ROW_LOCK and _returns_answers(function) and (
                    self._returns_claim(function, depth) or self._reports_claim(function, depth)) else HELPER_GUARD
            elif is_context_factory(function, self.facts):
                # What ``with`` binds is what the generator yields, not what it returns.
                kind = HELPER_CONTEXT if yields_claim(self, function, depth) else None
            elif self._returns_claim(function, depth) or self._reports_claim(function, depth):
                kind = HELPER_RESULT
        finally:
            self._in_progress.discard(key)
        self._helpers[key] = kind
        return kind

    def _reports_claim(self, function: FunctionNode, depth: int) -> bool:
        """``acquired = await cache.set(key, me, nx=True, ex=ttl); if acquired: ...; return True`` (and
        ``return False`` otherwise): a helper that takes a claim and returns whether it got it."""
        if depth >= self.MAX_HELPER_DEPTH:
            return False
        for node in walk_no_nested_functions(function):
            if isinstance(node, ast.Return) and node.value is not None:
                hit = self.claim_in(node.value, depth + 1)
                if hit is not None and hit.kind in ANSWER_KINDS:
                    return True
            elif isinstance(node, ast.If):
                # ``if await locks.acquire(...): return Lease.LEADER``: the answer depends on the claim.
                hit = self.claim_in(node.test, depth + 1)
                if hit is not None and hit.kind in ANSWER_KINDS and any(
                        isinstance(s, ast.Return) and s.value is not None for s in node.body):
                    return True
        executed: Dict[str, ClaimHit] = {}
        claimed = self.answer_names(function, depth, executed=executed)
        if not claimed and not executed:
            return False
        for node in walk_no_nested_functions(function):
            if isinstance(node, ast.Return) and node.value is not None:
                value = node.value
                if _fetch_from(value, executed) is not None:
                    return True  # ``return cur.fetchone()[0]`` after ``cur.execute(<try-lock>)``
                if not claimed:
                    continue
                if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "bool" \
                        and len(value.args) == 1:
                    value = value.args[0]
                if isinstance(value, (ast.Name, ast.Attribute)) and plain_name(value) in claimed:
                    return True
                if isinstance(value, ast.Constant) and value.value is True:
                    return True
        return False

    def answer_names(self, function: FunctionNode, depth: int, contexts: bool = False,
                     executed: Optional[Dict[str, ClaimHit]] = None) -> Set[str]:
        """The names (and ``self.x`` texts) that hold the answer of a claim ``function`` takes: assigned a
        claim's result (``acquired = r.set(key, me, nx=True, ex=ttl)``, ``row = conn.execute(<try-lock>)
        .fetchone()``), fetched from a cursor that executed a try-lock (``got = cur.fetchone()[0]``), computed
        from one of those (``acquired = bool(row and row[0])``), and with ``contexts`` bound by ``with`` to a
        claiming context manager (``with exclusive(key) as got:``; returned out of the ``with``, the claim is
        already given back, so only what is handed on inside it counts).  ``executed`` is filled with the
        cursors that executed a try-lock, whatever is fetched from them later being its answer."""
        if depth >= self.MAX_HELPER_DEPTH:
            return set()
        claimed: Set[str] = set()
        if executed is None:
            executed = {}
        others: List[ast.AST] = []
        for node in walk_no_nested_functions(function):
            if isinstance(node, ast.Expr):
                value = node.value.value if isinstance(node.value, ast.Await) else node.value
                entry = self._sql.get(id(value))
                if entry is not None and isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
                    # a try-lock, or an insert-unless-present / conditional update whose returned rows (or
                    # row count) say whether this caller's row went in: what the cursor gives back is the answer
                    kind = self.call_claim(value, depth + 1)
                    receiver = plain_name(value.func.value)
                    if receiver and kind in (TRY_LOCK, UNIQUE_INSERT, CONDITIONAL_UPDATE):
                        executed[receiver] = ClaimHit(kind, value)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                hit = self.claim_in(node.value, depth + 1)
                if hit is not None and hit.kind in ANSWER_KINDS:
                    claimed.update(_assigned(node))
                elif hit is not None and hit.kind in (CONDITIONAL_UPDATE, UNIQUE_INSERT):
                    # ``result = session.execute(update(...).where(..., status == "pending"))``: its row count is
                    # the answer (``return result.rowcount == 1``)
                    executed.update((name, hit) for name in _assigned(node) if "." not in name)
                else:
                    others.append(node)
            elif contexts and isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if isinstance(item.optional_vars, ast.Name) and self.context_claim(item.context_expr, depth):
                        claimed.add(item.optional_vars.id)
        grown = True
        while grown and (claimed or executed):
            grown = False
            for node in others:
                names = _assigned(node)
                if names <= claimed:
                    continue
                if _fetch_from(node.value, executed) is not None or mentions(node.value, claimed):
                    claimed.update(names)
                    grown = True
        return claimed

    def _returns_claim(self, function: FunctionNode, depth: int) -> bool:
        return self._block_returns_claim(function.body, depth, {}) is True

    def _block_returns_claim(self, body: List[ast.stmt], depth: int, bound: Dict[str, ClaimHit]) -> Optional[bool]:
        """True when the block's first return gives a claim's answer, False when it gives something else or work
        comes first, None when the block ends without returning (a ``with`` body: what follows decides)."""
        for statement in _real_statements(body):
            if isinstance(statement, ast.Return):
                if statement.value is None:
                    return False
                # The answer read off the claim's result: ``return bool(result.scalar_one())``, ``return row[0]``.
                if any(isinstance(n, ast.Name) and n.id in bound for n in walk(statement.value)):
                    return True
                hit = self.claim_in(statement.value, depth)
                # (a renewal's answer is whether the lease was kept: its helper claims no turn of its own)
                return hit is not None and hit.kind != OWNER_SCRIPT
            if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
                hit = self.claim_in(statement.value, depth)
                if hit is not None:
                    for name in _target_names(statement):
                        bound[name] = hit
                elif mentions(statement.value, set(bound)):
                    # a name read off the claim's result (``row = result.scalar_one_or_none()``); an attribute set
                    # from it (``self.won = ...``) leaves the object holding more than the answer
                    read_off = next(bound[name] for name in bound if mentions(statement.value, {name}))
                    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                    bound.update((t.id, read_off) for t in targets if isinstance(t, ast.Name))
                continue
            if isinstance(statement, (ast.With, ast.AsyncWith)):
                inner = self._block_returns_claim(statement.body, depth, bound)
                if inner is not None:
                    return inner
                continue
            if _is_preamble(statement) or (bound and commits(statement)):
                continue  # (``session.commit()`` after a claim's row went in: the claim made lasting, no work)
            return False
        return None

    # -- leading statements ---------------------------------------------------------------------
    def lead(self, function: FunctionNode, skip: Optional[Callable[[ast.stmt], bool]] = None,
             depth: int = 0) -> Lead:
        """Whether ``function`` begins with a claim (its decorators count: ``@run_exclusive(...)``)."""
        for decorator in decorators(function, self.facts):
            call = decorator if isinstance(decorator, ast.Call) else None
            if call is not None and (self.is_claim_function(call) or _is_huey_lock(call)):
                return Lead(True, CLAIM_FUNCTION if self.is_claim_function(call) else HUEY_LOCK)
            if depth < self.MAX_HELPER_DEPTH and self._claiming_decorator(decorator, depth):
                return Lead(True, HELPER_GUARD)
        return self.lead_body(function.body, skip, depth)

    def claiming_wrapper(self, call: ast.Call) -> bool:
        """``claimed(name, job)``: a project function returning a def that leads with a claim and then calls a
        function it was handed, as ``@claimed`` would wrap it."""
        found = self._helper_target(call)
        wrapper = _nested_returned(found[0]) if found is not None else None
        if wrapper is None:
            return False
        factory, analyzer = found
        return _calls_parameter_of(wrapper, factory, any_parameter=True) and analyzer.lead(wrapper, depth=1).claimed

    def _claiming_decorator(self, decorator: ast.AST, depth: int) -> bool:
        """``@single_instance("nightly")``: a decorator of the project whose wrapper leads with a claim and then
        calls the function it wraps (or a factory returning such a decorator)."""
        called = decorator if isinstance(decorator, ast.Call) else (
            ast.copy_location(ast.Call(func=decorator, args=[], keywords=[]), decorator)
            if isinstance(decorator, (ast.Name, ast.Attribute)) else None)
        if called is None:
            return False
        if called is not decorator:
            setattr(called, PARENT, parent(decorator))
        found = self._helper_target(called)
        if found is None:
            return False
        function, analyzer = found
        # ``@single_instance(...)`` calls a factory, whose returned def is the decorator; ``@exclusive`` names it
        applied = _nested_returned(function) if called is decorator else function
        wrapper = _nested_returned(applied) if applied is not None else None
        if wrapper is None or not _calls_parameter_of(wrapper, applied):
            return False
        return analyzer.lead(wrapper, depth=depth + 1).claimed

    def lead_body(self, body: List[ast.stmt], skip: Optional[Callable[[ast.stmt], bool]] = None,
                  depth: int = 0) -> Lead:
        from .claim_leads import CLAIMED, FAILED, LeadScan  # (it reads claims through this analyzer)

        scan = LeadScan(self, skip or (lambda statement: False), depth)
        outcome, node, kind = scan.block(body)
        if outcome == CLAIMED:
            return Lead(True, kind)
        if outcome != FAILED and scan.looped_over is not None and scan.untested is None:
            return Lead(True, scan.looped_over)  # its only work ran in loops over what claims handed back
        if outcome != FAILED and scan.untested is not None:
            # A claim-shaped statement whose result nobody tested is work like any other
            # (``UPDATE ... WHERE ...`` with no row count check).
            return Lead(False, None, scan.untested)
        return Lead(False, None, node if outcome == FAILED else None)

    # -- a claim further in --------------------------------------------------------------------
    def guarded_later(self, function: FunctionNode, depth: int = 0) -> Optional[ast.AST]:
        """The ``if`` that leaves when a claim was not obtained, found in ``function``'s own flow (not
        only first) or in a helper it calls there: ``lease = await self._acquire_lease(); if lease is
        FOLLOWER: return``, ``if not await locks.acquire(...): return`` after reading config and metrics.
        What runs before it runs on every replica; a scheduled job's work after it runs once."""
        return self._guard_in(function.body, depth, {})

    def guarded_helper(self, helper: FunctionNode, depth: int) -> bool:
        key = id(helper)
        if key in self._guarded:
            return self._guarded[key]
        if key in self._in_progress_guard:
            return False  # recursion: no guard found along this path
        self._in_progress_guard.add(key)
        try:
            found = self._guard_in(helper.body, depth, {}) is not None
        finally:
            self._in_progress_guard.discard(key)
        self._guarded[key] = found
        return found

    def _guard_in(self, body: List[ast.stmt], depth: int, pending: Dict[str, ClaimHit]) -> Optional[ast.AST]:
        for statement in body:
            if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
                hit = self.claim_in(statement.value, depth)
                if hit is not None and (hit.needs_test or hit.kind == HELPER_GUARD):
                    for name in _target_names(statement):
                        pending[name] = hit
            if isinstance(statement, ast.If):
                tested = any(isinstance(n, ast.Name) and n.id in pending and pending[n.id].read_by(n)
                             for n in walk(statement.test))
                if not tested:
                    hit = self.claim_in(statement.test, depth)
                    tested = hit is not None
                # In the job itself the claim must lead (``lead``); in a helper it may follow config reads.
                if depth > 0 and tested and _leaves(statement.body if _negative_test(statement.test)
                                                    else statement.orelse):
                    return statement  # the branch taken when the claim failed leaves
                found = self._guard_in(statement.body, depth, pending)
                if found is not None:
                    return found
                continue
            if isinstance(statement, (ast.With, ast.AsyncWith)):
                for item in statement.items:
                    if isinstance(item.optional_vars, ast.Name):
                        hit = self.context_claim(item.context_expr, depth)
                        if hit is not None:
                            pending[item.optional_vars.id] = hit
            # (a ticker's ``while True:``: each pass's claim guards that pass's work)
            if isinstance(statement, (ast.With, ast.AsyncWith, ast.Try, ast.While) + _TRY_STAR):
                found = self._guard_in(statement.body, depth, pending)
                if found is not None:
                    return found
                continue
            if depth < self.MAX_HELPER_DEPTH and isinstance(statement, (ast.Expr, ast.Assign, ast.AnnAssign,
                                                                        ast.Return)):
                value = statement.value
                if isinstance(value, ast.Await):
                    value = value.value
                if isinstance(value, ast.Call):
                    found_helper = self._helper_target(value)
                    if found_helper is not None:
                        helper, analyzer = found_helper
                        if analyzer.guarded_helper(helper, depth + 1):
                            return statement
        return None


def failed_lock_handlers(facts: ModuleFacts, analyzer: ClaimAnalyzer) -> Iterable[ast.ExceptHandler]:
    """``except LockError:`` handlers of a ``try`` whose body takes a lock with ``with`` without waiting.

    A lock that waits (``blocking_timeout=20``) is a mutex every replica queues on: its ``LockError`` says the
    wait ran out or the lock was lost, a failure of the job rather than the skip of a replica that found the
    work taken."""
    seen: Set[int] = set()
    for with_node in facts.withs:
        locks = [item.context_expr for item in with_node.items if analyzer._lock_object(item.context_expr)]
        if not locks or any(analyzer._waiting_lock(expr) for expr in locks):
            continue
        child: ast.AST = with_node
        for above in ancestors(with_node):
            if isinstance(above, _SCOPE_TYPES):
                break
            if isinstance(above, (ast.Try,) + _TRY_STAR) and any(child is s for s in above.body):
                if id(above) in seen:
                    break
                seen.add(id(above))
                for handler in above.handlers:
                    if _catches_lock_failure(handler, facts):
                        yield handler
                break
            child = above


def _catches_lock_failure(handler: ast.ExceptHandler, facts: ModuleFacts) -> bool:
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    for node in types:
        if node is None:
            continue
        name = facts.qualify(node) or ""
        if name in known.LOCK_FAILED_EXCEPTIONS or name.rsplit(".", 1)[-1] in known.LOCK_FAILED_EXCEPTIONS:
            return True
    return False


#: Claims that exclude every other runner while held (a lock, a key set once), not claims of some rows only: a
#: conditional UPDATE or a skip-locked pickup owns the rows it took, and another row the function then changes
#: (the user's unread count after marking their notifications) is anyone's.
EXCLUSIVE_KINDS = frozenset({TRY_LOCK, SET_NX, OWNER_SCRIPT, LOCK_ACQUIRE, CACHE_ADD, CLAIM_FUNCTION, HELPER_GUARD,
                             HELPER_RESULT, HELPER_CONTEXT})


def _returns_answers(function: FunctionNode) -> bool:
    """Every ``return`` of ``function`` hands back a value (a yes or no for its caller), none a bare return."""
    returns = [n for n in walk_no_nested_functions(function) if isinstance(n, ast.Return)]
    return bool(returns) and all(n.value is not None and not (isinstance(n.value, ast.Constant)
                                                               and n.value.value is None) for n in returns)


#: Claims of some rows or keys only: a marker row inserted unless present, a conditional UPDATE, rows picked up
#: ``SKIP LOCKED``.  A helper that claims only so (``mark_done(conn, batch_id)``: its row went in) lets runners of
#: other keys through at once, so it is no more exclusive than the claim it makes.
_ROW_SCOPED_KINDS = frozenset({UNIQUE_INSERT, UNIQUE_CREATE, CONDITIONAL_UPDATE, ROW_LOCK})


def _helper_claim_kinds(function: FunctionNode, analyzer: "ClaimAnalyzer", depth: int = 0) -> Set[str]:
    """The kinds of claim a helper's calls make, helpers it calls followed through to their own claims."""
    kinds: Set[str] = set()
    for node in walk_no_nested_functions(function):
        if not isinstance(node, ast.Call):
            continue
        kind = analyzer.call_claim(node, depth + 1)
        if kind in (HELPER_RESULT, HELPER_GUARD) and depth < analyzer.MAX_HELPER_DEPTH:
            found = analyzer.helper_of(node)
            inner = _helper_claim_kinds(found[0], found[1], depth + 1) if found is not None else set()
            kinds.update(inner or {kind})
        elif kind is not None:
            kinds.add(kind)
    return kinds


def _excludes_every_runner(hit: Optional[ClaimHit], analyzer: "ClaimAnalyzer") -> bool:
    """``hit`` is a claim that excludes every other runner: an exclusive kind, and for a helper, one whose own
    claims are not all of some rows only."""
    if hit is None or hit.kind not in EXCLUSIVE_KINDS:
        return False
    if hit.kind in (HELPER_RESULT, HELPER_GUARD) and isinstance(hit.node, ast.Call):
        found = analyzer.helper_of(hit.node)
        if found is not None:
            kinds = _helper_claim_kinds(found[0], found[1])
            return not kinds or not kinds <= _ROW_SCOPED_KINDS
    return True


def won_claim_reaches(node: ast.AST, facts: ModuleFacts, exclusive: bool = False) -> bool:
    """Only the replica that won a claim of the same function reaches ``node`` (``if not acquired: return 0``
    before it, or the branch a won claim takes): what it does there, one replica at a time does.  With
    ``exclusive``, only a claim that excludes every other runner (``EXCLUSIVE_KINDS``) counts."""
    from .scheduled.discovery import _resolver

    analyzer = ClaimAnalyzer.of_module(facts, _resolver if facts.context.cross_file else None)
    hit = analyzer.dominating_claim(node)
    return hit is not None and (not exclusive or _excludes_every_runner(hit, analyzer))


def one_runner_reaches(node: ast.AST, facts: ModuleFacts) -> bool:
    """Only one runner at a time reaches ``node``: a claim that excludes every other runner is won before it in
    its own function (``won_claim_reaches``), or -- reading the project -- at every call of that function the
    project shows (``if await lock.acquire(blocking=False): await roll_up(...)`` in the loop that runs it)."""
    if won_claim_reaches(node, facts, exclusive=True):
        return True
    from .process_roles import at_every_caller
    from .scheduled.discovery import _resolver

    def won_before(call: ast.Call, where: ModuleFacts) -> bool:
        analyzer = ClaimAnalyzer.of_module(where, _resolver)
        return _excludes_every_runner(analyzer.dominating_claim(call), analyzer)

    return at_every_caller(node, facts, won_before)


# (it reads claims through this module)
from .claim_contexts import is_context_factory, won_state, yields_claim, yields_claim_element  # noqa: E402


def _raises_when_lost(enter: FunctionNode, analyzer: "ClaimAnalyzer") -> bool:
    """The ``__enter__`` raises on the side its claim fails: the ``with`` body never runs for a loser."""
    for node in walk_no_nested_functions(enter):
        if isinstance(node, ast.If):
            failed = analyzer.failed_branch(node)
            if failed is not None and failed[0] and isinstance(failed[0][-1], ast.Raise):
                return True
    return False


def _enqueues_under_kept_id(call: ast.Call, facts: ModuleFacts) -> bool:
    """``pool.enqueue_job("send", day, _job_id=f"send:{day}")``: the id is one every replica computes alike, so the
    queue takes it once.  An id minted per call (``uuid4().hex``) or None is a new job every time."""
    from .minted_keys import minted

    keyword = known.DEDUPLICATING_ENQUEUES[call.func.attr]  # (the caller checked the method)
    given = next((k.value for k in call.keywords if k.arg == keyword), None)
    if given is None or (isinstance(given, ast.Constant) and given.value is None):
        return False
    return not minted(given, facts)


def _duplicate_leaves(call: ast.Call, facts: ModuleFacts) -> bool:
    """``call`` sits in the body of a ``try`` one of whose handlers catches a duplicate key's error (by its own
    class) and leaves."""
    child = call
    for above in ancestors(call):
        if isinstance(above, _FUNCTION_TYPES):
            return False
        if isinstance(above, ast.Try) and any(child is s for s in above.body) and any(
                handler.type is not None and catches_duplicates(handler, facts, bases=False) and _leaves(handler.body)
                for handler in above.handlers):
            return True
        child = above
    return False


def _sent_where_duplicate_leaves(call: ast.Call, facts: ModuleFacts) -> bool:
    """The row ``session.add(row)`` stages is sent by a ``try`` right after it in the same block (a commit or
    flush of that session) whose handler of a duplicate key leaves: the insert that raises is this one."""
    statement = facts.statement_of(call)
    block = next((getattr(parent(statement), name) for name in ("body", "orelse", "finalbody")
                  if any(s is statement for s in getattr(parent(statement), name, None) or ())), None)
    receiver = plain_name(call.func.value) if isinstance(call.func, ast.Attribute) else None
    if block is None or not receiver:
        return False
    following = block[next(i for i, s in enumerate(block) if s is statement) + 1:]
    for later in following:
        if isinstance(later, ast.Try):
            sends = any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr in orm.SA_FLUSH and plain_name(node.func.value) == receiver
                        for inner in later.body for node in walk(inner))
            return sends and any(handler.type is not None and catches_duplicates(handler, facts, bases=False)
                                 and _leaves(handler.body) for handler in later.handlers)
        if not _is_preamble(later):
            return False
    return False


def _own_name(method: FunctionNode) -> str:
    arguments = method.args.posonlyargs + method.args.args
    return arguments[0].arg if arguments else "self"


def _returns_own_instance(method: FunctionNode) -> bool:
    """Every ``return`` of the method gives back the instance it was called on (``return self``)."""
    returns = [node for node in walk_no_nested_functions(method) if isinstance(node, ast.Return)]
    own = _own_name(method)
    return bool(returns) and all(isinstance(r.value, ast.Name) and r.value.id == own for r in returns)


def _nested_returned(function: FunctionNode) -> Optional[FunctionNode]:
    """The def nested in ``function`` that it returns (a decorator's wrapper, a factory's decorator)."""
    nested = {s.name: s for s in function.body if isinstance(s, _FUNCTION_TYPES)}
    for statement in function.body:
        if isinstance(statement, ast.Return) and isinstance(statement.value, ast.Name):
            return nested.get(statement.value.id)
    return None


def _calls_parameter_of(wrapper: FunctionNode, decorator: FunctionNode, any_parameter: bool = False) -> bool:
    """The wrapper calls the function its decorator was given (its first parameter); with ``any_parameter``, a
    function any parameter of a wrapping factory was handed (``claimed(name, job)``)."""
    arguments = decorator.args.posonlyargs + decorator.args.args
    if any_parameter:
        arguments = arguments + decorator.args.kwonlyargs
    if not arguments:
        return False
    wrapped = {a.arg for a in arguments} if any_parameter else {arguments[0].arg}
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in wrapped
               for n in walk_no_nested_functions(wrapper))
