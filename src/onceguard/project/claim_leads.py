"""The statements a job begins with, read for a claim (``ClaimAnalyzer.lead``).

A job is claimed when a claim leads it: before any work, a try-lock, a ``SET NX``, a claiming helper... whose
answer is tested and whose failed branch leaves (``if not got: return``), or a claim the rest of the job runs
inside (``with claim_period(...):``, ``if acquired: ...``).  What may come before it is preamble only:
docstrings, logging, imports, assignments of keys and settings, and a test that something is configured.
The scan walks the leading statements, into ``if``/``with``/``try`` blocks, and says how it ended.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Set, Tuple

from ..analysis.executed_sql import bound_value
from ..analysis.facts import ModuleFacts, walk
from ..analysis.handles import Handles
from ..analysis.names import plain_name
from ..knowledge import databases as db
from ..knowledge import process_local as clocks
from .claim_kinds import (CLAIM_FUNCTION, CONDITIONAL_UPDATE, HELPER_RESULT, HUEY_LOCK, LOCK_WITH, TRY_LOCK,
                          UNIQUE_INSERT, ClaimHit)
from .claim_syntax import (_assigned, _fetch_from, _has_call, _is_huey_lock_expr, _is_preamble, _target_names,
                           is_log_call)
from .claims import _FUNCTION_TYPES, _TRY_STAR, ClaimAnalyzer

def _bails(body: List[ast.stmt], skip: Optional[Callable[[ast.stmt], bool]] = None) -> bool:
    """A branch that leaves: ``return``/``continue``/``break``/``raise`` after nothing but logging (and, in a
    loop, its own machinery: ``await asyncio.sleep(retry); continue`` waits for the next try)."""
    if not body:
        return False
    *head, last = body
    if not isinstance(last, (ast.Return, ast.Continue, ast.Break, ast.Raise)):
        return False
    if isinstance(last, ast.Return) and last.value is not None and _has_call(last.value):
        return False
    return all(_is_preamble(s) or _gives_back_handle(s) or (skip is not None and skip(s)) for s in head)


def _gives_back_handle(statement: ast.stmt) -> bool:
    """``conn.close()``, ``await pool.release(conn)``, ``conn.rollback()`` on the way out of a lost claim: the
    connection the claim was asked on is handed back or its transaction ended, no work done."""
    call = statement.value if isinstance(statement, ast.Expr) else None
    call = call.value if isinstance(call, ast.Await) else call
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
        and call.func.attr in db.RETURN_METHODS | _TRANSACTION_ENDS


def _presence_test(test: ast.AST) -> bool:
    """``x``, ``self.x and self.x.client``, ``x is not None``: a test that something is configured."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return all(_presence_test(value) for value in test.values)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot):
        right = test.comparators[0]
        return isinstance(right, ast.Constant) and right.value is None and _presence_test(test.left)
    return isinstance(test, (ast.Name, ast.Attribute))


def _trivial_rest(rest: List[ast.stmt], skip: Callable[[ast.stmt], bool]) -> bool:
    for statement in rest:
        if skip(statement):
            continue
        if isinstance(statement, ast.Return) and (statement.value is None or not _has_call(statement.value)):
            continue
        if isinstance(statement, ast.Expr) and (isinstance(statement.value, ast.Constant) or is_log_call(statement.value)):
            continue
        if isinstance(statement, ast.Pass):
            continue
        return False
    return True


#: How a scan of the leading statements ends: with a claim, with work before one, still going, or at the end.
CLAIMED, FAILED, _CONTINUE, _END = "claim", "fail", "continue", "end"


@dataclass
class LeadScan:
    analyzer: ClaimAnalyzer
    skip: Callable[[ast.stmt], bool]
    depth: int
    pending: Dict[str, ClaimHit] = field(default_factory=dict)
    executed: Dict[str, ClaimHit] = field(default_factory=dict)
    untested: Optional[ast.AST] = None  # the first claim-shaped statement whose result is not tested yet
    #: The pending names that hold an answer as a value (assigned, or bound by ``with``), not as a cursor: what
    #: is computed from them is the answer too.
    answers: Set[str] = field(default_factory=set)
    #: The kind of claim a ``for`` so far iterated over (``for row in claim_due(...)``): its body did only this
    #: replica's share; the scan goes on after it, and ends claimed if nothing else does work.
    looped_over: Optional[str] = None

    def block(self, body: List[ast.stmt]) -> Tuple[str, Optional[ast.AST], Optional[str]]:
        for index, statement in enumerate(body):
            if self.skip(statement):
                continue
            outcome = self.statement(statement, body[index + 1:])
            if outcome[0] != _CONTINUE:
                return outcome
        return _CONTINUE, None, None

    def _stays_in_process(self, statement: ast.stmt) -> bool:
        """A call the knowledge says acts on nothing outside the process (``close_old_connections()``), or a
        function of this module whose every call is one (a helper around it).  Read from the knowledge, not by
        following the project's calls: a scan of a job's first statements is asked of every job."""
        call = statement.value if isinstance(statement, ast.Expr) else None
        call = call.value if isinstance(call, ast.Await) else call
        if not isinstance(call, ast.Call):
            return False
        if self.pending and isinstance(call.func, ast.Attribute) and call.func.attr in _TRANSACTION_ENDS \
                and not call.args and not call.keywords:
            return True  # ``conn.commit()`` after the try-lock's answer was read: it ends a transaction, no work
        facts = self.analyzer.facts
        if _knowledge_pure(call, facts) or _sets_up_handle(call, facts):
            return True
        helper = self.analyzer.bindings.module_function(call.func) if isinstance(call.func, ast.Name) else None
        calls = [node for node in walk(helper) if isinstance(node, ast.Call)] if helper is not None else []
        return bool(calls) and all(_knowledge_pure(inner, facts) or is_log_call(inner) for inner in calls)

    def _tests_no_work(self, test: ast.AST) -> bool:
        """A test that calls nothing, or only reads the clock it was handed (``now.weekday() == 0``, with ``now``
        bound to ``datetime.now(...)``) or calls the knowledge says compute only: it decides when, and does no
        work."""
        facts = self.analyzer.facts
        for node in walk(test):
            if isinstance(node, ast.Await):
                return False
            if isinstance(node, ast.Call) and not _knowledge_pure(node, facts) and not _of_a_clock_reading(node, facts):
                return False
        return True

    def _claim(self, expr: Optional[ast.AST]) -> Optional[ClaimHit]:
        return self.analyzer.claim_in(expr, self.depth)

    def _involves(self, test: ast.AST) -> Optional[ClaimHit]:
        for node in walk(test):
            if isinstance(node, ast.Name) and node.id in self.pending and self.pending[node.id].read_by(node):
                return self.pending[node.id]
        if isinstance(test, ast.Attribute) and isinstance(test.value, ast.Name) \
                and test.value.id not in ("self", "cls"):
            # ``if lease.is_leader:``: a flag its class sets only when a claim was won (a leader's lease)
            return self.analyzer._flag_set_by_claims(test, test)
        return self._claim(test)

    def statement(self, statement: ast.stmt, rest: List[ast.stmt]) -> Tuple[str, Optional[ast.AST], Optional[str]]:
        fail = (FAILED, statement, None)
        if isinstance(statement, ast.If):
            hit = self._involves(statement.test)
            if hit is not None:
                if (not hit.needs_test or _bails(statement.body, self.skip) or _bails(statement.orelse, self.skip)
                        or _trivial_rest(rest, self.skip)):
                    return CLAIMED, None, hit.kind
                return fail
            if _bails(statement.body) and not statement.orelse:
                return _CONTINUE, None, None  # a config guard: ``if not settings.ENABLED: return``
            if _presence_test(statement.test) and statement.body:
                # ``if lock_manager and lock_manager.redis: <claim first> ...``: where the shared backend is
                # configured the job claims first; without one there is no other replica to share with.
                inner = self.analyzer.lead_body(statement.body, self.skip, self.depth)
                if inner.claimed:
                    return CLAIMED, None, inner.kind
            if self._tests_no_work(statement.test) and statement.body \
                    and all(_is_preamble(s) for s in statement.orelse) and _trivial_rest(rest, self.skip):
                # ``if today.day >= settings.close_day: <claim first> ...`` with nothing after it: a test of a date
                # or a setting, no work; whenever the job works, a claim leads that work.
                inner = self.analyzer.lead_body(statement.body, self.skip, self.depth)
                if inner.claimed:
                    return CLAIMED, None, inner.kind
            if self._absent_claimer(statement, rest):
                # ``if lock_manager is None: return run()`` before ``if not lock_manager.acquire(...)``:
                # a deployment with nothing to claim with (no shared store) is a single-instance one.
                return _CONTINUE, None, None
            if all(_is_preamble(s) for s in statement.body + statement.orelse):
                return _CONTINUE, None, None  # ``if settings.DEBUG: log.debug(...)``
            return fail
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            for item in statement.items:
                expr = item.context_expr
                if self.analyzer._lock_object(expr):
                    return CLAIMED, None, HUEY_LOCK if _is_huey_lock_expr(expr) else LOCK_WITH
                if isinstance(expr, ast.Call) and self.analyzer.is_claim_function(expr):
                    return CLAIMED, None, CLAIM_FUNCTION
                hit = self._claim(expr)
                if hit is not None and not hit.needs_test:
                    return CLAIMED, None, hit.kind
                entered = self.analyzer.context_claim(expr, self.depth) if isinstance(expr, ast.Call) else None
                if entered is not None and not entered.needs_test:
                    return CLAIMED, None, entered.kind  # an object whose ``__enter__`` raises unless it won
                if isinstance(item.optional_vars, ast.Name):
                    # ``with exclusive(key) as acquired:``: the name holds the answer, to be tested first.
                    hit = self.analyzer.context_claim(expr, self.depth)
                    if hit is not None:
                        self.pending[item.optional_vars.id] = hit
                        self.answers.add(item.optional_vars.id)
                        if self.untested is None:
                            self.untested = statement
            return self.block(statement.body)
        if isinstance(statement, (ast.Try,) + _TRY_STAR):
            return self.block(statement.body)
        if isinstance(statement, (ast.For, ast.AsyncFor, ast.While)):
            header = statement.test if isinstance(statement, ast.While) else statement.iter
            hit = self._claim(header)
            if hit is not None and not hit.needs_test:
                return CLAIMED, None, hit.kind
            if hit is not None and not isinstance(statement, ast.While):
                # a ``for`` over what a claim hands back runs its body only for what this replica won; what
                # comes after the loop is judged on its own
                self.looped_over = self.looped_over or hit.kind
                return _CONTINUE, None, None
            inner = LeadScan(self.analyzer, self.skip, self.depth, dict(self.pending), dict(self.executed),
                          answers=set(self.answers))
            outcome = inner.block(statement.body)
            if outcome[0] == CLAIMED:
                return outcome
            if outcome[0] == FAILED:
                return FAILED, outcome[1], None
            if inner.untested is not None:
                return FAILED, inner.untested, None
            if inner.looped_over is not None:
                return CLAIMED, None, inner.looped_over  # each pass's only work is on what it claimed
            return fail
        if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            value = statement.value
            if value is None:
                return _CONTINUE, None, None
            hit = self._claim(value)
            if hit is None and self.executed:
                hit = _fetch_from(value, self.executed)
            if hit is None and self.answers:
                # ``acquired = bool(row and row[0])``: computed from the answer, it is the answer.
                hit = next((self.pending[n.id] for n in walk(value)
                            if isinstance(n, ast.Name) and n.id in self.answers), None)
            if hit is not None:
                if not hit.needs_test or self._wraps_job(hit):
                    return CLAIMED, None, hit.kind
                if not isinstance(statement, ast.AugAssign):
                    for name in _target_names(statement):
                        self.pending[name] = hit
                    self.answers.update(name for name in _assigned(statement) if "." not in name)
                if self.untested is None:
                    self.untested = statement
                return _CONTINUE, None, None
            return _CONTINUE, None, None
        if isinstance(statement, ast.Expr):
            value = statement.value
            if isinstance(value, ast.Constant) or is_log_call(value):
                return _CONTINUE, None, None
            hit = self._claim(value)
            if hit is None:
                # ``close_old_connections()`` first: a call the knowledge says stays inside the process does no
                # work another replica repeats.
                return (_CONTINUE, None, None) if self._stays_in_process(statement) else fail
            if not hit.needs_test or self._wraps_job(hit):
                return CLAIMED, None, hit.kind
            call = value.value if isinstance(value, ast.Await) else value
            if (hit.kind in (TRY_LOCK, CONDITIONAL_UPDATE, UNIQUE_INSERT) and isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)):
                # ``cur.execute(<claim>)``: the result is read next (fetchone / rowcount) and tested.
                receiver = plain_name(call.func.value)
                if receiver:
                    self.executed[receiver] = hit
                    self.pending[receiver.split(".", 1)[0]] = hit
                    if self.untested is None:
                        self.untested = statement
                    return _CONTINUE, None, None
            return fail
        if isinstance(statement, ast.Return):
            if statement.value is None or not _has_call(statement.value):
                return _END, None, None
            hit = self._claim(statement.value)
            if hit is not None and (not hit.needs_test or self._wraps_job(hit)):
                return CLAIMED, None, hit.kind
            return fail
        if isinstance(statement, ast.Raise):
            return _END, None, None
        if _is_preamble(statement):
            return _CONTINUE, None, None
        return fail

    def _absent_claimer(self, statement: ast.If, rest: List[ast.stmt]) -> bool:
        names = set()
        for node in walk(statement.test):
            if (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Is)
                    and isinstance(node.comparators[0], ast.Constant) and node.comparators[0].value is None):
                root = node.left
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(root, ast.Name):
                    names.add(root.id)
        if not names or statement.orelse:
            return False
        for later in rest[:3]:
            for node in walk(later):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and isinstance(node.func.value, ast.Name) and node.func.value.id in names
                        and self.analyzer.call_claim(node, self.depth) is not None):
                    return True
        return False

    def _wraps_job(self, hit: ClaimHit) -> bool:
        """``run_exclusive(key, ttl, fn)``: the job is handed to the claim function, which runs it."""
        if hit.kind not in (CLAIM_FUNCTION, HELPER_RESULT) or not isinstance(hit.node, ast.Call):
            return False
        call = hit.node
        arguments = list(call.args) + [k.value for k in call.keywords]
        return any(self._callable_argument(argument) for argument in arguments)

    def _callable_argument(self, node: ast.AST) -> bool:
        facts = self.analyzer.facts
        if isinstance(node, ast.Lambda):
            return True
        if isinstance(node, ast.Call):
            return (facts.callee(node) or "") in ("functools.partial", "partial")
        if isinstance(node, ast.Attribute):
            return isinstance(node.value, ast.Name) and (node.value.id == "self" or facts.imports.is_imported(node.value.id)
                                                         or facts.module_method(node) is not None)
        if isinstance(node, ast.Name):
            bindings = self.analyzer.bindings
            if bindings.module_function(node) is not None:
                return True
            if bindings.imported_name(node) is not None:
                return True
            scope, values = bindings.scope_of(node)
            if scope is None:
                return True  # bound nowhere visible (a star import, a builtin): do not guess it is a key
            if not values and isinstance(scope, _FUNCTION_TYPES):
                return True  # a parameter: the job handed in
            return any(isinstance(v, (ast.Lambda, ast.Attribute, ast.Name)) or (
                isinstance(v, ast.Call) and (facts.callee(v) or "") in ("functools.partial", "partial"))
                for v in values)
        return False


#: Calls that end the connection's transaction (a session lock taken in it stays held).
_TRANSACTION_ENDS = frozenset({"commit", "rollback"})


def _sets_up_handle(call: ast.Call, facts: ModuleFacts) -> bool:
    """``self._pool.open(wait=True)``: a database handle the module makes opening (or closing) its own
    connections, with no statement sent."""
    func = call.func
    return isinstance(func, ast.Attribute) and func.attr in db.SETUP_METHODS and not call.args \
        and Handles.of_module(facts).of(func.value) is not None


def _of_a_clock_reading(call: ast.Call, facts: ModuleFacts) -> bool:
    """``now.weekday()``: a method of a name bound to what a clock returned (a date or a time: its methods read
    its fields)."""
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    if not isinstance(receiver, ast.Name):
        return False
    bound = bound_value(receiver, facts)
    bound = bound.value if isinstance(bound, ast.Await) else bound
    return isinstance(bound, ast.Call) and (facts.callee(bound) or "") in clocks.CLOCK_CALLS


def _knowledge_pure(call: ast.Call, facts: ModuleFacts) -> bool:
    from .summaries import pure_callee

    return pure_callee(facts.callee(call) or "")
