"""OG402 migration through the pooler: migration code that connects through PgBouncer or with the app's
pooled URL (seed 000 "Migrations"; reference/frameworks.md §4)."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterable, Iterator, List, Optional, Set, Tuple

from ..analysis.executed_sql import bound_value, sql_text
from ..analysis.facts import ModuleFacts, position, walk_no_nested_functions
from ..knowledge import schema as known
from ..model import Diagnostic
from ..project import index as project
from ..project.definitions import top_level
from ..project.poolers import host_or_port, pooled_everywhere, pooled_variable, pooler_sign
from ..project.process_values import deployed_default
from ..project.settings_objects import EnvironmentField, derived_setting
from .base import Rule
from .registry import register


# =====================================================================================================
# OG402
# =====================================================================================================
def _env_name(node: ast.AST, facts: ModuleFacts) -> Optional[str]:
    """``X`` of ``os.environ["X"]``, ``os.environ.get("X")``, ``os.getenv("X")``."""
    if isinstance(node, ast.Subscript) and (facts.qualify(node.value) or "") in known.ENV_MAPPINGS:
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return key.value
    if isinstance(node, ast.Call) and (facts.callee(node) or "") in known.ENV_GETTERS and node.args:
        key = node.args[0]
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return key.value
    return None


def _looks_like_db_url_variable(name: str) -> bool:
    upper = name.upper()
    return upper.endswith(known.DB_URL_ENV_SUFFIXES) and any(word in upper for word in known.DB_URL_ENV_WORDS)


def _read_from_configuration(expr: ast.AST, facts: ModuleFacts) -> bool:
    """The DSN is an attribute or an entry of the app's configuration (``settings.database_url``,
    ``app.config["SQLALCHEMY_DATABASE_URI"]``), also through a name bound to one; not a parameter, whose value
    its callers give."""
    node = expr
    for _ in range(6):
        if not isinstance(node, ast.Name):
            break
        node = bound_value(node, facts)
        if node is None:
            return False
    return isinstance(node, (ast.Attribute, ast.Subscript)) and _env_name(node, facts) is None


@dataclass(frozen=True)
class _DsnParts:
    texts: Tuple[Tuple[ast.AST, str], ...]  # (node, text) of every string that makes up the DSN
    env: Tuple[Tuple[ast.AST, str], ...]  # (node, variable) of every environment read


def _dsn_parts(expr: ast.AST, facts: ModuleFacts) -> _DsnParts:
    """The strings and environment reads a DSN is made of, followed through names, a function of the project
    that returns it (``_database_url()``) and the field of a settings object the project makes
    (``settings.load().database_url`` built from ``os.environ["DATABASE_URL"]``), into other modules too."""
    texts: List[Tuple[ast.AST, str]] = []
    env: List[Tuple[ast.AST, str]] = []
    seen: Set[int] = set()
    stack: List[Tuple[ast.AST, int, ModuleFacts]] = [(expr, 0, facts)]
    while stack:
        node, depth, where = stack.pop()
        if id(node) in seen or depth > 6:
            continue
        seen.add(id(node))
        variable = _env_name(node, where)
        if variable is not None:
            env.append((node, variable))
            # the default of ``os.getenv("X", "postgresql://...")``, unless the deployment sets X: never used there
            if isinstance(node, ast.Call) and deployed_default(node, where) is None:
                stack.extend((argument, depth + 1, where) for argument in node.args[1:])
            continue
        if isinstance(node, (ast.JoinedStr, ast.BinOp, ast.Constant)):
            whole = sql_text(node, where)
            if whole is not None:
                texts.append((node, whole[0]))
        if isinstance(node, ast.Name):
            value = bound_value(node, where)
            if value is not None:
                stack.append((value, depth + 1, where))
            elif where.context.cross_file and where.imports.is_imported(node.id):
                # ``from app.settings import DATABASE_URL``: what the other module binds it to
                qualified = where.qualify(node) or ""
                found = project.find_assignment(qualified, where.config, project.roots_for(where)) \
                    if "." in qualified else None
                if found is not None:
                    stack.append((found[0], depth + 1, found[1]))
            continue
        if isinstance(node, ast.Constant):
            continue
        if isinstance(node, ast.Attribute):
            derived = derived_setting(node, where, bound_value)
            if isinstance(derived, tuple):
                stack.append((derived[0], depth + 1, derived[1]))
                continue
            if isinstance(derived, EnvironmentField):
                env.append((node, derived.variable))  # a settings class's field: read from its variable
                continue
        if isinstance(node, ast.Call) and not node.args and not node.keywords:
            returned = _returned_by(node, where)
            if returned is not None:
                stack.append((returned, depth + 1, where))
                continue
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                stack.append((child, depth + 1, where))
    return _DsnParts(tuple(texts), tuple(env))


def _returned_by(call: ast.Call, facts: ModuleFacts) -> Optional[ast.AST]:
    """What a function of this module called without arguments returns, when it has one ``return``."""
    if not isinstance(call.func, ast.Name):
        return None
    function = top_level(facts, call.func.id)
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    returns = [n for n in walk_no_nested_functions(function) if isinstance(n, ast.Return) and n.value is not None]
    return returns[0].value if len(returns) == 1 else None


def _dsn_sinks(facts: ModuleFacts) -> Iterator[Tuple[ast.Call, ast.AST]]:
    """(call, DSN expression) for every connection opened from a DSN, and env.py's ``sqlalchemy.url``."""
    names = {name.rsplit(".", 1)[-1] for name in known.CONNECT_CALLS}
    for call in facts.calls_named(*sorted(names)):
        callee = facts.callee(call) or ""
        if callee not in known.CONNECT_CALLS:
            continue
        position = known.CONNECT_CALLS[callee]
        if position >= 0 and len(call.args) > position and not isinstance(call.args[position], ast.Starred):
            yield call, call.args[position]
        for keyword in call.keywords:
            if keyword.arg in known.DSN_KEYWORDS:
                yield call, keyword.value
    for call in facts.calls_named(known.SET_MAIN_OPTION):
        if (len(call.args) >= 2 and isinstance(call.args[0], ast.Constant)
                and call.args[0].value in known.ALEMBIC_URL_OPTIONS):
            yield call, call.args[1]
    for call in facts.calls_named("create"):
        if (facts.callee(call) or "") in known.URL_CREATE:
            for keyword in call.keywords:
                if keyword.arg in ("host", "port"):
                    yield call, keyword.value


@register
class MigrationThroughPooler(Rule):
    code = "OG402"
    name = "migration-through-pooler"
    summary = "Migration code connects through PgBouncer or with the app's pooled URL instead of a direct URL."
    triggers = known.OG402_TRIGGERS
    skips_tests = True
    only_in_migration_code = True

    def check(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        context = facts.context
        if not context.is_migration or context.is_test:
            return
        direct = facts.config.migrate_url_env
        reported: Set[int] = set()
        for call, expr in sorted(_dsn_sinks(facts), key=lambda sink: position(sink[1])):
            parts = _dsn_parts(expr, facts)
            evidence = self._evidence(parts, call, expr, direct, facts)
            if evidence is None:
                continue
            origin, description = evidence
            if id(origin) in reported:
                continue
            reported.add(id(origin))
            description, note = description if isinstance(description, tuple) else (description, "")
            message = (f"Migration code connects with {description}, so the pooler can drop the migration lock and "
                       "pods run migrations concurrently.")
            variable = direct or "POSTGRES_MIGRATE_URL"
            suggestion = (
                f"{note}Through the pooler, the migration lock and the DDL transactions can land on different "
                "server connections, and the pooler's reset drops the lock. "
                f"Connect migrations with the direct URL ({variable}: PostgreSQL's own host and port 5432, "
                "never PgBouncer), and keep the pooled URL for the app."
            )
            yield self.finding(expr, message, suggestion)

    @staticmethod
    def _evidence(parts: _DsnParts, call: ast.Call, expr: ast.AST, direct: str,
                  facts: ModuleFacts) -> Optional[Tuple[ast.AST, object]]:
        """Where the DSN shows the pooler, and how: a phrase for the message, or (phrase, a note for the help)."""
        if (facts.callee(call) or "") in known.URL_CREATE:
            keyword = next(k for k in call.keywords if k.value is expr)
            for node, text in parts.texts:
                if keyword.arg == "host" and host_or_port(text, None):
                    return node, f"host={text!r}, a pooler host"
            if keyword.arg == "port" and isinstance(expr, ast.Constant) and expr.value in known.PGBOUNCER_PORTS:
                return expr, f"port={expr.value}, PgBouncer's port"
            return None
        for node, text in parts.texts:
            sign = pooler_sign(text)
            if sign:
                return node, f"a DSN that goes through the pooler ({sign})"
        for node, name in parts.env:
            if any(word in name.lower() for word in known.POOLER_HOST_WORDS):
                return node, f"{name}, a URL named for the pooler"
            shown = pooled_variable(name, facts)
            if shown is not None:  # the deployment sets it, whatever default the code gives
                return node, (f"{name}, which the deployment sets to a pooled URL",
                              f"{shown.describe(facts.config.root)}. ")
        if not parts.texts and not parts.env and _read_from_configuration(expr, facts):
            # A value the code does not show (``settings.database_url``): every URL the project shows is pooled.
            shown = pooled_everywhere(facts)
            if shown is not None:
                return expr, ("the app's database URL, which goes through the pooler",
                              f"Every PostgreSQL URL the project shows is pooled: {shown.describe(facts.config.root)}. ")
        if direct and parts.env and all(name != direct for _, name in parts.env):
            for node, name in parts.env:
                if _looks_like_db_url_variable(name):
                    return node, (f"{name} instead of the direct URL {direct}",
                                  f"The project configures {direct} as the direct URL, so {name} is taken to be the "
                                  "app's pooled URL. ")
        return None

