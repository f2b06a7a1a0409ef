"""Schema and migrations: OG401 in-app schema creation, OG402 migration through the pooler,
OG403 unlocked migration runner (seed 000 "Migrations"; reference/frameworks.md §2.10, §4).

The seed's rule: one migrate entrypoint, run before the server starts, connected directly to
PostgreSQL, holding ``pg_advisory_lock(<service key>)`` on one pinned connection for the whole run,
and no second path that writes schema.
"""
from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from typing import Dict, Iterable, Iterator, List, Optional, Set, Tuple
from urllib.parse import parse_qsl, urlsplit

from ..analysis.executed_sql import ExecutedSql, bound_value, executed_sql, sql_text
from ..analysis.facts import FunctionNode, ModuleFacts, ancestors, call_name, position, walk_no_nested_functions
from ..analysis.handles import Handles
from ..knowledge import databases as dbknown
from ..knowledge import schema as known
from ..model import Diagnostic
from ..analysis.names import dotted
from .registry import register
from ..analysis.sql import is_ddl, parse_statements, tokens
from ..model import Related
from ..project import deployment
from ..project import index as project_index
from ..project.reach import Reach, enclosing_function, place, runs
from .base import Rule


# =====================================================================================================
# Shared facts
# =====================================================================================================
def _imports_module(facts: ModuleFacts, prefixes: Iterable[str]) -> bool:
    targets = tuple(prefixes)
    return any(
        value == prefix or value.startswith(prefix + ".")
        for value in facts.imports.aliases.values() for prefix in targets
    )


# -- schema writes ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SchemaWrite:
    node: ast.AST  # where to report
    call: ast.Call
    what: str  # "Base.metadata.create_all()", "call_command(\"migrate\")", "CREATE TABLE"
    framework: str
    registers_hook: bool = False  # register_tortoise(generate_schemas=True): start-up wherever it is called
    applies_migrations: bool = False  # alembic upgrade / Django migrate: OG403 checks these too
    quoted: bool = False  # ``what`` already marks its code (a command line run by a call)


def _describe_call(call: ast.Call) -> str:
    return f"{dotted(call.func) or call_name(call) or 'call'}()"


def _bound_call(node: ast.AST, facts: ModuleFacts) -> Optional[ast.Call]:
    if isinstance(node, ast.Name):
        value = bound_value(node, facts)
        if isinstance(value, ast.Call):
            return value
    return None


def _metadata_framework(receiver: ast.AST, facts: ModuleFacts) -> Optional[str]:
    """The framework whose MetaData (or Flask-SQLAlchemy ``db``) ``receiver`` is, or None."""
    name = dotted(receiver) or ""
    last = name.rsplit(".", 1)[-1]
    qualified = facts.qualify(receiver) or ""
    if last in known.METADATA_RECEIVER_NAMES:
        if qualified.startswith("sqlmodel."):
            return known.SQLMODEL
        if last == "gino":
            return known.GINO
        return known.SQLALCHEMY
    if qualified in known.METADATA_CONSTRUCTORS:
        return None  # the class itself
    value = _bound_call(receiver, facts)
    if value is not None:
        return known.METADATA_CONSTRUCTORS.get(facts.callee(value) or "")
    handle = Handles.of_module(facts).of(receiver)
    if handle is not None and handle.kind == dbknown.FLASK_SQLALCHEMY:
        return known.FLASK_SQLALCHEMY
    if (isinstance(receiver, ast.Name) and receiver.id == known.FLASK_SQLALCHEMY_RECEIVER
            and facts.imports.is_imported(receiver.id) and _imports_module(facts, known.FLASK_MODULES)):
        return known.FLASK_SQLALCHEMY
    return None


def _is_true(node: Optional[ast.AST]) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _keyword(call: ast.Call, name: str) -> Optional[ast.keyword]:
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword
    return None


def _ddl_words(text: str) -> str:
    lead = {"CREATE", "ALTER", "DROP", "UNIQUE", "INDEX", "TABLE", "TYPE", "EXTENSION", "SCHEMA", "SEQUENCE",
            "VIEW", "OR", "REPLACE", "MATERIALIZED", "FUNCTION", "TRIGGER", "DOMAIN", "CONCURRENTLY", "UNLOGGED"}
    words = []
    for word in text.split():
        upper = word.upper()
        if upper not in lead:
            break
        words.append(upper)
    return " ".join(words) or "DDL"


def _writes_shared_schema(item: ExecutedSql, temporary_tables: Set[str]) -> bool:
    """DDL on shared objects: not TRUNCATE, not a temporary table (each session has its own)."""
    if not is_ddl(item.sql):
        return False
    statements = parse_statements(item.text)
    if statements is None:
        names = [name for name, _ in tokens(item.text)[:4]]
        return not any(name in known.TEMPORARY_TOKENS for name in names)
    for statement in statements:
        kind = type(statement).__name__
        if kind in known.NOT_SCHEMA_STATEMENTS:
            continue
        relation = getattr(statement, "relation", None) or getattr(getattr(statement, "into", None), "rel", None)
        if kind in ("CreateStmt", "CreateTableAsStmt") and relation is not None:
            if getattr(relation, "relpersistence", None) == known.TEMPORARY_PERSISTENCE:
                continue
        if kind == "DropStmt":
            objects = getattr(statement, "objects", None) or ()
            names = {getattr(obj[-1], "sval", None) for obj in objects if isinstance(obj, tuple) and obj}
            if names and names <= temporary_tables:
                continue
        return True
    return False


def _temporary_tables(items: List[ExecutedSql]) -> Set[str]:
    names: Set[str] = set()
    for item in items:
        for statement in parse_statements(item.text) or ():
            relation = getattr(statement, "relation", None) or getattr(getattr(statement, "into", None), "rel", None)
            if relation is not None and getattr(relation, "relpersistence", None) == known.TEMPORARY_PERSISTENCE:
                names.add(relation.relname)
    return names


def schema_writes(facts: ModuleFacts) -> List[SchemaWrite]:
    return facts.cached("schema:writes", _collect_schema_writes)


def _collect_schema_writes(facts: ModuleFacts) -> List[SchemaWrite]:
    found: List[SchemaWrite] = []
    for call in facts.calls_named(*known.METADATA_DDL_METHODS):
        if isinstance(call.func, ast.Attribute):
            framework = _metadata_framework(call.func.value, facts)
            if framework:
                found.append(SchemaWrite(call, call, _describe_call(call), framework))
    for call in facts.calls_named(*known.RUN_SYNC_METHODS):
        argument = call.args[0] if call.args else None
        if isinstance(argument, ast.Attribute) and argument.attr in known.METADATA_DDL_METHODS:
            framework = _metadata_framework(argument.value, facts)
            if framework:
                what = f"{dotted(call.func) or 'run_sync'}({dotted(argument)})"
                found.append(SchemaWrite(call, call, what, framework))
    for call in facts.calls_named(*known.TABLE_DDL_METHODS):
        func = call.func
        if not isinstance(func, ast.Attribute):
            continue
        receiver = func.value
        table = isinstance(receiver, ast.Attribute) and receiver.attr == known.TABLE_ATTRIBUTE
        bound = _bound_call(receiver, facts)
        if table or (bound is not None and (facts.callee(bound) or "") in known.TABLE_CONSTRUCTORS):
            framework = known.SQLMODEL if _imports_module(facts, ("sqlmodel",)) else known.SQLALCHEMY
            found.append(SchemaWrite(call, call, _describe_call(call), framework))
    for call in facts.calls_named(known.CREATE_TABLES_METHOD):
        func = call.func
        if not isinstance(func, ast.Attribute):
            continue
        bound = _bound_call(func.value, facts)
        is_database = bound is not None and (facts.callee(bound) or "") in known.DATABASE_CONSTRUCTORS
        if is_database or call.args:
            framework = known.PONY if _imports_module(facts, ("pony",)) else known.PEEWEE
            found.append(SchemaWrite(call, call, _describe_call(call), framework))
    for call in facts.calls_named(known.CREATE_TABLE_METHOD):
        func = call.func
        foreign = (facts.callee(call) or "").startswith(known.CREATE_TABLE_FOREIGN_PREFIXES)
        if not isinstance(func, ast.Attribute) or foreign:
            continue
        if any(k.arg in known.CREATE_TABLE_FOREIGN_KEYWORDS for k in call.keywords):
            continue
        last = (dotted(func.value) or "").rsplit(".", 1)[-1]
        if last[:1].isupper():
            framework = known.PICCOLO if _imports_module(facts, ("piccolo",)) else known.PEEWEE
            found.append(SchemaWrite(call, call, _describe_call(call), framework))
    last_names = {name.rsplit(".", 1)[-1] for name in known.SCHEMA_CALLS}
    for call in facts.calls_named(*sorted(last_names)):
        callee = facts.callee(call) or ""
        if callee in known.SCHEMA_CALLS:
            framework = known.SCHEMA_CALLS[callee]
            applies = callee in known.ALEMBIC_APPLY
            found.append(SchemaWrite(call, call, _describe_call(call), framework, applies_migrations=applies))
    keyword_names = {name.rsplit(".", 1)[-1] for name in known.SCHEMA_KEYWORD_CALLS}
    for call in facts.calls_named(*sorted(keyword_names)):
        callee = facts.callee(call) or ""
        if callee in known.SCHEMA_KEYWORD_CALLS:
            keyword_name, framework = known.SCHEMA_KEYWORD_CALLS[callee]
            keyword = _keyword(call, keyword_name)
            if keyword is not None and _is_true(keyword.value):
                found.append(SchemaWrite(keyword, call, f"{call_name(call)}(..., {keyword_name}=True)", framework,
                                         registers_hook=callee in known.STARTUP_REGISTERING_CALLS))
    for method, (keyword_name, framework) in known.KEYWORD_METHODS.items():
        for call in facts.calls_named(method):
            keyword = _keyword(call, keyword_name)
            if keyword is not None and _is_true(keyword.value):
                found.append(SchemaWrite(keyword, call, f"{call_name(call)}({keyword_name}=True)", framework))
    for call in facts.calls_named(known.GENERATE_SCHEMAS_METHOD):
        callee = facts.callee(call) or ""
        if callee not in known.SCHEMA_CALLS and callee.startswith("tortoise."):
            found.append(SchemaWrite(call, call, _describe_call(call), known.TORTOISE))
    for call in facts.calls_named("call_command"):
        if (facts.callee(call) or "") in known.DJANGO_CALL_COMMAND and call.args:
            first = call.args[0]
            if isinstance(first, ast.Constant) and first.value in known.DJANGO_SCHEMA_COMMANDS:
                found.append(SchemaWrite(call, call, f'call_command("{first.value}")', known.DJANGO,
                                         applies_migrations=first.value == "migrate"))
    for call in facts.calls_named("execute_from_command_line"):
        if (facts.callee(call) or "") in known.DJANGO_EXECUTE_FROM_COMMAND_LINE and call.args:
            argv = call.args[0]
            if isinstance(argv, (ast.List, ast.Tuple)):
                commands = [e.value for e in argv.elts
                            if isinstance(e, ast.Constant) and e.value in known.DJANGO_SCHEMA_COMMANDS]
                if commands:
                    what = f'execute_from_command_line([..., "{commands[0]}"])'
                    applies = commands[0] == "migrate"
                    found.append(SchemaWrite(call, call, what, known.DJANGO, applies_migrations=applies))
    found.extend(_schema_commands_run(facts))
    items = executed_sql(facts)
    temporary = _temporary_tables(items)
    for item in items:
        receiver = facts.qualify(item.receiver) if item.receiver is not None else ""
        if (receiver or "").startswith(("alembic.op", "alembic.context")):
            continue
        if _writes_shared_schema(item, temporary):
            what = f"raw {_ddl_words(item.text)} sent by `{_describe_call(item.call)}`"
            found.append(SchemaWrite(item.call, item.call, what, known.RAW_SQL))
    seen: Set[int] = set()
    unique = []
    for write in found:
        if id(write.call) not in seen and not _targets_local_database(write, facts):
            seen.add(id(write.call))
            unique.append(write)
    return unique


_TOOL_FRAMEWORKS = {
    deployment.ALEMBIC_UPGRADE: known.ALEMBIC, deployment.FLASK_DB_UPGRADE: known.FLASK_MIGRATE,
    deployment.DJANGO_MIGRATE: known.DJANGO,
}


def _schema_commands_run(facts: ModuleFacts) -> List[SchemaWrite]:
    """``subprocess.run(["alembic", "upgrade", "head"])``, a wrapper's ``run_prisma(["prisma", "db",
    "push"])``: a command line that writes schema, run from Python."""
    from ..knowledge import deployment as deployment_known

    found = []
    for call in facts.calls:
        if not call.args:
            continue
        first = call.args[0]
        words: List[str] = []
        if isinstance(first, (ast.List, ast.Tuple)):
            for element in first.elts:
                if not (isinstance(element, ast.Constant) and isinstance(element.value, str)):
                    break
                words.append(element.value)
        elif isinstance(first, ast.Constant) and isinstance(first.value, str) and " " in first.value:
            words = first.value.split()
        if len(words) < 2:
            continue
        callee = facts.callee(call) or ""
        name = (call_name(call) or "").lower()
        if callee not in deployment_known.SUBPROCESS_CALLS and not any(
                word in name for word in deployment_known.SUBPROCESS_NAME_WORDS):
            continue
        command = deployment.schema_command(words)
        if command is None:
            continue
        tool, said = command
        framework = _TOOL_FRAMEWORKS.get(tool, known.SCHEMA_TOOL)
        found.append(SchemaWrite(call, call, f"`{said}` run by `{_describe_call(call)}`", framework, quoted=True))
    return found


def _targets_local_database(write: SchemaWrite, facts: ModuleFacts) -> bool:
    """``Base.metadata.create_all(create_engine("sqlite://"))``, DDL on ``duckdb.connect()``."""
    call = write.call
    targets: List[ast.AST] = list(call.args[:1]) + [k.value for k in call.keywords if k.arg == "bind"]
    if not targets and write.framework != known.RAW_SQL:
        # ``Base.metadata.create_all()`` on a bound MetaData: the module's engines say where it goes.
        engines = [c for c in facts.calls if (facts.callee(c) or "") in known.ENGINE_FACTORIES]
        return bool(engines) and all(_is_local_database(engine, facts, 0) for engine in engines)
    if isinstance(call.func, ast.Attribute):
        targets.append(call.func.value)
    return any(_is_local_database(target, facts, 4) for target in targets)


def _is_local_database(node: ast.AST, facts: ModuleFacts, depth: int) -> bool:
    if depth < 0:
        return False
    if isinstance(node, ast.Name):
        value = bound_value(node, facts) or _with_binding(node, facts)
        return value is not None and _is_local_database(value, facts, depth - 1)
    if isinstance(node, ast.Call):
        callee = facts.callee(node) or ""
        if callee in known.LOCAL_DATABASE_CONNECTORS:
            return True
        if callee in known.ENGINE_FACTORIES and node.args:
            url = node.args[0]
            return isinstance(url, ast.Constant) and isinstance(url.value, str) and \
                url.value.startswith(known.LOCAL_DATABASE_URL_PREFIXES)
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("connect", "begin", "cursor"):
            return _is_local_database(node.func.value, facts, depth - 1)
    return False


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
            if _under_lock_helper(write.call):
                continue  # serialized by the project's own lock: the later replicas find the schema there
            reason = reach.reason(write.call)
            related: Tuple[Related, ...] = ()
            if reason is None and write.registers_hook:
                reason = "registered as a start-up hook of the app"
            if reason is None and context.cross_file:
                # Migration code is where schema writes belong: a way through it is the migrate entrypoint's.
                answer = runs(write.call, facts, through_migration_code=False, max_hops=_MAX_CALLER_HOPS)
                if answer.every_replica and answer.calls:
                    reason = f"reached from another module: {answer.reason}"
                    related = answer.via
            if reason is not None:
                reported.append((write, reason, related))
        return reported

    return facts.cached("schema:reported", build)


#: How many calls away (through other modules) OG401 looks for code every replica runs.
_MAX_CALLER_HOPS = 5


def _under_lock_helper(node: ast.AST) -> bool:
    """Inside ``with migration_lock(...):`` (a helper whose name says it locks, as OG403 trusts it)."""
    for above in ancestors(node):
        if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return False
        if isinstance(above, (ast.With, ast.AsyncWith)) and any(
                _is_lock_helper(item.context_expr) for item in above.items):
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
        for write, reason, related in reported_schema_writes(facts):
            what = write.what if write.framework == known.RAW_SQL or write.quoted else f"`{write.what}`"
            message = (
                f"{what} writes schema in every replica ({reason}): replicas that boot together race "
                "the same DDL and fail on duplicate objects or a half-applied schema."
            )
            yield self.finding(write.node, message, known.ENTRYPOINT_ADVICE[write.framework], related=related)


# =====================================================================================================
# OG402
# =====================================================================================================
_LIBPQ_PAIR = re.compile(r"(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|\S+)")
_BARE_HOST = re.compile(r"(?P<host>[A-Za-z][A-Za-z0-9.-]*)(?::(?P<port>\d+))?")


def _pooler_sign(text: str) -> Optional[str]:
    """What in a DSN shows it goes through a pooler: ``port 6432``, ``host pgbouncer``..., or None."""
    if "://" in text:
        try:
            parts = urlsplit(text)
            host = parts.hostname or ""
            try:
                port = parts.port
            except ValueError:
                port = None
            options = parse_qsl(parts.query)
        except ValueError:
            return None
        for key, value in options:
            if key.lower() in ("host", "hostaddr"):
                host = host or value
            if key.lower() == "port" and value.isdigit():
                port = port or int(value)
        sign = _host_or_port(host, port)
        if sign:
            return sign
        for key, value in options:
            if any(word in key.lower() or word in value.lower() for word in known.POOLER_OPTION_WORDS):
                return f"URL option {key}={value}"
        return None
    bare = _BARE_HOST.fullmatch(text.strip())
    if bare:  # a piece of a DSN built from parts: ``DB_HOST = "pgbouncer.svc"`` or ``"pgbouncer:6432"``
        return _host_or_port(bare.group("host"), int(bare.group("port")) if bare.group("port") else None)
    pairs = {key.lower(): value.strip("'") for key, value in _LIBPQ_PAIR.findall(text)}
    if "host" in pairs or "port" in pairs or "dbname" in pairs:
        port = int(pairs["port"]) if pairs.get("port", "").isdigit() else None
        sign = _host_or_port(pairs.get("host", ""), port)
        if sign:
            return sign
        for key in pairs:
            if any(word in key for word in known.POOLER_OPTION_WORDS):
                return f"option {key}"
    return None


def _host_or_port(host: str, port: Optional[int]) -> Optional[str]:
    if port in known.PGBOUNCER_PORTS:
        return f"port {port}, PgBouncer's port"
    lowered = host.lower()
    for word in known.POOLER_HOST_WORDS:
        if word in lowered:
            return f"host {host}"
    return None


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


@dataclass(frozen=True)
class _DsnParts:
    texts: Tuple[Tuple[ast.AST, str], ...]  # (node, text) of every string that makes up the DSN
    env: Tuple[Tuple[ast.AST, str], ...]  # (node, variable) of every environment read


def _dsn_parts(expr: ast.AST, facts: ModuleFacts) -> _DsnParts:
    texts: List[Tuple[ast.AST, str]] = []
    env: List[Tuple[ast.AST, str]] = []
    seen: Set[int] = set()
    stack: List[Tuple[ast.AST, int]] = [(expr, 0)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen or depth > 6:
            continue
        seen.add(id(node))
        variable = _env_name(node, facts)
        if variable is not None:
            env.append((node, variable))
            if isinstance(node, ast.Call):  # the default of ``os.getenv("X", "postgresql://...")``
                stack.extend((argument, depth + 1) for argument in node.args[1:])
            continue
        if isinstance(node, (ast.JoinedStr, ast.BinOp, ast.Constant)):
            whole = sql_text(node, facts)
            if whole is not None:
                texts.append((node, whole[0]))
        if isinstance(node, ast.Name):
            value = bound_value(node, facts)
            if value is not None:
                stack.append((value, depth + 1))
            continue
        if isinstance(node, ast.Constant):
            continue
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                stack.append((child, depth + 1))
    return _DsnParts(tuple(texts), tuple(env))


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
            message = (
                f"Migration code connects with {description}: through the pooler, the migration lock and "
                "the DDL transactions can land on different server connections and the pooler's reset "
                "drops the lock, so pods run migrations concurrently."
            )
            variable = direct or "POSTGRES_MIGRATE_URL"
            suggestion = (
                f"Connect migrations with the direct URL ({variable}: PostgreSQL's own host and port 5432, "
                "never PgBouncer), and keep the pooled URL for the app."
            )
            yield self.finding(expr, message, suggestion)

    @staticmethod
    def _evidence(parts: _DsnParts, call: ast.Call, expr: ast.AST, direct: str,
                  facts: ModuleFacts) -> Optional[Tuple[ast.AST, str]]:
        if (facts.callee(call) or "") in known.URL_CREATE:
            keyword = next(k for k in call.keywords if k.value is expr)
            for node, text in parts.texts:
                if keyword.arg == "host" and _host_or_port(text, None):
                    return node, f"host={text!r}, a pooler host"
            if keyword.arg == "port" and isinstance(expr, ast.Constant) and expr.value in known.PGBOUNCER_PORTS:
                return expr, f"port={expr.value}, PgBouncer's port"
            return None
        for node, text in parts.texts:
            sign = _pooler_sign(text)
            if sign:
                return node, f"a DSN that goes through the pooler ({sign})"
        for node, name in parts.env:
            if any(word in name.lower() for word in known.POOLER_HOST_WORDS):
                return node, f"{name}, a URL named for the pooler"
        if direct and parts.env and all(name != direct for _, name in parts.env):
            for node, name in parts.env:
                if _looks_like_db_url_variable(name):
                    return node, (f"{name} instead of {direct}, the direct URL the project configures "
                                  f"(so {name} is taken to be the app's pooled URL)")
        return None


# =====================================================================================================
# OG403
# =====================================================================================================
_DJANGO = "django"  # the connection of Django's migrate: the thread's ``django.db.connection``


@dataclass(frozen=True)
class _Apply:
    call: ast.Call
    what: str
    connection: object  # an expression, or _DJANGO
    framework: str
    per_migration_transactions: bool = False


def _connection_root(expr: ast.AST, facts: ModuleFacts, depth: int = 0) -> str:
    """A key for the server connection ``expr`` uses: cursors resolve to their connection."""
    if depth > 6:
        return dotted(expr) or ""
    if isinstance(expr, ast.Await):
        return _connection_root(expr.value, facts, depth + 1)
    if isinstance(expr, ast.Subscript):
        return _connection_root(expr.value, facts, depth + 1)
    if (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in dbknown.SAME_HANDLE_METHODS):
        return _connection_root(expr.func.value, facts, depth + 1)
    if isinstance(expr, ast.Name):
        bound = _with_binding(expr, facts)
        if bound is None:
            value = bound_value(expr, facts)
            bound = value if isinstance(value, ast.Call) else None
        if (bound is not None and isinstance(bound, ast.Call) and isinstance(bound.func, ast.Attribute)
                and bound.func.attr in dbknown.SAME_HANDLE_METHODS):
            return _connection_root(bound.func.value, facts, depth + 1)
    return facts.qualify(expr) or dotted(expr) or ""


def _with_binding(name: ast.Name, facts: ModuleFacts) -> Optional[ast.AST]:
    function = enclosing_function(name)
    for statement in facts.withs:
        if enclosing_function(statement) is not function:
            continue
        for item in statement.items:
            if isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == name.id:
                return item.context_expr
    return None


def _is_django_connection(root: str) -> bool:
    return root.startswith("django.db.connection")


def _blocking_locks(facts: ModuleFacts) -> List[Tuple[ExecutedSql, bool]]:
    """(sql, is session lock) for every blocking advisory lock the module sends."""
    found = []
    for item in executed_sql(facts):
        for advisory in item.sql.advisory:
            function = advisory.function
            if function.is_lock and function.blocking:
                found.append((item, function.session))
                break
    return found


def _unlocks(facts: ModuleFacts) -> List[ExecutedSql]:
    return [item for item in executed_sql(facts) if any(a.function.unlock for a in item.sql.advisory)]


class _LockFinder:
    _MAX_DEPTH = 4

    def __init__(self, facts: ModuleFacts) -> None:
        self.facts = facts
        self.locks = _blocking_locks(facts)
        self.unlocks = _unlocks(facts)
        self.reach = Reach.of_module(facts)

    def held(self, apply: _Apply) -> bool:
        return self._held_at(apply.call, apply.connection, apply, 0, set())

    def _held_at(self, site: ast.AST, connection: object, apply: _Apply, depth: int, visited: Set[int]) -> bool:
        facts = self.facts
        function = enclosing_function(site)
        if self._lock_helper_before(site, function) or _handed_in_by_runner(connection, facts):
            return True
        for item, session in self.locks:
            if enclosing_function(item.call) is not function or position(item.call) >= position(site):
                continue
            if not self._same_connection(item.receiver, connection, apply):
                continue
            if session and not self._unlocked_between(item, site, function):
                return True
            if (not session and not apply.per_migration_transactions
                    and self._same_transaction(item.call, site, function)):
                return True
        if function is None or depth >= self._MAX_DEPTH or id(function) in visited:
            return False
        visited = visited | {id(function)}
        callers = list(self._call_sites(function))
        parameter = self._parameter_index(function, connection)
        if not callers:
            # Called from another module: a connection passed in, or Django's thread connection, may be
            # locked by that caller; we cannot see it, so we say nothing.
            if parameter is not None:
                return True
            return connection is _DJANGO and not self._is_entrypoint(function)
        for site_call, passed in callers:
            caller_connection: object
            if connection is _DJANGO:
                caller_connection = _DJANGO
            elif parameter is None:
                return False  # the function opens its own connection: a caller's lock is on another one
            elif passed is not None:
                caller_connection = passed
            elif parameter < len(site_call.args):
                caller_connection = site_call.args[parameter]
            else:
                return True  # passed by keyword or in a way we do not follow
            if not self._held_at(site_call, caller_connection, apply, depth + 1, visited):
                return False
        return True

    def _is_entrypoint(self, function: FunctionNode) -> bool:
        return (self.reach.is_command(function) or function.name == "main"
                or self.reach.startup.reason(function) is not None)

    @staticmethod
    def _parameter_index(function: FunctionNode, connection: object) -> Optional[int]:
        if not isinstance(connection, ast.Name):
            return None
        names = [a.arg for a in function.args.posonlyargs + function.args.args]
        return names.index(connection.id) if connection.id in names else None

    def _call_sites(self, function: FunctionNode) -> Iterator[Tuple[ast.Call, Optional[ast.AST]]]:
        """(call, connection passed) for each call of ``function`` in this module: ``f(conn)``, or
        ``conn.run_sync(f)`` which calls ``f`` with ``conn``'s connection."""
        name = function.name
        for call in self.facts.calls_named(name):
            if isinstance(call.func, ast.Name):
                yield call, None
        for call in self.facts.calls_named(*known.RUN_SYNC_METHODS):
            if call.args and isinstance(call.args[0], ast.Name) and call.args[0].id == name:
                yield call, call.func.value if isinstance(call.func, ast.Attribute) else None

    def _same_connection(self, receiver: Optional[ast.AST], connection: object, apply: _Apply) -> bool:
        if receiver is None:
            return False
        facts = self.facts
        root = _connection_root(receiver, facts)
        if connection is _DJANGO:
            return _is_django_connection(root)
        if apply.framework == known.ALEMBIC and root.startswith(tuple(known.ALEMBIC_CONTEXT)):
            return True  # ``context.execute(...)`` runs on the connection env.py configured
        return isinstance(connection, ast.AST) and root == _connection_root(connection, facts)

    def _unlocked_between(self, lock: ExecutedSql, site: ast.AST, function: Optional[FunctionNode]) -> bool:
        root = _connection_root(lock.receiver, self.facts) if lock.receiver is not None else ""
        for unlock in self.unlocks:
            if enclosing_function(unlock.call) is not function:
                continue
            if position(lock.call) < position(unlock.call) < position(site):
                unlock_root = _connection_root(unlock.receiver, self.facts) if unlock.receiver is not None else ""
                if unlock_root == root:
                    return True
        return False

    @staticmethod
    def _same_transaction(lock: ast.AST, site: ast.AST, function: Optional[FunctionNode]) -> bool:
        """An xact lock holds for the run only inside the transaction block that also runs the migrations."""
        lock_blocks = {id(a) for a in ancestors(lock) if isinstance(a, (ast.With, ast.AsyncWith))}
        for above in ancestors(site):
            if above is function:
                break
            if isinstance(above, (ast.With, ast.AsyncWith)) and id(above) in lock_blocks:
                for item in above.items:
                    expr = item.context_expr
                    if isinstance(expr, ast.Call) and call_name(expr) in known.TRANSACTION_METHODS:
                        return True
        return False

    def _lock_helper_before(self, site: ast.AST, function: Optional[FunctionNode]) -> bool:
        """``with migration_lock(conn):`` around the run, or ``acquire_lock(conn)`` before it, in the same
        function: a lock we cannot see into, trusted."""
        for above in ancestors(site):
            if above is function:
                break
            if isinstance(above, (ast.With, ast.AsyncWith)):
                for item in above.items:
                    if _is_lock_helper(item.context_expr):
                        return True
        scope = function if function is not None else self.facts.tree
        for node in walk_no_nested_functions(scope):
            if isinstance(node, ast.Call) and position(node) < position(site) and _is_lock_helper(node):
                return True
        return False


def _handed_in_by_runner(connection: object, facts: ModuleFacts) -> bool:
    """env.py using ``config.attributes.get("connection")``: the runner that put it there holds (or not)
    the lock, and OG403 checks that runner."""
    if not isinstance(connection, ast.AST):
        return False
    if isinstance(connection, ast.Name):
        function = enclosing_function(connection)
        values = [
            statement.value for statement in facts.assigns
            if isinstance(statement, ast.Assign) and enclosing_function(statement) is function
            and any(isinstance(t, ast.Name) and t.id == connection.id for t in statement.targets)
        ]
        return any(_is_shared_connection(value) for value in values)
    return _is_shared_connection(connection)


def _is_shared_connection(node: ast.AST) -> bool:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
        key, holder = node.args[0], node.func.value
    elif isinstance(node, ast.Subscript):
        key, holder = node.slice, node.value
    else:
        return False
    return (isinstance(holder, ast.Attribute) and holder.attr == "attributes" and isinstance(key, ast.Constant)
            and key.value == known.ALEMBIC_SHARED_CONNECTION_KEY)


def _is_lock_helper(node: ast.AST) -> bool:
    if isinstance(node, ast.Await):
        node = node.value
    if not isinstance(node, ast.Call):
        return False
    name = (call_name(node) or "").lower()
    if name.startswith("pg_") or "unlock" in name or name in dbknown.SQL_METHODS:
        return False
    return known.LOCK_HELPER_WORD in name or (
        name == "acquire" and known.LOCK_HELPER_WORD in (dotted(node.func) or "").lower()
    )


def _migration_applications(facts: ModuleFacts) -> List[_Apply]:
    found: List[_Apply] = []
    reported = {id(write.call) for write, _, _ in reported_schema_writes(facts)}
    # Alembic: command.upgrade with the runner's connection shared through config.attributes.
    shared = _shared_alembic_connections(facts)
    for write in schema_writes(facts):
        if id(write.call) in reported or not write.applies_migrations:
            continue
        if write.framework == known.DJANGO:
            found.append(_Apply(write.call, write.what, _DJANGO, known.DJANGO))
        elif write.framework == known.ALEMBIC:
            connection = shared.get(id(enclosing_function(write.call)))
            if connection is not None:
                found.append(_Apply(write.call, write.what, connection, known.ALEMBIC))
    # Alembic env.py: context.run_migrations() after context.configure(connection=...).
    for call in facts.calls_named(known.RUN_MIGRATIONS):
        if (facts.qualify(call.func) or "").rsplit(".", 1)[0] not in known.ALEMBIC_CONTEXT:
            continue
        configure = _configure_call(call, facts)
        if configure is None:
            continue
        connection = _keyword(configure, "connection")
        if connection is None:
            continue  # offline mode: emits SQL, connects nowhere
        per_migration = _keyword(configure, "transaction_per_migration")
        found.append(_Apply(call, "context.run_migrations()", connection.value, known.ALEMBIC,
                            per_migration is not None and _is_true(per_migration.value)))
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
        found.append(_Apply(call, f"`{_describe_call(call)}` of a SQL file", call.func.value, known.RAW_SQL))
    return found


def _is_revision_module(facts: ModuleFacts) -> bool:
    for statement in facts.tree.body:
        if isinstance(statement, ast.ClassDef) and statement.name in known.REVISION_CLASS_NAMES:
            return True
        if isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if any(isinstance(t, ast.Name) and t.id in known.REVISION_MODULE_NAMES for t in targets):
                return True
    return False


def _shared_alembic_connections(facts: ModuleFacts) -> Dict[int, ast.AST]:
    """function id -> the connection a runner hands to env.py (``cfg.attributes["connection"] = conn``)."""
    shared: Dict[int, ast.AST] = {}
    for statement in facts.assigns:
        if not isinstance(statement, ast.Assign):
            continue
        for target in statement.targets:
            if (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute)
                    and target.value.attr == "attributes" and isinstance(target.slice, ast.Constant)
                    and target.slice.value == known.ALEMBIC_SHARED_CONNECTION_KEY):
                shared[id(enclosing_function(statement))] = statement.value
    return shared


def _configure_call(run: ast.Call, facts: ModuleFacts) -> Optional[ast.Call]:
    function = enclosing_function(run)
    scope = function if function is not None else facts.tree
    found = None
    for node in walk_no_nested_functions(scope):
        if (isinstance(node, ast.Call) and call_name(node) == "configure"
                and (facts.qualify(node.func) or "").rsplit(".", 1)[0] in known.ALEMBIC_CONTEXT
                and position(node) < position(run)):
            found = node
    return found


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
                isinstance(n, ast.Call) and call_name(n) in _DIRECTORY_LISTINGS for n in ast.walk(above.iter)):
            return True
    return False


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
        applications = _migration_applications(facts)
        if not applications:
            return
        finder = _LockFinder(facts)
        for apply in applications:
            if finder.held(apply):
                continue
            related: List[Related] = []
            if apply.framework == known.ALEMBIC and apply.what.startswith("context."):
                # env.py is a hazard when every replica runs it.  One file (flake8), or a project that shows
                # no runner, or only an operator's (a command, a script, a Job, a release phase): silent.
                if not facts.context.cross_file:
                    continue
                evidence = _env_evidence(facts)
                if evidence is None:
                    continue
                related = evidence
            if apply.per_migration_transactions:
                detail = ("with transaction_per_migration=True an xact lock ends with the first migration's "
                          "transaction, ")
            else:
                detail = ""
            runner = ""
            if related:
                entry = related[0]
                where = facts.config.relative(entry.path) if facts.config.root else entry.path
                runner = f" (every replica runs it, from {where or entry.path}:{entry.line})"
            message = (
                f"{apply.what if apply.framework == known.RAW_SQL else '`' + apply.what + '`'} applies migrations without a blocking advisory lock held on its connection for "
                f"the whole run{runner}: {detail}pods starting together run the same migrations at the same time."
            )
            yield self.finding(apply.call, message, self._suggestion(apply), related=related)

    @staticmethod
    def _suggestion(apply: _Apply) -> str:
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


# =====================================================================================================
# OG403 on env.py: who runs it
# =====================================================================================================
_MAX_RUNNER_DEPTH = 4
_MAX_RUNNER_FILES = 200


def _where(facts: ModuleFacts) -> str:
    return facts.context.rel_path or facts.context.path


def _apply_location(call: ast.Call, facts: ModuleFacts) -> deployment.MigrationsLocation:
    """The migrations directory (the env.py's) that ``command.upgrade(cfg, ...)`` / Flask-Migrate
    ``upgrade()`` runs, as far as the code fixes it."""
    callee = facts.callee(call) or ""
    near = _directory_of(facts)
    if callee.startswith("flask_migrate."):
        directory = _keyword(call, "directory")
        expr = directory.value if directory is not None else (call.args[0] if call.args else None)
        if expr is None:
            return deployment.MigrationsLocation(known.FLASK_MIGRATE_DIRECTORY, True, "Flask-Migrate's default")
        return _location_of_text(deployment.static_path(expr, facts), near, "upgrade(directory=...)")
    config_keyword = _keyword(call, "config")
    cfg = call.args[0] if call.args else (config_keyword.value if config_keyword is not None else None)
    if cfg is None:
        return deployment.MigrationsLocation(None)
    ini_directory = ""
    constructor = cfg if isinstance(cfg, ast.Call) else (bound_value(cfg, facts) if isinstance(cfg, ast.Name) else None)
    ini_files: List[str] = []
    if isinstance(constructor, ast.Call) and (call_name(constructor) or "").endswith("Config"):
        file_keyword = _keyword(constructor, "file_")
        ini_expr = constructor.args[0] if constructor.args else (file_keyword.value if file_keyword else None)
        ini_text = deployment.static_path(ini_expr, facts) if ini_expr is not None else None
        if ini_text:
            ini_files = [ini_text] if os.path.isabs(ini_text) and os.path.isfile(ini_text) else \
                deployment.ini_files_for(ini_text, near)
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
                text = deployment.static_path(option.args[1], facts)
                if text is not None and ini_directory:
                    text = text.replace("%(here)s", ini_directory)
                return _location_of_text(text, near, "set_main_option(\"script_location\", ...)", facts)
    for ini in ini_files:
        project_index.record_dependency(ini)
        location = deployment.script_location_of_ini(ini, facts.config)
        if location.path is not None:
            return location
    return deployment.MigrationsLocation(None)


def _directory_of(facts: ModuleFacts) -> str:
    return os.path.dirname(os.path.abspath(facts.context.path)) if facts.context.path else ""


def _location_of_text(text: Optional[str], near: str, how: str,
                      facts: Optional[ModuleFacts] = None) -> deployment.MigrationsLocation:
    if text is None:
        return deployment.MigrationsLocation(None)
    if ":" in text and not os.path.isabs(text) and facts is not None:
        return deployment.location_from_text(text, near, facts.config, how)
    return deployment.MigrationsLocation(text, not os.path.isabs(text), how)


def _runner_root(facts: ModuleFacts) -> str:
    """Where the runners of an env.py are looked for: the project (or service) directory above it."""
    return facts.cached("schema:runner-root", lambda f: deployment.project_directory(
        f.context.path, f.config, project_index.search_root(f)))


def _alembic_envs(facts: ModuleFacts) -> List[str]:
    """Directories of the project's Alembic environments (files that call ``context.run_migrations``)."""
    root = _runner_root(facts)
    found = []
    for path in project_index.files_mentioning("run_migrations", root):
        source = project_index.read_bytes(path)
        if b"alembic" in source and b"context" in source and b"configure" in source:
            directory = os.path.dirname(os.path.abspath(path))
            if directory not in found:
                found.append(directory)
    return found


def _runs_this_env(location: deployment.MigrationsLocation, env_directory: str, near: str,
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


def _env_evidence(facts: ModuleFacts) -> Optional[List[Related]]:
    """Why every replica runs this env.py, as the places on the way (entry point first), or None: start-up
    code reaches a ``command.upgrade`` of this directory, or a deployment file runs the upgrade in every
    replica.  Operator paths (commands, scripts, a Job, a release phase) are no evidence."""

    def build(_facts: ModuleFacts) -> Optional[List[Related]]:
        env_directory = _directory_of(facts)
        envs = _alembic_envs(facts)
        only_env = len(envs) <= 1
        for write, other in _runner_calls(facts):
            location = _apply_location(write.call, other)
            if not _runs_this_env(location, env_directory, _directory_of(other), only_env):
                continue
            chain = _replica_chain(write.call, other)
            if chain is not None:
                return chain + [place(other, write.call, f"`{write.what}` runs the migrations in "
                                                          f"{_relative_directory(facts, env_directory)}")]
        for step in deployment.steps(facts.config, _runner_root(facts)):
            if not step.launch.per_replica:
                continue
            if step.kind == deployment.ALEMBIC_UPGRADE:
                locations = [deployment.script_location_of_ini(ini, facts.config) for ini in step.files]
                if not any(loc.path for loc in locations):
                    locations = [deployment.MigrationsLocation(None)]
                near = step.launch.directory
            elif step.kind == deployment.FLASK_DB_UPGRADE:
                locations = [deployment.MigrationsLocation(step.target, not os.path.isabs(step.target))]
                near = step.launch.directory
            else:
                continue
            if any(_runs_this_env(loc, env_directory, near, only_env) for loc in locations):
                return [Related(step.launch.path, step.launch.line, 1, step.describe())]
        return None

    return facts.cached("schema:env-evidence", build)


def _relative_directory(facts: ModuleFacts, directory: str) -> str:
    relative = facts.config.relative(directory) if facts.config.root else directory
    return (relative or directory).rstrip("/") + "/"


def _replica_chain(call: ast.AST, facts: ModuleFacts) -> Optional[List[Related]]:
    """The places from an entry point every replica runs (start-up code, a request handler or job, a
    program a deployment file runs in every replica) to ``call``, ``call`` itself left out; None when only
    operator paths (commands, scripts, tests) or nothing reach it."""
    answer = runs(call, facts, max_hops=_MAX_RUNNER_DEPTH)
    return list(answer.via) if answer.every_replica else None
