"""OG106: a try-lock whose answer is never read, so the work below runs whether or not the lock was taken.

The answer of ``pg_try_advisory_*`` dropped (the execute a bare statement, no fetch before the next statement
on the cursor replaces it, or a name never read), a lock library told not to wait whose acquired flag nobody
reads, and a project helper that tries a lock once and answers whether it got it, called as a statement.
"""
from __future__ import annotations

import ast
from typing import Iterator

from ..analysis.facts import (ModuleFacts, call_name, parent, position, spells_triggers, walk,
                              walk_no_nested_functions)
from ..analysis.names import dotted
from ..analysis.sql import tokens
from ..knowledge import advisory_locks as known
from ..knowledge import lock_libraries as lock_known
from ..model import Diagnostic
from ..project.prefilter_words import claim_helper_words
from ..project.claim_syntax import is_log_call, sets_with_nx
from ..project.claims import CACHE_ADD, HELPER_CONTEXT, HELPER_RESULT, LOCK_ACQUIRE, SET_NX, TRY_LOCK, ClaimAnalyzer
from ..project.lock_libraries import LibraryLock, library_locks, spells_lock_library
from ..project.minted_keys import minted_key
from ..project.redis_keys import key_text
from ..project.scheduled.discovery import _resolver as claim_resolver
from ..project.state_answers import answer_dropped
from .advisory_locks import LockUse, _calls_on, _lease_first, lock_uses
from .base import Rule
from .fix_plans import try_lock_fix
from .registry import register

_READERS = ("fetchone", "fetchall", "fetchmany", "fetchval", "scalar", "scalar_one", "first", "one")
#: Calls that run another statement on a cursor, replacing the result a fetch would read.
_STATEMENT_RUNNERS = ("execute", "executemany")


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


#: Words of a call that gives a lock back: an answer tested only to decide one decides nothing about the work.
_RELEASE_WORDS = frozenset({"unlock", "release"})


def _read_only_to_release(name: str, statement: ast.AST, scope: ast.AST) -> bool:
    """Every read of ``name`` after ``statement`` is the test of an ``if`` (``if locked:``, ``if not acquired:``)
    whose whole body gives the lock back (``await unlock(conn, KEY)``) or only reports
    (``logger.warning("busy")``), with no ``else`` and nothing leaving: the answer decides the release or a log
    line, never the work, which runs on every replica whether or not this one got the lock."""
    after = position(statement)
    reads = [node for node in walk_no_nested_functions(scope) if isinstance(node, ast.Name) and node.id == name
             and isinstance(node.ctx, ast.Load) and position(node) > after]
    if not reads:
        return False
    for read in reads:
        test = parent(read)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            read, test = test, parent(test)
        if not (isinstance(test, ast.If) and test.test is read and not test.orelse):
            return False
        for line in test.body:
            if isinstance(line, ast.Pass):
                continue
            call = line.value.value if isinstance(line, ast.Expr) and isinstance(line.value, ast.Await) else (
                line.value if isinstance(line, ast.Expr) else None)
            if not isinstance(call, ast.Call) or not (_gives_back(call) or is_log_call(call)):
                return False
    return True


def _read_only_to_report(name: str, statement: ast.AST, scope: ast.AST) -> bool:
    """``_read_only_to_release``, and no ``if`` around a read of ``name`` gives the lock back: the answer is only
    logged."""
    return _read_only_to_release(name, statement, scope) and not any(
        isinstance(node, ast.Call) and _gives_back(node)
        for read in walk_no_nested_functions(scope) if isinstance(read, ast.If) and any(
            isinstance(n, ast.Name) and n.id == name for n in walk(read.test))
        for node in walk(read))


def _gives_back(call: ast.Call) -> bool:
    """A release by its name (``unlock(conn, KEY)``, ``lock.release()``) or by the SQL it sends
    (``cur.execute("SELECT pg_advisory_unlock(%s)", ...)``)."""
    words = set((dotted(call.func) or "").replace(".", "_").lower().split("_"))
    return bool(words & _RELEASE_WORDS) or any(
        isinstance(a, ast.Constant) and isinstance(a.value, str) and "unlock" in a.value.lower() for a in call.args)


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
        if receiver is None:
            return True
        # The answer is read by the first fetch on the same cursor, unless another statement it runs first
        # replaces the result (``cur.execute(lock)`` then ``cur.execute(orders)`` then ``cur.fetchall()``).
        after = position(use.call)
        reads = [position(c) for c in _calls_on(receiver, _READERS, scope) if position(c) > after]
        runs = [position(c) for c in _calls_on(receiver, _STATEMENT_RUNNERS, scope) if position(c) > after]
        return not reads or (bool(runs) and min(runs) < min(reads))
    if isinstance(above, ast.Assign) and len(above.targets) == 1 and isinstance(above.targets[0], ast.Name):
        target = above.targets[0].id
        return (target == "_" or not _name_read_after(target, above, scope)
                or _read_only_to_release(target, above, scope))
    return False


def _kept_for_release(statement: ast.AST, value: ast.AST, scope: ast.AST) -> bool:
    """``statement`` binds ``value`` (a try-lock's answer) to one name that only an ``if`` around the unlock
    reads."""
    return (isinstance(statement, ast.Assign) and statement.value is value and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and _read_only_to_release(statement.targets[0].id, statement, scope))


def _kept_answer_fate(statement: ast.AST, scope: ast.AST, releases: str) -> str:
    """What the kept answer decides, for the message: only a log line, or (``releases``) whether to unlock."""
    if isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name) \
            and _read_only_to_report(statement.targets[0].id, statement, scope):
        return "is only logged"
    return releases


def _answer_only_releases(use: LockUse, facts: ModuleFacts) -> bool:
    """The SQL try-lock's answer is kept in a name that only an ``if`` around the unlock reads."""
    holder = _value_holder(use.call)
    return _kept_for_release(parent(holder), holder, use.scope or facts.tree)


#: Redis reads of a key's value.
_KEY_READS = ("get", "getdel", "getex")
#: Prefilter: a Redis SET with NX.
_SET_NX_WORDS = (b"nx=True", b"PureToken.NX")


@register
class TryLockResultIgnored(Rule):
    code = "OG106"
    name = "try-lock-result-ignored"
    summary = "result of pg_try_advisory_* never read: the work runs whether or not the lock was acquired"
    triggers = known.TRIGGERS + lock_known.TRIGGERS + _SET_NX_WORDS

    @staticmethod
    def project_triggers(config) -> tuple:
        """A module that tries the lock only through the project's own helper (``await claim_run(s, KEY)``)."""
        return claim_helper_words(config)

    def check(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        for call in _dropped_helper_answers(facts):
            fate = _kept_answer_fate(facts.statement_of(call), facts.enclosing_function(call) or facts.tree,
                                     "only decides whether to unlock") if _kept_only_to_release(call, facts) \
                else "is dropped"
            yield self.finding(
                call,
                f"`{dotted(call.func) or 'this call'}(...)` answers whether this replica got the lock, and the answer "
                f"{fate}, so every replica runs the work below.",
                "The helper tries the lock and returns whether it got it; nothing here reads that. Test it and skip "
                "the run when it is false: `if not await claim(...): return`",
            )
        for call in _dropped_context_answers(facts):
            yield self.finding(
                call,
                f"`{dotted(call.func) or 'this call'}(...)` yields whether this replica got the lock, and nothing "
                "reads it, so every replica runs the work in the block.",
                "The context manager tries the lock and yields its answer; entering it claims nothing. Bind the answer "
                "and skip the run when it is false: `with try_lock(...) as acquired: if not acquired: return`",
            )
        for lock in library_locks(facts) if spells_lock_library(facts) else ():
            if not lock.waits and not lock.api.raises_when_held and _acquired_dropped(lock, facts):
                yield self.finding(
                    lock.taken,
                    f"this {lock.api.library} lock does not wait and nothing reads whether it was acquired, so "
                    "every replica runs the work below.",
                    "The work below runs whether or not this replica got the lock. Keep the answer and skip when it is false: `with advisory_lock(key, wait=False) as acquired: "
                    "if not acquired: return`, or `if not lock.acquire(blocking=False): return`",
                )
        for call in _dropped_set_nx(facts) if spells_triggers(facts, _SET_NX_WORDS) else ():
            yield self.finding(
                call,
                f"`{dotted(call.func) or 'set'}(..., nx=True)` claims the key, and nothing reads whether it did, so "
                "every replica runs the work below.",
                "SET NX answers whether this replica set the key; dropped, it claims nothing. Keep the answer and "
                "skip the run when it is false: `if not await r.set(key, token, nx=True, ex=ttl): return`",
            )
        for use in lock_uses(facts) if spells_triggers(facts, known.TRIGGERS) else ():  # (not a helper's name alone)
            if try_lock_result_ignored(use, facts):
                fate = _kept_answer_fate(parent(_value_holder(use.call)), use.scope or facts.tree,
                                         "is read only to decide whether to unlock") \
                    if _answer_only_releases(use, facts) else "is never read"
                yield self.finding(
                    use.call,
                    f"the result of `{use.function.name}` {fate}, so every replica runs the work below, "
                    "whether or not it got the lock.",
                    "Taking a try-lock decides nothing until its answer is tested. " + _lease_first(use, facts, "Test the lock's result and skip the run when it is false: "
                                                  "`if not acquired: return`"),
                    fix=try_lock_fix(use.call, use.scope, use.handle.library if use.handle else None,
                                     use.receiver_text),
                )


def _dropped_set_nx(facts: ModuleFacts) -> Iterator[ast.Call]:
    """``r.set(key, token, nx=True, ex=...)`` (coredis: ``condition=PureToken.NX``) on a Redis client, as a
    statement: the claim's answer goes nowhere."""
    for call in facts.calls_named("set"):
        if not sets_with_nx(call):
            continue
        # (``nx=`` is the Redis SET's own flag, on a client the module may not show: the claim analysis reads it
        # the same way)
        if not (answer_dropped(call) and facts.enclosing_function(call) is not None and call.args):
            continue
        if minted_key(call, facts):
            continue  # stored under a key this call minted (a fresh token): nobody else can contend for it
        if any(read.args and _same_key(read.args[0], call.args[0], facts) for read in facts.calls_named(*_KEY_READS)):
            continue  # a value stored once (the first writer's kept) and read back: a record, no claim was meant
        yield call


def _same_key(one: ast.AST, other: ast.AST, facts: ModuleFacts) -> bool:
    """The same expression, or two spellings whose text has the same fixed parts (``self._meta_key(upload.id)``
    and ``self._meta_key(upload_id)`` both ``"uploads:{}"``)."""
    if ast.dump(one) == ast.dump(other):
        return True
    text = key_text(one, facts)
    return bool(text) and any(c.isalnum() for c in text.replace("{}", "")) and key_text(other, facts) == text



def _names_its_def(call: ast.Call, facts: ModuleFacts) -> bool:
    """``claim_run(...)``, ``locks.claim_run(...)`` on an imported module, ``self.try_slot(...)``: a call whose
    def the module's names lead to (a method of some local object is left to the rules that type it)."""
    func = call.func
    if isinstance(func, ast.Name):
        return True
    head = func.value if isinstance(func, ast.Attribute) else None
    # (``from . import locks`` binds a module too, whatever the import's spelling says)
    return isinstance(head, ast.Name) and (head.id == "self" or facts.imports.is_module(head.id)
                                           or facts.imports.is_imported(head.id))


def _dropped_helper_answers(facts: ModuleFacts) -> Iterator[ast.Call]:
    """Calls made as statements of a project helper that returns a claim's answer (``claim_run(session, KEY)``
    returning ``pg_try_advisory_xact_lock``'s): the answer goes nowhere."""
    if not facts.context.cross_file:
        return
    names = {word[:-1].decode() for word in claim_helper_words(facts.config)}
    analyzer = None
    for call in (c for name in sorted(names & facts.calls_by_name.keys()) for c in facts.calls_by_name[name]):
        if not (answer_dropped(call) or _kept_only_to_release(call, facts)) or not _names_its_def(call, facts):
            continue
        if analyzer is None:
            analyzer = ClaimAnalyzer.of_module(facts, claim_resolver)
        target = analyzer.helper_of(call)  # the helper's own body says what it answers, not its name
        if target is not None and target[1].helper_kind(target[0]) == HELPER_RESULT and _tries_a_lock(*target):
            yield call


def _dropped_context_answers(facts: ModuleFacts) -> Iterator[ast.Call]:
    """``with try_lock(conn, KEY):`` (no ``as``, or an ``as`` name nothing reads) where ``try_lock`` is a context
    manager of the project that tries a lock once and yields whether it got it: the block runs either way."""
    if not facts.context.cross_file:
        return
    names = {word[:-1].decode() for word in claim_helper_words(facts.config)}
    if not names & facts.calls_by_name.keys():
        return
    analyzer = None
    for statement in facts.nodes:
        if not isinstance(statement, (ast.With, ast.AsyncWith)):
            continue
        for item in statement.items:
            call = item.context_expr
            call = call.value if isinstance(call, ast.Await) else call
            if not (isinstance(call, ast.Call) and call_name(call) in names and _names_its_def(call, facts)):
                continue
            bound = item.optional_vars
            if bound is not None and not (isinstance(bound, ast.Name) and not _name_read_after(
                    bound.id, statement, facts.enclosing_function(statement) or facts.tree)):
                continue  # (a tuple, or a name the code reads: whether it tests it is the claim analysis's question)
            if analyzer is None:
                analyzer = ClaimAnalyzer.of_module(facts, claim_resolver)
            target = analyzer.helper_of(call)
            if target is not None and target[1].helper_kind(target[0]) == HELPER_CONTEXT and _tries_a_lock(*target):
                yield call


def _kept_only_to_release(call: ast.Call, facts: ModuleFacts) -> bool:
    """``locked = await try_lock(conn, KEY)`` read only by ``if locked: await unlock(conn, KEY)``."""
    held = parent(call) if isinstance(parent(call), ast.Await) else call
    return _kept_for_release(facts.statement_of(call), held, facts.enclosing_function(call) or facts.tree)


#: Claims that are locks tried once: a helper answering one of them answers "did I get the lock" (a row count of
#: a conditional UPDATE it returns is the number of rows it changed, something else).
_LOCK_TRIES = frozenset({TRY_LOCK, SET_NX, LOCK_ACQUIRE, CACHE_ADD})


def _tries_a_lock(function, analyzer: ClaimAnalyzer) -> bool:
    return any(isinstance(node, ast.Call) and analyzer.call_claim(node) in _LOCK_TRIES
               for node in walk_no_nested_functions(function))


def _acquired_dropped(lock: LibraryLock, facts: ModuleFacts) -> bool:
    """``with advisory_lock(k, wait=False):`` (no ``as``, or an ``as`` name never read) and
    ``lock.acquire(blocking=False)`` as a bare statement."""
    if lock.in_with is not None:
        if not lock.api.yields_acquired:
            return False  # entering raises when not acquired (redis-py, pottery): nothing to drop
        if lock.acquired_name is None:
            return True
        return not _name_read_after(lock.acquired_name, lock.in_with, lock.scope or facts.tree) and not any(
            isinstance(n, ast.Name) and n.id == lock.acquired_name and isinstance(n.ctx, ast.Load)
            for statement in lock.in_with.body for n in walk(statement))
    if isinstance(lock.taken, ast.Call) and isinstance(lock.taken.func, ast.Attribute) \
            and lock.taken.func.attr == lock_known.ACQUIRE:
        holder = _value_holder(lock.taken)
        return isinstance(parent(holder), ast.Expr)
    return False
