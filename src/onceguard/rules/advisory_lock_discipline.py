"""OG103, OG105: whether taking a lock waits, and whether it is always released (whether its answer is read,
OG106, is ``try_lock_results``; what it is keyed on, OG104, ``lock_keys``).  Lock uses and connection handles come from
``advisory_locks``; lock libraries from ``project.lock_libraries``; which jobs enter a lock helper from
``project.locked_sections``; locks taken and released through the project's own helpers from
``project.advisory_helpers``.
"""
from __future__ import annotations

import ast
from typing import Iterator, List, Optional, Set

from ..analysis.facts import (ModuleFacts, ancestors, is_generator, parent, position, statement_list, walk,
                              walk_no_nested_functions)
from .fix_plans import try_lock_fix
from ..knowledge import advisory_locks as known
from ..knowledge import databases as db
from ..knowledge import schema as schema_known
from ..knowledge import lock_libraries as lock_known
from ..project.caller_locks import caller_lock_helper_words, caller_locks, locks_for_caller
from ..project.fixed_arguments import callers_of, fixed_at_callers, ruled_out_for
from ..project.forwarding import forwarded
from ..project.lock_libraries import LibraryLock, library_locks, spells_lock_library, spin_waits
from ..project.locked_sections import jobs_entering, jobs_wearing
from ..project.advisory_helpers import helper_pairs, helper_words, release_guaranteed
from ..project.prefilter_words import library_lock_helper_words
from ..project.state_answers import answer_dropped
from ..project.claim_syntax import is_log_call
from ..project.fixed_keys import (fixed_when_called, is_fixed_key as _is_fixed_key,
                                  parameter_names_around as _parameter_names)
from ..model import Diagnostic, Related
from ..analysis.names import dotted
from .registry import register
from .base import Rule
from .advisory_locks import LockUse, SessionLockOnPool, _calls_on, _guard_key, _lease_first, lock_uses
from .try_lock_results import try_lock_result_ignored


# -- lock keys --------------------------------------------------------------------------------------

def key_expressions(use: LockUse) -> List[ast.AST]:
    """The Python expressions the lock key is computed from: parameters and f-string holes."""
    executed = use.executed
    return list(executed.params) + list(executed.holes)


# -- blocking locks ---------------------------------------------------------------------------------

def _fixed_at_callers(keys: List[ast.AST], use: LockUse, facts: ModuleFacts) -> tuple:
    """A lock helper keyed on its parameters (``def wait_for(conn, key)`` running ``pg_advisory_lock(:k)`` with
    ``key``) locks a job-wide key when every caller the project shows hands it a fixed one: those calls (through
    callers that only pass on their own parameter too), less the ones in migration code or in a lock helper of
    their own (where waiting is what the lock is for). Empty when a caller passes a key of its own making, or
    when no caller is seen."""
    scope = use.scope
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) or not keys:
        return ()
    parameters = _parameter_names(keys[0], facts)
    # The bound values of the statement's parameters (``{"k": key}``, ``(key,)``) are the key.
    keys = [part for key in keys for part in (
        key.values if isinstance(key, ast.Dict) else key.elts if isinstance(key, (ast.Tuple, ast.List)) else [key])]
    if not keys or not all(isinstance(key, ast.Name) and key.id in parameters for key in keys):
        return ()

    def waiting_is_right(call: ast.Call, other: ModuleFacts) -> bool:
        caller = other.enclosing_function(call)
        # (or the call never reaches the lock: ``if wait:`` around it, the call handing ``wait=False``)
        return other.context.is_migration or _runs_migrations(caller, other) or _yields_to_caller(caller) \
            or ruled_out_for(call, scope, use.call)

    return tuple(fixed_at_callers(scope, [key.id for key in keys], facts, _is_fixed_key, waiting_is_right) or ())


def _short_path(facts: ModuleFacts) -> str:
    return facts.context.rel_path or (facts.context.path or "").rsplit("/", 1)[-1]


def _yields_to_caller(scope: Optional[ast.AST]) -> bool:
    """A generator (a ``@contextmanager`` lock helper) hands the locked section to its caller.

    Such a helper is a mutex around the caller's block, used by request code whose every call must do
    its work; waiting is what it is for.  A job that must run once takes its guard in its own body."""
    return isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and is_generator(scope)


def _locks_for_caller(use: LockUse) -> bool:
    """A transaction-level lock taken as the last thing a function does, on a connection or session its caller
    handed in (``async def lock_writes(session): await session.execute("SELECT pg_advisory_xact_lock(...)")``):
    a critical section for the rest of the caller's transaction (``project.caller_locks``)."""
    return not use.function.session and locks_for_caller(use.call, use.executed.receiver, use.scope)


def _runs_migrations(scope: Optional[ast.AST], facts: ModuleFacts) -> bool:
    """The function holding the lock applies migrations itself (``command.upgrade``, ``call_command("migrate")``);
    for a lock taken at module level, the module's own top-level code (what its import runs)."""
    if scope is None:
        scope = facts.tree
    for node in walk_no_nested_functions(scope):
        if not isinstance(node, ast.Call):
            continue
        through = forwarded(node, facts)  # ``_upgrade(cfg, "head")`` returning ``command.upgrade(...)``
        callee, node = (through.callee, through.call) if through is not None else (facts.callee(node) or "", node)
        if callee in schema_known.SCHEMA_CALLS or callee in schema_known.ALEMBIC_APPLY:
            return True
        if (callee in schema_known.DJANGO_CALL_COMMAND and node.args and isinstance(node.args[0], ast.Constant)
                and node.args[0].value in schema_known.DJANGO_SCHEMA_COMMANDS):
            return True
    # or writes the schema itself: DDL it sends (from a .sql file of the project too) is a migration's work
    from ..project.schema_writes import schema_writes

    return any(scope in ancestors(write.call) for write in schema_writes(facts))


def _start_up_only(scope: Optional[ast.AST], lock: ast.AST, facts: ModuleFacts) -> bool:
    """The lock is taken by start-up code every replica runs once as it boots (a lifespan's backfill), and by no
    request or job: the replicas queue once per deploy and the later ones find the work done."""
    from ..project.reach import Reach, runs

    from ..project.scheduled.discovery import scheduled_by_all

    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) or Reach.of_module(facts).is_request_or_job(scope):
        return False
    if scheduled_by_all(scope, facts):
        return False  # repeated by a scheduler: a job, whatever starts it
    for call, other in callers_of(scope, facts):
        caller = other.enclosing_function(call)
        if any(isinstance(above, ast.While) for above in ancestors(call)) or (
                caller is not None and scheduled_by_all(caller, other)):
            return False  # called on each pass of a loop, or by a job: repeated work
    return runs(lock, facts, startup_only=True).every_replica


def _rechecks_under_lock(lock: ast.Call) -> bool:
    """The statements after the lock (in its block, or the ``try`` that follows it) read state and leave when the
    work is done before doing anything else (``closed = await conn.fetchval("SELECT EXISTS ..."); if closed:
    return``): a replica that waited finds the work done and stops."""
    statement = ModuleFacts.statement_of(lock)
    block = statement_list(statement)
    if block is None:
        return False
    following = block[block.index(statement) + 1:]
    if following and isinstance(following[0], ast.Try):
        following = following[0].body
    for step in following:
        if isinstance(step, (ast.Assign, ast.AnnAssign)) and any(isinstance(n, ast.Call) for n in walk(step.value)):
            continue  # a read of what the work would change
        if isinstance(step, ast.If) and step.body and isinstance(step.body[-1], (ast.Return, ast.Raise, ast.Continue)):
            return True
        return False
    return False


@register
class BlockingLockInJob(Rule):
    code = "OG103"
    name = "blocking-lock-in-job"
    summary = "blocking pg_advisory_lock on a job-wide key outside migration code: replicas queue and each runs the job"
    triggers = known.TRIGGERS + lock_known.TRIGGERS
    skips_tests = True
    skips_migration_code = True

    @staticmethod
    def project_triggers(config) -> tuple:
        """A job that enters a lock only through a project helper that makes it (``with named_lock("sync"):``), or
        takes one for the rest of its transaction through a helper it hands the key (``xact_lock(conn, JOB)``)."""
        return library_lock_helper_words(config) + caller_lock_helper_words(config)

    def check(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        if facts.context.is_migration or facts.context.is_test:
            return
        yield from self._library_locks(facts)
        yield from self._taken_through_helpers(facts)
        for use in lock_uses(facts):
            function = use.function
            if not (function.blocking and function.is_lock):
                continue
            keys = key_expressions(use)
            callers = ()
            if _yields_to_caller(use.scope) and facts.context.cross_file:
                # a mutex around its caller's block: waiting is what it is for, unless a job enters it
                entering = jobs_entering(use.scope, keys, facts, _is_fixed_key, use.call)
                if entering and not _runs_migrations(use.scope, facts):
                    yield self._entered_by_jobs(use, entering)
                continue
            if not _is_fixed_key(keys, facts):
                callers = _fixed_at_callers(keys, use, facts)
                if not callers:
                    continue  # a per-row/per-user key serialises requests on purpose
            if _yields_to_caller(use.scope) or _locks_for_caller(use):
                continue  # a critical section: every caller's block must run, one at a time
            if _runs_migrations(use.scope, facts):
                continue  # a migration runner wherever it lives: pods should wait for each other there
            if _start_up_only(use.scope, use.call, facts):
                continue  # one-off start-up work (a backfill): pods wait their turn, as for migrations
            if _rechecks_under_lock(use.call):
                continue  # the waiter reads whether the work is done and leaves: it queues, it does not repeat
            instead = "pg_try_advisory_xact_lock" if not function.session else "pg_try_advisory_lock"
            if callers:
                yield self._helper_finding(use, callers, instead)
                continue
            yield self.finding(
                use.call,
                f"`{function.name}` waits until the lock is free, so a second replica queues behind the first and "
                "then runs the same job again.",
                f"Skip instead of waiting: for a periodic job, `if not claim_period(\"{_guard_key(use, facts)}\", "
                "period): return` (`from onceguard.guards import claim_period`) also stops a replica that arrives "
                f"after the run has finished; or use `{instead}` and return when it is false. Blocking locks "
                "belong in migration runners, where pods should wait for each other",
                fix=try_lock_fix(use.call, use.scope, use.handle.library if use.handle else None, use.receiver_text,
                                 blocking=True),
            )


    def _taken_through_helpers(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        """``xact_lock(conn, JOB)``: a helper that takes a blocking transaction-level lock for its caller, keyed on
        what it is handed, called with a fixed key: the caller holds a job-wide lock until its transaction ends,
        as if it sent the SQL itself (the helper is silent: it is every caller's, and most choose their key)."""
        for taken in caller_locks(facts):
            keys = list(taken.lock.keys)
            caller = facts.enclosing_function(taken.call)
            if _is_fixed_key(keys, taken.facts) or not fixed_when_called(keys, taken.helper, taken.facts,
                                                                          taken.call, facts):
                continue  # the helper's own critical section, or a key of the caller's row or user
            if ruled_out_for(taken.call, taken.helper, taken.lock.lock) or _yields_to_caller(caller) \
                    or locks_for_caller(taken.call, taken.connection, caller) or _runs_migrations(caller, facts) \
                    or _start_up_only(caller, taken.call, facts) or _rechecks_under_lock(taken.call):
                continue  # (as for a lock the caller sends itself)
            helper = taken.helper.name
            yield self.finding(
                taken.call,
                f"`{helper}(...)` waits for a transaction-level lock on the fixed key handed here, so "
                "a second replica queues behind the first and then runs the same job again.",
                f"Skip instead of waiting: a variant of `{helper}` that takes `pg_try_advisory_xact_lock` and returns "
                "the answer, and `return` here when it is false; for a periodic job, `claim_period(key, period)` "
                "(`from onceguard.guards import claim_period`) also stops a replica that arrives after the run has "
                "finished",
                related=[Related(taken.facts.context.path, taken.lock.lock.lineno, taken.lock.lock.col_offset + 1,
                                 f"`{helper}` takes the lock here and holds it until the caller's transaction ends")],
            )

    def _entered_by_jobs(self, use: LockUse, entering) -> Diagnostic:
        return self.finding(
            use.call,
            f"`{use.function.name}` waits until the lock is free, and a scheduled job enters this helper with a "
            "job-wide key, so a second replica queues behind the first and then runs the same job again.",
            "Make the helper try instead of wait (`pg_try_advisory_lock`) and yield whether it got the lock, and "
            "let the job return when it did not; for a periodic job, `if not claim_period(key, period): return` "
            "(`from onceguard.guards import claim_period`) also stops a replica that arrives after the run has "
            "finished. Blocking locks belong in migration runners, where pods should wait for each other",
            related=[Related(other.context.path, call.lineno, call.col_offset + 1,
                             f"the scheduled job `{job.name}` enters it here") for call, other, job in entering],
        )

    def _helper_finding(self, use: LockUse, callers, instead: str) -> Diagnostic:
        """A lock helper keyed on its parameter, every caller handing it a fixed key: reported at the lock, with
        the callers that make the key job-wide (no fix here: the callers would have to read the answer)."""
        call, other = callers[0]
        shown = dotted(call.func) or "the helper"
        return self.finding(
            use.call,
            f"`{use.function.name}` waits until the lock is free, and `{shown}(...)` is called with a fixed key "
            f"({_short_path(other)}:{call.lineno}), so a second replica queues behind the first and then runs "
            "the same job again.",
            f"Make the helper try instead of wait: `{instead}`, returned to the caller, which skips its work when it "
            "is false; for a periodic job, `if not claim_period(key, period): return` (`from onceguard.guards "
            "import claim_period`) at the caller's top also stops a replica that arrives after the run has "
            "finished. Blocking locks belong in migration runners, where pods should wait for each other",
            related=[Related(o.context.path, c.lineno, c.col_offset + 1,
                             f"`{o.enclosing_function(c).name if o.enclosing_function(c) else 'module-level code'}` "
                             "passes a fixed key and waits here") for c, o in callers],
        )

    def _library_locks(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        """Lock libraries that wait by default (redis-py, python-redis-lock, pottery, django-pglocks,
        sqlalchemy-dlock, asyncpg-lock) and loops that retry a claim and sleep: the same queue as
        ``pg_advisory_lock``."""
        reported: Set[int] = set()
        for lock in library_locks(facts):
            if not lock.waits or lock.key is None or _runs_migrations(lock.scope, facts) or id(lock.taken) in reported:
                continue
            if lock.api.library in lock_known.FILE_LOCK_LIBRARIES and not _holds_a_jobs_work(lock, facts):
                continue  # a section of file work every caller passes in turn, not a job's lock
            entering: List = []
            if _yields_to_caller(lock.scope):
                # a mutex around its caller's block: waiting is what it is for, unless a job enters it
                entering = jobs_entering(lock.scope, [lock.key], facts, _is_fixed_key, lock.taken) \
                    if facts.context.cross_file else []
                if not entering:
                    continue
            elif not _is_fixed_key([lock.key], facts):
                # a decorator's wrapper keyed on what the decorator is given: the key of each job wearing it
                entering = jobs_wearing(lock.scope, [lock.key], facts, _is_fixed_key) \
                    if isinstance(lock.scope, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
                if not entering:
                    continue
            reported.add(id(lock.taken))
            how = ("`guard.run(...)` waits for the lock and then runs the callable" if lock.api.runs_callable
                   else f"this {lock.api.library} lock waits until it is free (it blocks by default)")
            yield self.finding(
                lock.taken,
                f"{how}, so a second replica queues behind the first and then runs the same job again.",
                _library_suggestion(lock),
                related=[Related(other.context.path, call.lineno, call.col_offset + 1,
                                 f"the scheduled job `{job.name}` enters it here") for call, other, job in entering],
            )
        for spin in spin_waits(facts):
            if spin.key is None or id(spin.claim) in reported or _runs_migrations(spin.scope, facts):
                continue
            entering = []
            if _yields_to_caller(spin.scope):
                entering = jobs_entering(spin.scope, [spin.key], facts, _is_fixed_key, spin.loop) \
                    if facts.context.cross_file else []
                if not entering:
                    continue
            elif not _is_fixed_key([spin.key], facts):
                continue
            reported.add(id(spin.claim))
            yield self.finding(
                spin.claim,
                f"the loop at line {spin.loop.lineno} retries `{dotted(spin.claim.func) or 'the claim'}(...)` until "
                "the key is free, so a second replica waits for the first and then runs the same job again.",
                "Retrying the claim and sleeping makes a hand-made blocking lock. Try once and skip: `if not r.set(key, token, nx=True, ex=ttl): return` (or "
                "`run_exclusive(key, ttl, work)` from onceguard.guards); for a periodic job, `claim_period(key, "
                "period)` also stops a replica that arrives after the run has finished",
                related=[Related(other.context.path, call.lineno, call.col_offset + 1,
                                 f"the scheduled job `{job.name}` enters it here") for call, other, job in entering],
            )


def _holds_a_jobs_work(lock: LibraryLock, facts: ModuleFacts) -> bool:
    """The lock's ``with`` is a statement of a job's own body (a function the module schedules or declares a
    task), and nothing after it but logging and a plain ``return``: it holds the job's whole work."""
    from ..project.reach import Reach

    scope, block = lock.scope, lock.in_with
    if scope is None or block is None or not any(statement is block for statement in scope.body):
        return False
    reason = Reach.of_module(facts).function_reason(scope) if Reach.of_module(facts).is_request_or_job(scope) else None
    if reason is None or "job" not in reason:
        return False
    after = scope.body[scope.body.index(block) + 1:]
    return all((isinstance(s, ast.Return) and (s.value is None or isinstance(s.value, ast.Constant)))
               or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and is_log_call(s.value))
               for s in after)


def _library_suggestion(lock: LibraryLock) -> str:
    by_library = {
        "redis-py": "pass `blocking=False` (or `blocking_timeout=0`) and return when `acquire()` is false",
        "python-redis-lock": "call `acquire(blocking=False)` and return when it is false",
        "pottery": "call `acquire(blocking=False)` (or `context_manager_blocking=False`) and return when it is false",
        "django-pglocks": "use `with advisory_lock(key, wait=False) as acquired:` and return when not `acquired`",
        "sqlalchemy-dlock": "call `acquire(block=False)` and return when it is false",
        "walrus": "call `acquire(block=False)` and return when it is false",
        "asyncpg-lock": "take `pg_try_advisory_lock` yourself and return when it is false",
        "portalocker": "pass `fail_when_locked=True` (or `timeout=0`) and return on `portalocker.AlreadyLocked`",
        "filelock": "pass `timeout=0` (or `acquire(blocking=False)`) and return on `filelock.Timeout`",
    }
    return (f"Skip instead of waiting: {by_library.get(lock.api.library, 'try the lock without waiting')}; for a "
            "periodic job, `claim_period(key, period)` (`from onceguard.guards import claim_period`) also stops a "
            "replica that arrives after the run has finished. Blocking locks belong in migration runners")


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
                if any(isinstance(n, ast.Name) and n.id in names for n in walk(node.value)):
                    return True
    return False


def _in_closing_block(use: LockUse) -> bool:
    handle = use.handle
    if handle is None or handle.origin is None or not isinstance(handle.origin, ast.withitem):
        return False
    return handle.closes_on_release or (handle.library, handle.how) in db.CLOSES_SESSION_ON_EXIT


#: Handlers that catch every error a job's work raises.
_CATCH_ALL = frozenset({"BaseException", "Exception"})


def _released_on_every_error(taken: ast.Call, releases: List[ast.Call]) -> bool:
    """A release in a handler that catches every error of the work after the acquire (``try: work() except
    BaseException: lock.release(); raise``): an exception gives the lock back; a success leaves it to its TTL,
    a lease kept for the period on purpose."""
    for release in releases:
        for above in ancestors(release):
            if isinstance(above, ast.ExceptHandler) and (
                    above.type is None or dotted(above.type) in _CATCH_ALL):
                handled = parent(above)
                if isinstance(handled, ast.Try) and handled.body and position(handled.body[0]) > position(taken):
                    return True
    return False


@register
class UnlockNotGuaranteed(Rule):
    code = "OG105"
    name = "unlock-not-guaranteed"
    summary = "session-level advisory lock whose unlock is missing or not in a finally block"
    triggers = known.TRIGGERS + lock_known.TRIGGERS

    @staticmethod
    def project_triggers(config) -> tuple:
        """A module that locks and unlocks only through the project's helpers (``db.take_job_lock(K)``)."""
        return helper_words(config)

    def check(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        yield from self._through_helpers(facts)
        yield from self._library_releases(facts)
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
                        f"`{function.name}` is taken through a pool and never released, so any replica that "
                        "tests this key later finds it taken until that connection dies.",
                        "Nothing reads its result, and the pooled connection that ran it goes back to the pool "
                        "still holding the lock. " + _lease_first(use, facts,
                                     "Take `pg_try_advisory_xact_lock` inside a transaction, test it, and let "
                                     "COMMIT/ROLLBACK release it; or hold one pinned connection and unlock in "
                                     "`finally:`"),
                    )
                continue  # otherwise OG101 says what is wrong with a lock taken through a pool
            unlocks = [u for u in uses if u.function.unlock and u.scope is use.scope
                       and (u.receiver_text == use.receiver_text or u.function.name == "pg_advisory_unlock_all")
                       and position(u.call) > position(use.call)]
            if unlocks:
                if release_guaranteed(use.call, [u.call for u in unlocks], use.scope, facts):
                    continue
                first = min(unlocks, key=lambda u: position(u.call))
                yield self.finding(
                    first.call,
                    f"`{first.function.name}` is not in a `finally:` block, so an exception after "
                    f"`{function.name}` (line {use.call.lineno}) leaves the lock held and stops the job on every "
                    "replica.",
                    "An exception in the work skips the unlock and the connection keeps the lock until it dies. "
                    + _lease_first(use, facts,
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
            helper_call = _release_helper_call(use, facts)
            if helper_call is not None:
                if not ModuleFacts.in_finally(helper_call, use.scope):
                    yield self.finding(
                        helper_call,
                        f"`{dotted(helper_call.func) or 'this call'}` unlocks outside a `finally:` block, so an "
                        f"exception after `{function.name}` (line {use.call.lineno}) leaves the lock held and stops "
                        "the job on every replica.",
                        "An exception in the work skips the unlock and the connection keeps the lock until it dies. "
                        + _lease_first(use, facts, "Call the release helper in `try: ... finally:`, or use "
                                                   "`pg_try_advisory_xact_lock` inside a transaction"),
                    )
                continue  # released by a project helper (in another module too) called in this function
            receiver = use.receiver_text
            if receiver and any(ModuleFacts.in_finally(c, use.scope)
                                for c in _calls_on(receiver.split(".")[0], ("close",), use.scope)):
                continue
            yield self.finding(
                use.call,
                f"`{function.name}` is never released in `{getattr(use.scope, 'name', 'this function')}`, so the "
                "next run on any replica finds the lock taken.",
                "The lock stays held by the connection (and by the pool that keeps it) after the work. "
                + _lease_first(use, facts,
                             "Release it with `pg_advisory_unlock` in `finally:` on the same connection, or use "
                             "`pg_try_advisory_xact_lock` inside a transaction"),
            )


    def _library_releases(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        """A lock library's lock taken with ``acquire()`` and given back with ``release()`` after work that can
        raise past it: the lock stays taken until its TTL ends (or for good without one)."""
        for lock in library_locks(facts) if spells_lock_library(facts) else ():
            taken, scope = lock.taken, lock.scope
            if lock.in_with is not None or scope is None or not (
                    isinstance(taken, ast.Call) and isinstance(taken.func, ast.Attribute)
                    and taken.func.attr == lock_known.ACQUIRE):
                continue
            if not lock.waits and answer_dropped(taken):
                continue  # tried and its answer dropped: OG106's finding, the lock may not even be this replica's
            receiver = dotted(taken.func.value)
            releases = [c for c in _calls_on(receiver, (_RELEASE,), scope) if position(c) > position(taken)] \
                if receiver else []
            if not releases or release_guaranteed(taken, releases, scope, facts) \
                    or _released_on_every_error(taken, releases):
                continue
            first = min(releases, key=position)
            yield self.finding(
                first,
                f"`{dotted(first.func)}()` is not in a `finally:` block, so an exception after the acquire (line "
                f"{taken.lineno}) leaves this {lock.api.library} lock taken and every replica skips or waits until "
                "it expires.",
                "An exception in the work skips the release. Put the work in `try:` and the release in `finally:`, "
                "or enter the lock with `with` (its exit releases it on any error)",
            )

    def _through_helpers(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        """A lock taken through a project helper (``db.try_advisory_lock(K)``, a method running the SQL) and
        released after the work, through a helper or by SQL, where an exception can skip the release."""
        for pair in helper_pairs(facts):
            if release_guaranteed(pair.lock, list(pair.releases), pair.scope, facts):
                continue
            release = min(pair.releases, key=position)
            role = pair.role
            shown = dotted(pair.lock.func) or "the helper"
            yield self.finding(
                release,
                f"`{dotted(release.func) if isinstance(release, ast.Call) else 'the unlock'}(...)` is not in a "
                f"`finally:` block, so an exception after `{shown}(...)` (line {pair.lock.lineno}) leaves the lock "
                "held and stops the job on every replica.",
                f"The helper `{shown}` takes the session-level `{role.advisory}`, which outlives any exception in the work: the "
                "unlock is skipped and the connection keeps the lock until it dies. Call the release in "
                "`try: ... finally:` on the same connection, or use `pg_try_advisory_xact_lock` inside a "
                "transaction, which is released at COMMIT/ROLLBACK",
                related=[Related(role.sql_facts.context.path, role.sql_call.lineno, role.sql_call.col_offset + 1,
                                 f"`{role.helper.name}` sends `{role.advisory}` here")],
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


def _release_helper_call(use: LockUse, facts: ModuleFacts) -> Optional[ast.Call]:
    """A call after the lock, in the same function, to a project function that unlocks and takes no lock of
    its own (``pglocks.release(conn, KEY)`` with ``release`` running ``pg_advisory_unlock``), handed the
    locking connection when it is handed a connection at all."""
    from ..project.summaries import resolve

    receiver = (use.receiver_text or "").split(".")[0]
    for node in walk_no_nested_functions(use.scope):
        if not isinstance(node, ast.Call) or position(node) <= position(use.call):
            continue
        names = {n.id for a in node.args for n in walk(a) if isinstance(n, ast.Name)}
        if receiver and names and receiver not in names and not isinstance(node.func, ast.Attribute):
            continue
        for target, target_facts in resolve(node, facts, use.scope, by_name=False):
            inside = [u for u in lock_uses(target_facts) if u.scope is target]
            if any(u.function.unlock for u in inside) and not any(u.function.is_lock for u in inside):
                return node
    return None


# -- try-lock results -------------------------------------------------------------------------------

#: A lock library's method that gives the lock back.
_RELEASE = "release"
