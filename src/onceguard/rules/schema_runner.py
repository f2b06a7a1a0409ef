"""OG403 unlocked migration runner: migrations applied without a blocking advisory lock held on the
same connection for the whole run (seed 000 "Migrations"; reference/frameworks.md §2.10, §4)."""
from __future__ import annotations

import ast
import os
from typing import Iterable, List, Set

from ..analysis.executed_sql import bound_value
from ..analysis.facts import ModuleFacts, ancestors, call_name, walk
from ..knowledge import databases as dbknown
from ..knowledge import schema as known
from ..model import Diagnostic, Related
from ..project.migration_locks import (
    DJANGO_CONNECTION, Apply, LockFinder, env_applications, handed_in_by_runner, shared_alembic_connections,
)
from ..project.migration_runners import env_evidence
from ..project import deployment
from ..project import index as project_index
from ..knowledge import deployment as deployment_known
from ..project.reach import Reach, enclosing_function, runs
from ..project.renamed_callers import project_callers
from ..project.schema_writes import SchemaWrite, describe_call, schema_writes
from .base import Rule
from .registry import register
from .schema import reported_schema_writes


# =====================================================================================================
# OG403
# =====================================================================================================
def _migration_applications(facts: ModuleFacts) -> List[Apply]:
    found: List[Apply] = []
    reported = {id(write.call) for write, _, _ in reported_schema_writes(facts)}
    # Alembic: command.upgrade with the runner's connection shared through config.attributes.
    shared = shared_alembic_connections(facts)
    for write in schema_writes(facts):
        if id(write.call) in reported or not write.applies_migrations:
            continue
        if write.framework == known.DJANGO:
            found.append(Apply(write.call, write.what, DJANGO_CONNECTION, known.DJANGO))
        elif write.framework == known.ALEMBIC:
            connection = shared.get(id(enclosing_function(write.call)))
            if connection is not None:
                found.append(Apply(write.call, write.what, connection, known.ALEMBIC))
    found.extend(env_applications(facts))
    # A hand-rolled runner executing .sql files (not a revision that the runner executes).
    revision = _is_revision_module(facts)
    for call in () if revision else facts.calls_named(*dbknown.SQL_METHODS):
        if not isinstance(call.func, ast.Attribute) or not call.args:
            continue
        if (facts.qualify(call.func.value) or "").startswith(("alembic.op", "alembic.context")):
            continue
        if not _reads_file(call.args[0], facts) or not _in_migration_code(call, facts):
            continue
        if id(call) in reported:
            continue
        found.append(Apply(call, f"`{describe_call(call)}` of a SQL file", call.func.value, known.RAW_SQL))
    return found


def _reported_by_og401(write: SchemaWrite, facts: ModuleFacts) -> bool:
    """OG401 reports this start-up upgrade, with the env.py it runs among its related places."""
    return any(reported.call is write.call for reported, _, _ in reported_schema_writes(facts))


def _is_revision_module(facts: ModuleFacts) -> bool:
    for statement in facts.tree.body:
        if isinstance(statement, ast.ClassDef) and statement.name in known.REVISION_CLASS_NAMES:
            return True
        if isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if any(isinstance(t, ast.Name) and t.id in known.REVISION_MODULE_NAMES for t in targets):
                return True
    return False


def _reads_file(node: ast.AST, facts: ModuleFacts) -> bool:
    if isinstance(node, ast.Name):
        value = bound_value(node, facts)
        if value is None:
            return False
        node = value
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and call_name(node) in known.FILE_READ_METHODS)


_DIRECTORY_LISTINGS = frozenset({"glob", "rglob", "iterdir", "listdir", "scandir", "walk"})


def _in_migration_code(node: ast.AST, facts: ModuleFacts) -> bool:
    """Migration code by where it lives, or by what it does: a loop over a directory listing that
    executes each file it reads is a runner, whatever its function is called."""
    if facts.context.is_migration:
        return True
    for above in ancestors(node):
        if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return False
        if isinstance(above, (ast.For, ast.AsyncFor)) and any(
                isinstance(n, ast.Call) and call_name(n) in _DIRECTORY_LISTINGS for n in walk(above.iter)):
            return True
    return False


def _left_to_operator(node: ast.AST, facts: ModuleFacts) -> bool:
    """Operator code that no replica runs: a script, a management or CLI command (as this module shows, or as
    its callers do: a function only a script's ``__main__`` block calls), reached from no start-up, request or
    job code, in a project whose deployment files say how replicas start and name none of it (nor any caller
    on the way to it) in a command every replica runs.  Started by a person, or by a once-per-deploy job (a
    Kubernetes Job, a release phase), it does not race itself."""
    if not facts.context.cross_file:
        return False
    where = runs(node, facts)
    if (Reach.of_module(facts).operator_reason(node) is None and not where.operator) or where.every_replica \
            or not deployment.replica_start_shown(facts):
        return False
    return not any(launch.per_replica for launch in deployment.launches_naming(facts, _names_on_the_way(node, facts)))


#: How many calls back the names a deployment command could use to start the code are gathered.
_MAX_NAME_HOPS = 4


def _names_on_the_way(node: ast.AST, facts: ModuleFacts) -> Set[str]:
    """The names a command line could use to reach ``node``: the file stems of its module and of its
    callers in the project (a few calls back), and the click/typer commands on the way (a plain function's
    name, ``main``, is no command a deployment file names)."""
    names: Set[str] = set()
    pending = [(node, facts, 0)]
    seen: Set[int] = set()
    while pending:
        current, where, hops = pending.pop()
        names.add(os.path.splitext(where.context.filename)[0])
        reach = Reach.of_module(where)
        function = enclosing_function(current)
        outermost = None
        while function is not None:
            if reach.is_command(function):
                names.add(function.name)
            outermost = function
            function = enclosing_function(function)
        if outermost is None or hops >= _MAX_NAME_HOPS or id(outermost) in seen:
            continue
        seen.add(id(outermost))
        for call, other in project_callers(outermost, where):
            if not other.context.is_test:
                pending.append((call, other, hops + 1))
    return names


@register
class UnlockedMigrationRunner(Rule):
    code = "OG403"
    name = "unlocked-migration-runner"
    summary = "Migrations applied without a blocking advisory lock held on the same connection for the whole run."
    triggers = known.OG403_TRIGGERS
    skips_tests = True

    def check(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        if facts.context.is_test:
            return
        yield from self._deployed_django_migrate(facts)
        applications = _migration_applications(facts)
        if not applications:
            return
        finder = LockFinder(facts)
        for apply in applications:
            if finder.held(apply):
                continue
            if not apply.what.startswith("context.") and _left_to_operator(apply.call, facts):
                continue
            related: List[Related] = []
            if apply.framework == known.ALEMBIC and apply.what.startswith("context."):
                # env.py is a hazard when every replica runs it.  One file (flake8), or a project that shows
                # no runner, or only an operator's (a command, a script, a Job, a release phase): silent.
                if not facts.context.cross_file:
                    continue
                own_branch = not handed_in_by_runner(apply.connection, facts) and (any(
                    handed_in_by_runner(other.connection, facts) for other in applications)
                    or finder.shared_by_a_caller(apply))
                evidence = env_evidence(facts, _reported_by_og401, past_handing_runners=own_branch)
                if evidence is None:
                    continue
                related = evidence
            detail = ("With transaction_per_migration=True an xact lock ends with the first migration's "
                      "transaction. " if apply.per_migration_transactions else "")
            what = apply.what if apply.framework == known.RAW_SQL else f"`{apply.what}`"
            # Who runs it in every replica (the entrypoint) is the first related place.
            message = (f"{what} applies migrations without a blocking advisory lock held for the whole run, so pods "
                       "starting together run the same migrations at once.")
            yield self.finding(apply.call, message, detail + self._suggestion(apply), related=related)

    def _deployed_django_migrate(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        """``python manage.py migrate`` in a container's start command (an entrypoint before gunicorn): every
        replica runs Django's migrate, which takes no lock, unless the project's own ``migrate`` command (one
        that overrides Django's) does.  Reported at ``manage.py``'s ``execute_from_command_line``."""
        if facts.context.filename not in deployment_known.DJANGO_MANAGE_SCRIPTS or not facts.context.cross_file:
            return
        runs = [c for c in facts.calls_named("execute_from_command_line")
                if (facts.callee(c) or "").startswith("django.")]
        if not runs:
            return
        root = deployment.project_directory(facts.context.path, facts.config, project_index.search_root(facts))
        steps = [s for s in deployment.steps(facts.config, root)
                 if s.kind == deployment.DJANGO_MIGRATE and s.launch.per_replica
                 and any(os.path.basename(w) in deployment_known.DJANGO_MANAGE_SCRIPTS for w in s.launch.words)]
        if not steps or _overrides_migrate(root):
            return
        step = steps[0]
        yield self.finding(
            runs[0],
            f"{step.describe()}, and Django's `migrate` takes no lock, so pods starting together run the same "
            "migrations at once.",
            "Run migrations once per deploy instead (a Kubernetes Job or init container of one pod, a release "
            "phase, a one-off compose service the app waits for); or override `migrate` with a command that "
            "takes `SELECT pg_advisory_lock(<service key>)` through `django.db.connection` and unlocks in "
            "`finally` around Django's own.",
            related=[Related(step.launch.path, step.launch.line, 1, "this command migrates in every replica")],
        )

    @staticmethod
    def _suggestion(apply: Apply) -> str:
        if apply.framework == known.DJANGO:
            return ("Before `call_command(\"migrate\")`, run `SELECT pg_advisory_lock(<service key>)` with "
                    "`django.db.connection.cursor()` in the same thread and unlock in `finally`.")
        if apply.framework == known.ALEMBIC and not apply.what.startswith("context."):
            return ("Before `command.upgrade`, run `SELECT pg_advisory_lock(<service key>)` on the connection "
                    "handed to env.py in `config.attributes[\"connection\"]` and commit, then "
                    "`pg_advisory_unlock` in `finally` after the run.")
        if apply.framework == known.ALEMBIC:
            return ("On the connection passed to `context.configure`, run `SELECT pg_advisory_lock(<service key>)` "
                    "and commit before `context.run_migrations()`, and `pg_advisory_unlock` in `finally` "
                    "(or `pg_advisory_xact_lock` as the first statement inside `context.begin_transaction()`).")
        return ("Take `SELECT pg_advisory_lock(<service key>)` on this connection before the first migration "
                "and release it in `finally` after the last.")


def _overrides_migrate(root: str) -> bool:
    """The project has its own ``management/commands/migrate.py`` (which replaces Django's, and may lock)."""
    return any(path.replace(os.sep, "/").endswith("/management/commands/migrate.py")
               for path in project_index.project_files(root))
