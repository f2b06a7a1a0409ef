"""Schema and migrations: OG401 in-app schema creation (seed 000 "Migrations"; reference/frameworks.md
§2.10, §4).  OG402 lives in ``schema_pooler``, OG403 in ``schema_runner``.

The seed's rule: one migrate entrypoint, run before the server starts, connected directly to
PostgreSQL, holding ``pg_advisory_lock(<service key>)`` on one pinned connection for the whole run,
and no second path that writes schema.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterable, List, Optional, Tuple

from ..analysis.facts import ModuleFacts, ancestors
from ..knowledge import schema as known
from ..model import Diagnostic, Related
from ..project import index as project_index
from ..project.migration_locks import (
    DJANGO_CONNECTION, Apply, LockFinder, env_applications, env_runs_locked, shared_alembic_connections)
from ..project.migration_runners import env_of_runner
from ..project.reach import Reach, Runs, enclosing_function, place, runs
from ..project.renamed_callers import project_callers
from ..project.schema_writes import (SchemaWrite, is_lock_helper, removes_or_restores, schema_of_its_own,
                                     schema_writes)
from .base import Rule
from .registry import register


def reported_schema_writes(facts: ModuleFacts) -> List[Tuple[SchemaWrite, str, Tuple[Related, ...]]]:
    """The schema writes OG401 reports, with the reason they run on every replica and, when that is shown
    by another module, the way from there (entry point first)."""

    def build(_facts: ModuleFacts) -> List[Tuple[SchemaWrite, str, Tuple[Related, ...]]]:
        context = facts.context
        writes = schema_writes(facts)
        if context.is_test or context.is_migration or not writes:
            return []
        reach = Reach.of_module(facts)
        reported = []
        for write in writes:
            if _under_lock_helper(write.call) or _only_called_under_lock_helpers(write.call, facts):
                continue  # serialized by the project's own lock: the later replicas find the schema there
            if _ddl_locked(write, facts):
                continue  # sent on a connection holding a blocking advisory lock: replicas queue for it
            reason = reach.reason(write.call)
            function = enclosing_function(write.call)
            # Schema a queued task writes is written once per enqueue, by one worker, not by every booting
            # replica; so is a drop or a restore a request or a job asks for, or a schema of its own it makes.
            asked_once = removes_or_restores(write) or schema_of_its_own(write, facts)
            if (reason is not None and function is not None and reach.is_request_or_job(function)
                    and (reach.on_demand(function) or asked_once)):
                reason = None
            related: Tuple[Related, ...] = ()
            if reason is None and write.registers_hook:
                reason = "registered as a start-up hook of the app"
            if reason is None and context.cross_file:
                # Migration code is where schema writes belong: a way through it is the migrate entrypoint's.
                # (past a gate no service the deployment starts passes: ``if options.apply_schema:``, set off)
                answer = runs(write.call, facts, through_migration_code=False, max_hops=_MAX_CALLER_HOPS,
                              past_refused_gates=True)
                if answer.every_replica and answer.calls and (
                        answer.on_demand or asked_once) and not runs(
                        write.call, facts, startup_only=True, through_migration_code=False,
                        max_hops=_MAX_CALLER_HOPS, past_refused_gates=True).every_replica:
                    answer = _UNKNOWN_RUNS  # (reached from a request or a job only)
                if answer.every_replica and answer.calls:
                    reason = f"reached from another module: {answer.reason}"
                    related = answer.via
            if reason is None:
                continue
            runner = _migration_runner(write, facts)
            if runner is not None and runner.locked:
                continue  # the env.py it runs holds the lock: replicas queue and the later ones find head
            if runner is not None and runner.env is not None:
                related = tuple(related) + (runner.env,)
            reported.append((write, reason, related))
        return reported

    return facts.cached("schema:reported", build)


def _ddl_locked(write: SchemaWrite, facts: ModuleFacts) -> bool:
    """DDL sent on a connection that holds a blocking advisory lock taken before it (and not released in
    between), in its function or in every caller: the later replicas wait, then find the schema there.  Raw
    DDL goes through its receiver; ``metadata.create_all`` through the connection it is bound to
    (``create_all(conn)``, ``create_all(bind=conn)``) or run on (``conn.run_sync(metadata.create_all)``)."""
    connection = _ddl_connection(write)
    if connection is None and write.applies_migrations and write.framework == known.DJANGO:
        # ``call_command("migrate")`` runs on the thread's ``django.db.connection``: a session lock taken on it
        # before (a cursor closed in between leaves the connection, and the lock, open) holds for the run
        connection = DJANGO_CONNECTION
    if connection is None:
        return False
    finder = facts.cached("schema:lock-finder", LockFinder)
    return finder.held(Apply(write.call, write.what, connection, write.framework, seen_only=True))


def _ddl_connection(write: SchemaWrite) -> Optional[ast.AST]:
    call = write.call
    func = call.func
    if write.framework == known.RAW_SQL:
        return func.value if isinstance(func, ast.Attribute) else None
    if write.applies_migrations or not isinstance(func, ast.Attribute):
        return None
    if func.attr in _CONNECTION_RUNNERS and call.args:
        return func.value
    if write.framework == known.PEEWEE:
        return func.value  # ``db.create_tables([...])``: on the database object's own connection
    bound = next((k.value for k in call.keywords if k.arg == "bind"), call.args[0] if call.args else None)
    return bound if isinstance(bound, (ast.Name, ast.Attribute)) else None


#: Methods of a connection that run the callable they are handed with themselves (SQLAlchemy's async
#: ``AsyncConnection.run_sync``).
_CONNECTION_RUNNERS = frozenset({"run_sync"})


@dataclass(frozen=True)
class _Runner:
    locked: bool
    env: Optional[Related]  # the env.py's unlocked ``context.run_migrations()``, when there is one


def _migration_runner(write: SchemaWrite, facts: ModuleFacts) -> Optional[_Runner]:
    """For an Alembic upgrade: whether the run holds a blocking advisory lock, on the connection handed to
    env.py by this runner or in the env.py it runs, and that env.py's unlocked run; None when unknown."""
    if not write.applies_migrations or write.framework not in (known.ALEMBIC, known.FLASK_MIGRATE):
        return None
    connection = shared_alembic_connections(facts).get(id(enclosing_function(write.call)))
    if connection is not None and LockFinder(facts).held(Apply(write.call, write.what, connection, known.ALEMBIC)):
        return _Runner(True, None)
    path = env_of_runner(write.call, facts)
    env = project_index.module_facts(path, facts.config) if path is not None else None
    if env is None:
        return None
    runs_locked = env_runs_locked(env)
    if runs_locked is None:
        return None
    if runs_locked:
        return _Runner(True, None)
    first = env_applications(env)[0].call
    where = facts.config.relative(path) if facts.config.root else path
    return _Runner(False, place(env, first, f"{where or path} runs the migrations with no advisory lock held"))


_UNKNOWN_RUNS = Runs()

#: How many calls away (through other modules) OG401 looks for code every replica runs.
_MAX_CALLER_HOPS = 5


#: Calls followed back from a schema write to find the lock its callers hold around it.
_MAX_LOCK_HOPS = 3


def _only_called_under_lock_helpers(node: ast.AST, facts: ModuleFacts, hops: int = 0) -> bool:
    """Every call of the function around ``node`` -- in the project, a few calls back -- is inside a lock
    helper's ``with`` (``with migration_lock(url): self.init_schema(cfg)``): the lock is held for the write
    whichever way it is reached.  A function nothing is seen calling is not shown to be locked."""
    function = enclosing_function(node)
    if function is None or hops >= _MAX_LOCK_HOPS:
        return False
    sites = [(call, where) for call, where in project_callers(function, facts)
             if not where.context.is_test and not any(above is function for above in ancestors(call))]
    return bool(sites) and all(_under_lock_helper(call) or _only_called_under_lock_helpers(call, where, hops + 1)
                               for call, where in sites)


def _under_lock_helper(node: ast.AST) -> bool:
    """Inside ``with migration_lock(...):`` (a helper whose name says it locks, as OG403 trusts it)."""
    for above in ancestors(node):
        if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return False
        if isinstance(above, (ast.With, ast.AsyncWith)) and any(
                is_lock_helper(item.context_expr) for item in above.items):
            return True
    return False


# =====================================================================================================
# OG401
# =====================================================================================================
@register
class InAppSchemaCreation(Rule):
    code = "OG401"
    name = "in-app-schema-creation"
    summary = "Schema created or migrated from application start-up, request or job code: every replica runs the DDL."
    triggers = known.OG401_TRIGGERS
    skips_tests = True
    skips_migration_code = True

    def check(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        # One root cause, one finding: the writes of one function reached the same way from another module
        # are one finding at the first, the others among its related places.
        grouped: dict = {}
        for write, reason, related in reported_schema_writes(facts):
            key = (id(enclosing_function(write.call)), reason, related) if related else (id(write.call),)
            grouped.setdefault(key, []).append((write, reason, related))
        for group in grouped.values():
            group.sort(key=lambda item: (getattr(item[0].node, "lineno", 0), getattr(item[0].node, "col_offset", 0)))
            write, reason, related = group[0]
            related = tuple(related) + tuple(
                place(facts, other.node, f"also writes schema: {other.what}") for other, _, _ in group[1:])
            what = write.what if write.framework == known.RAW_SQL or write.quoted else f"`{write.what}`"
            message = f"{what} writes schema in every replica ({reason}), so booting replicas race the same DDL."
            suggestion = ("Racing DDL fails on duplicate objects or leaves a half-applied schema. "
                          + known.ENTRYPOINT_ADVICE[write.framework])
            yield self.finding(write.node, message, suggestion, related=related)

