"""Who runs an Alembic ``env.py``: start-up code that reaches a ``command.upgrade`` of its directory, or a
deployment file that runs the upgrade in every replica (OG403 reports an unlocked env.py only then)."""
from __future__ import annotations

import ast
import os
from typing import Callable, Iterator, List, Optional, Tuple

from ..analysis.executed_sql import bound_value
from ..analysis.facts import ModuleFacts, call_name, position
from ..analysis.names import dotted
from ..knowledge import schema as known
from ..model import Related
from . import deployment, migration_locations
from . import index as project_index
from .migration_locks import shared_alembic_connections
from .reach import enclosing_function, place, runs
from .schema_writes import SchemaWrite, keyword_of, removes_or_restores, schema_writes


# =====================================================================================================
# OG403 on env.py: who runs it
# =====================================================================================================
_MAX_RUNNER_DEPTH = 4
_MAX_RUNNER_FILES = 200


def _where(facts: ModuleFacts) -> str:
    return facts.context.rel_path or facts.context.path


def _apply_location(call: ast.Call, facts: ModuleFacts) -> migration_locations.MigrationsLocation:
    """The migrations directory (the env.py's) that ``command.upgrade(cfg, ...)`` / Flask-Migrate
    ``upgrade()`` runs, as far as the code fixes it."""
    callee = facts.callee(call) or ""
    near = _directory_of(facts)
    if callee.startswith("flask_migrate."):
        directory = keyword_of(call, "directory")
        expr = directory.value if directory is not None else (call.args[0] if call.args else None)
        if expr is None:
            return migration_locations.MigrationsLocation(known.FLASK_MIGRATE_DIRECTORY, True, "Flask-Migrate's default")
        return _location_of_text(migration_locations.static_path(expr, facts), near, "upgrade(directory=...)")
    config_keyword = keyword_of(call, "config")
    cfg = call.args[0] if call.args else (config_keyword.value if config_keyword is not None else None)
    if cfg is None:
        return migration_locations.MigrationsLocation(None)
    ini_directory = ""
    constructor = cfg if isinstance(cfg, ast.Call) else (bound_value(cfg, facts) if isinstance(cfg, ast.Name) else None)
    ini_files: List[str] = []
    if isinstance(constructor, ast.Call) and (call_name(constructor) or "").endswith("Config"):
        file_keyword = keyword_of(constructor, "file_")
        ini_expr = constructor.args[0] if constructor.args else (file_keyword.value if file_keyword else None)
        ini_text = migration_locations.static_path(ini_expr, facts) if ini_expr is not None else None
        if ini_text:
            ini_files = [ini_text] if os.path.isabs(ini_text) and os.path.isfile(ini_text) else \
                migration_locations.ini_files_for(ini_text, near)
            if ini_files:
                ini_directory = os.path.dirname(ini_files[0])
    # ``cfg.set_main_option("script_location", ...)`` on the same config wins over the .ini.
    receiver = dotted(cfg) if isinstance(cfg, (ast.Name, ast.Attribute)) else None
    if receiver:
        function = enclosing_function(call)
        for option in facts.calls_named(known.SET_MAIN_OPTION):
            if (enclosing_function(option) is function and isinstance(option.func, ast.Attribute)
                    and dotted(option.func.value) == receiver and len(option.args) >= 2
                    and isinstance(option.args[0], ast.Constant)
                    and option.args[0].value == known.SCRIPT_LOCATION_OPTION
                    and position(option) < position(call)):
                text = migration_locations.static_path(option.args[1], facts)
                if text is not None and ini_directory:
                    text = text.replace("%(here)s", ini_directory)
                return _location_of_text(text, near, "set_main_option(\"script_location\", ...)", facts)
    for ini in ini_files:
        project_index.record_dependency(ini)
        location = migration_locations.script_location_of_ini(ini, facts.config)
        if location.path is not None:
            return location
    return migration_locations.MigrationsLocation(None)


def _directory_of(facts: ModuleFacts) -> str:
    return os.path.dirname(os.path.abspath(facts.context.path)) if facts.context.path else ""


def _location_of_text(text: Optional[str], near: str, how: str,
                      facts: Optional[ModuleFacts] = None) -> migration_locations.MigrationsLocation:
    if text is None:
        return migration_locations.MigrationsLocation(None)
    if ":" in text and not os.path.isabs(text) and facts is not None:
        return migration_locations.location_from_text(text, near, facts.config, how)
    return migration_locations.MigrationsLocation(text, not os.path.isabs(text), how)


def _runner_root(facts: ModuleFacts) -> str:
    """Where the runners of an env.py are looked for: the project (or service) directory above it."""
    return facts.cached("schema:runner-root", lambda f: deployment.project_directory(
        f.context.path, f.config, project_index.search_root(f)))


def _alembic_env_files(facts: ModuleFacts) -> List[str]:
    """The project's Alembic environments: files that call ``context.run_migrations``, one per directory."""
    root = _runner_root(facts)
    found: List[str] = []
    directories: List[str] = []
    for path in project_index.files_mentioning("run_migrations", root):
        source = project_index.read_bytes(path)
        if b"alembic" in source and b"context" in source and b"configure" in source:
            directory = os.path.dirname(os.path.abspath(path))
            if directory not in directories:
                directories.append(directory)
                found.append(path)
    return found


def _alembic_envs(facts: ModuleFacts) -> List[str]:
    """Directories of the project's Alembic environments."""
    return [os.path.dirname(os.path.abspath(path)) for path in _alembic_env_files(facts)]


def env_of_runner(call: ast.Call, facts: ModuleFacts) -> Optional[str]:
    """The env.py that ``command.upgrade(cfg, ...)`` / Flask-Migrate ``upgrade()`` at ``call`` runs, when the
    code and the project fix it (the command line only)."""
    if not facts.context.cross_file:
        return None
    files = _alembic_env_files(facts)
    location = _apply_location(call, facts)
    near = _directory_of(facts)
    for path in files:
        if _runs_this_env(location, os.path.dirname(os.path.abspath(path)), near, len(files) <= 1):
            return path
    return None


def _runs_this_env(location: migration_locations.MigrationsLocation, env_directory: str, near: str,
                   only_env: bool) -> bool:
    if location.path is None:
        return only_env  # the code does not fix it, and the project has one Alembic environment: this one
    return location.matches(env_directory, near)


def _runner_calls(facts: ModuleFacts) -> Iterator[Tuple[SchemaWrite, ModuleFacts]]:
    """Every ``command.upgrade`` / Flask-Migrate ``upgrade()`` in the project (tests left out)."""
    root = _runner_root(facts)
    paths: List[str] = []
    for word in ("alembic", "flask_migrate"):
        for path in project_index.files_mentioning(word, root):
            if path not in paths:
                paths.append(path)
    looked = 0
    for path in paths:
        source = project_index.read_bytes(path)
        if b"upgrade" not in source and b"downgrade" not in source:
            continue
        if b"command" not in source and b"flask_migrate" not in source:
            continue
        looked += 1
        if looked > _MAX_RUNNER_FILES:
            return
        other = facts if os.path.abspath(path) == os.path.abspath(facts.context.path) else \
            project_index.module_facts(path, facts.config)
        if other is None or other.context.is_test:
            continue
        for write in schema_writes(other):
            if write.applies_migrations and write.framework in (known.ALEMBIC, known.FLASK_MIGRATE):
                yield write, other


def env_evidence(facts: ModuleFacts, reported_at_runner: Callable[[SchemaWrite, ModuleFacts], bool],
                 past_handing_runners: bool = False) -> Optional[List[Related]]:
    """Why every replica runs this env.py, as the places on the way (entry point first), or None: start-up
    code reaches a ``command.upgrade`` of this directory, or a deployment file runs the upgrade in every
    replica.  Operator paths (commands, scripts, a Job, a release phase) are no evidence.

    With ``past_handing_runners`` (asked for the branch of env.py that opens its own connection, when another
    branch takes ``config.attributes["connection"]``), a runner that hands env.py its connection is no
    evidence: env.py runs its other branch for it, and OG403 judges that runner's lock."""

    def build(_facts: ModuleFacts) -> Optional[List[Related]]:
        env_directory = _directory_of(facts)
        envs = _alembic_envs(facts)
        only_env = len(envs) <= 1
        for write, other in _runner_calls(facts):
            location = _apply_location(write.call, other)
            if not _runs_this_env(location, env_directory, _directory_of(other), only_env):
                continue
            if reported_at_runner(write, other):
                continue  # one root cause, one finding: the runner's report names this env.py
            if removes_or_restores(write):
                continue  # (a restore a request asks for: not reported at the runner, not every replica's run)
            runner = other.enclosing_function(write.call)
            if past_handing_runners and runner is not None and id(runner) in shared_alembic_connections(other):
                continue
            chain = _replica_chain(write.call, other)
            if chain is not None:
                return chain + [place(other, write.call, f"`{write.what}` runs the migrations in "
                                                          f"{_relative_directory(facts, env_directory)}")]
        for step in deployment.steps(facts.config, _runner_root(facts)):
            if not step.launch.per_replica:
                continue
            if step.kind == deployment.ALEMBIC_UPGRADE:
                locations = [migration_locations.script_location_of_ini(ini, facts.config) for ini in step.files]
                if not any(loc.path for loc in locations):
                    locations = [migration_locations.MigrationsLocation(None)]
                near = step.launch.directory
            elif step.kind == deployment.FLASK_DB_UPGRADE:
                locations = [migration_locations.MigrationsLocation(step.target, not os.path.isabs(step.target))]
                near = step.launch.directory
            else:
                continue
            if any(_runs_this_env(loc, env_directory, near, only_env) for loc in locations):
                return [Related(step.launch.path, step.launch.line, 1, step.describe())]
        return None

    return facts.cached(f"schema:env-evidence:{past_handing_runners}", build)


def _relative_directory(facts: ModuleFacts, directory: str) -> str:
    relative = facts.config.relative(directory) if facts.config.root else directory
    return (relative or directory).rstrip("/") + "/"


def _replica_chain(call: ast.AST, facts: ModuleFacts) -> Optional[List[Related]]:
    """The places from an entry point every replica runs (start-up code, a request handler or job, a
    program a deployment file runs in every replica) to ``call``, ``call`` itself left out; None when only
    operator paths (commands, scripts, tests) or nothing reach it."""
    answer = runs(call, facts, max_hops=_MAX_RUNNER_DEPTH, past_refused_gates=True)
    return list(answer.via) if answer.every_replica else None
