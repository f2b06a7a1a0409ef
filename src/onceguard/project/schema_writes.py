"""Calls that write schema (SQLAlchemy ``create_all``, Django ``migrate``, Alembic ``upgrade``, raw DDL, a
schema tool run as a command line), found once per module for OG401 and OG403 (``knowledge.schema``).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterable, List, Optional, Set

from ..analysis.executed_sql import ExecutedSql, bound_value, executed_sql
from ..analysis.facts import ModuleFacts, ancestors, call_name, walk
from ..analysis.handed import handed_sites
from .db_handles import ProjectHandles
from ..analysis.names import dotted
from ..analysis.sql import is_ddl, parse_statements, tokens
from ..knowledge import databases as dbknown
from ..knowledge import schema as known
from . import deployment
from . import index as project_index
from .sql_files import sql_file_executions
from .reach import enclosing_function


def imports_module(facts: ModuleFacts, prefixes: Iterable[str]) -> bool:
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


def describe_call(call: ast.Call) -> str:
    return f"{dotted(call.func) or call_name(call) or 'call'}()"


def bound_call(node: ast.AST, facts: ModuleFacts) -> Optional[ast.Call]:
    if isinstance(node, ast.Name):
        value = bound_value(node, facts)
        if isinstance(value, ast.Call):
            return value
    return None


def _metadata_framework(receiver: ast.AST, facts: ModuleFacts) -> Optional[str]:
    """The framework whose MetaData (or Flask-SQLAlchemy ``db``) ``receiver`` is, or None."""
    name = dotted(receiver) or ""
    qualified = facts.qualify(receiver) or ""
    # The name the object has where it is defined: an import alias (``db as database``) is a local spelling.
    last = (qualified if qualified and qualified != name else name).rsplit(".", 1)[-1]
    if last in known.METADATA_RECEIVER_NAMES:
        if qualified.startswith("sqlmodel."):
            return known.SQLMODEL
        if last == "gino":
            return known.GINO
        return known.SQLALCHEMY
    if qualified in known.METADATA_CONSTRUCTORS:
        return None  # the class itself
    value = bound_call(receiver, facts)
    if value is not None:
        return known.METADATA_CONSTRUCTORS.get(facts.callee(value) or "")
    handle = ProjectHandles.of_module(facts).of(receiver)
    if handle is not None and handle.kind == dbknown.FLASK_SQLALCHEMY:
        return known.FLASK_SQLALCHEMY
    if (isinstance(receiver, ast.Name) and last == known.FLASK_SQLALCHEMY_RECEIVER
            and facts.imports.is_imported(receiver.id) and imports_module(facts, known.FLASK_MODULES)):
        return known.FLASK_SQLALCHEMY
    return _imported_metadata_framework(receiver, qualified, facts)


def _imported_metadata_framework(receiver: ast.AST, qualified: str, facts: ModuleFacts) -> Optional[str]:
    """``from app import db`` where the project's ``app`` module says ``db = SQLAlchemy(app)``: the
    framework of the object the other module builds (the command line only; flake8 sees one file)."""
    root = receiver
    while isinstance(root, ast.Attribute):
        root = root.value
    if not (isinstance(root, ast.Name) and facts.context.cross_file and facts.imports.is_imported(root.id)):
        return None
    found = project_index.find_assignment(qualified, facts.config, project_index.search_root(facts))
    if found is None:
        return None
    value, other = found
    if isinstance(value, ast.Call):
        return known.METADATA_CONSTRUCTORS.get(other.callee(value) or "")
    return None


def is_true(node: Optional[ast.AST]) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def keyword_of(call: ast.Call, name: str) -> Optional[ast.keyword]:
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
                found.append(SchemaWrite(call, call, describe_call(call), framework))
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
        bound = bound_call(receiver, facts)
        if table or (bound is not None and (facts.callee(bound) or "") in known.TABLE_CONSTRUCTORS):
            framework = known.SQLMODEL if imports_module(facts, ("sqlmodel",)) else known.SQLALCHEMY
            found.append(SchemaWrite(call, call, describe_call(call), framework))
    for call in facts.calls_named(known.CREATE_TABLES_METHOD):
        func = call.func
        if not isinstance(func, ast.Attribute):
            continue
        bound = bound_call(func.value, facts)
        is_database = bound is not None and (facts.callee(bound) or "") in known.DATABASE_CONSTRUCTORS
        if is_database or call.args:
            framework = known.PONY if imports_module(facts, ("pony",)) else known.PEEWEE
            found.append(SchemaWrite(call, call, describe_call(call), framework))
    for call in facts.calls_named(known.CREATE_TABLE_METHOD):
        func = call.func
        foreign = (facts.callee(call) or "").startswith(known.CREATE_TABLE_FOREIGN_PREFIXES)
        if not isinstance(func, ast.Attribute) or foreign:
            continue
        if any(k.arg in known.CREATE_TABLE_FOREIGN_KEYWORDS for k in call.keywords):
            continue
        last = (dotted(func.value) or "").rsplit(".", 1)[-1]
        if last[:1].isupper():
            framework = known.PICCOLO if imports_module(facts, ("piccolo",)) else known.PEEWEE
            found.append(SchemaWrite(call, call, describe_call(call), framework))
    last_names = {name.rsplit(".", 1)[-1] for name in known.SCHEMA_CALLS}
    for call in facts.calls_named(*sorted(last_names)):
        callee = facts.callee(call) or ""
        if callee in known.SCHEMA_CALLS:
            framework = known.SCHEMA_CALLS[callee]
            applies = callee in known.ALEMBIC_APPLY
            found.append(SchemaWrite(call, call, describe_call(call), framework, applies_migrations=applies))
    handed_runs = sorted((site for sites in handed_sites(facts).values() for site in sites),
                         key=lambda site: (site[0].lineno, site[0].col_offset))
    for call, handed in handed_runs:
        callee = facts.qualify(handed)
        if callee in known.SCHEMA_CALLS:
            what = f"`{dotted(handed)}` run by `{describe_call(call)}`"
            found.append(SchemaWrite(call, call, what, known.SCHEMA_CALLS[callee],
                                     applies_migrations=callee in known.ALEMBIC_APPLY, quoted=True))
    keyword_names = {name.rsplit(".", 1)[-1] for name in known.SCHEMA_KEYWORD_CALLS}
    for call in facts.calls_named(*sorted(keyword_names)):
        callee = facts.callee(call) or ""
        if callee in known.SCHEMA_KEYWORD_CALLS:
            keyword_name, framework = known.SCHEMA_KEYWORD_CALLS[callee]
            keyword = keyword_of(call, keyword_name)
            if keyword is not None and is_true(keyword.value):
                found.append(SchemaWrite(keyword, call, f"{call_name(call)}(..., {keyword_name}=True)", framework,
                                         registers_hook=callee in known.STARTUP_REGISTERING_CALLS))
    for method, (keyword_name, framework) in known.KEYWORD_METHODS.items():
        for call in facts.calls_named(method):
            keyword = keyword_of(call, keyword_name)
            if keyword is not None and is_true(keyword.value):
                found.append(SchemaWrite(keyword, call, f"{call_name(call)}({keyword_name}=True)", framework))
    if imports_module(facts, ("yoyo",)):
        for call in facts.calls_named(known.YOYO_APPLY_METHOD):
            if isinstance(call.func, ast.Attribute):
                found.append(SchemaWrite(call, call, describe_call(call), known.YOYO, applies_migrations=True))
    for call in facts.calls_named(known.GENERATE_SCHEMAS_METHOD):
        callee = facts.callee(call) or ""
        if callee not in known.SCHEMA_CALLS and callee.startswith("tortoise."):
            found.append(SchemaWrite(call, call, describe_call(call), known.TORTOISE))
    for call in facts.calls_named("call_command"):
        if (facts.callee(call) or "") in known.DJANGO_CALL_COMMAND and call.args:
            first = call.args[0]
            if isinstance(first, ast.Constant) and first.value in known.DJANGO_SCHEMA_COMMANDS \
                    and not _only_reports(call.args[1:], call.keywords):
                found.append(SchemaWrite(call, call, f'call_command("{first.value}")', known.DJANGO,
                                         applies_migrations=first.value == "migrate"))
    for call in facts.calls_named("execute_from_command_line"):
        if (facts.callee(call) or "") in known.DJANGO_EXECUTE_FROM_COMMAND_LINE and call.args:
            argv = call.args[0]
            if isinstance(argv, (ast.List, ast.Tuple)):
                commands = [e.value for e in argv.elts
                            if isinstance(e, ast.Constant) and e.value in known.DJANGO_SCHEMA_COMMANDS]
                if commands and not _only_reports(argv.elts, []):
                    what = f'execute_from_command_line([..., "{commands[0]}"])'
                    applies = commands[0] == "migrate"
                    found.append(SchemaWrite(call, call, what, known.DJANGO, applies_migrations=applies))
    found.extend(_schema_commands_run(facts))
    items = executed_sql(facts)
    temporary = _temporary_tables(items)
    # SQL read from a .sql file of the project and sent (``conn.execute(Path("schema.sql").read_text())``)
    for item in items + sql_file_executions(facts):
        receiver = facts.qualify(item.receiver) if item.receiver is not None else ""
        if (receiver or "").startswith(("alembic.op", "alembic.context")):
            continue
        if _writes_shared_schema(item, temporary):
            source = f" from {item.sql_node.value}" if isinstance(item.sql_node, ast.Constant) \
                and isinstance(item.sql_node.value, str) and item.sql_node.value.lower().endswith(".sql") else ""
            what = f"raw {_ddl_words(item.text)}{source} sent by `{describe_call(item.call)}`"
            found.append(SchemaWrite(item.call, item.call, what, known.RAW_SQL))
    seen: Set[int] = set()
    unique = []
    for write in found:
        if (id(write.call) not in seen and not _targets_local_database(write, facts)
                and not only_for_local_database(write.call, facts)):
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
        # ``alembic upgrade head`` run as a program applies the migrations as ``command.upgrade`` does: the env.py
        # it runs (and the lock that holds, or not) is the same
        applies = framework in (known.ALEMBIC, known.FLASK_MIGRATE) and "upgrade" in words
        found.append(SchemaWrite(call, call, f"`{said}` run by `{describe_call(call)}`", framework, quoted=True,
                                 applies_migrations=applies))
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
        if _annotated_local_connection(node, facts):
            return True
        value = bound_value(node, facts) or with_binding(node, facts)
        if value is None and facts.context.cross_file and facts.imports.is_imported(node.id):
            # ``from .cache import engine``: the engine the other module makes
            from . import index as project

            found = project.find_assignment(facts.qualify(node) or "", facts.config, project.roots_for(facts))
            return found is not None and _is_local_database(found[0], found[1], depth - 1)
        return value is not None and _is_local_database(value, facts, depth - 1)
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
            and facts.enclosing_class(node) is not None):
        # ``self._conn``: every value the class binds to it is a local database.
        values = _self_attribute_values(facts.enclosing_class(node), node.attr, facts)
        return bool(values) and all(_is_local_database(value, facts, depth - 1) for value in values)
    if isinstance(node, ast.Call):
        callee = facts.callee(node) or ""
        if callee in known.LOCAL_DATABASE_CONNECTORS:
            return True
        opener = _own_function(node, facts)
        if opener is not None and _returns_local_database(opener, facts, depth - 1):
            return True
        if callee in known.ENGINE_FACTORIES and node.args:
            url = node.args[0]
            if isinstance(url, ast.Name):  # ``CACHE_DB_URL = "sqlite:///..."`` bound once
                url = bound_value(url, facts) or url
            return isinstance(url, ast.Constant) and isinstance(url.value, str) and \
                url.value.startswith(known.LOCAL_DATABASE_URL_PREFIXES)
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("connect", "begin", "cursor"):
            return _is_local_database(node.func.value, facts, depth - 1)
    return False



def _annotated_local_connection(name: ast.Name, facts: ModuleFacts) -> bool:
    """``def create(conn: sqlite3.Connection)``: the parameter's own type says the database is a local file."""
    function = enclosing_function(name)
    if function is None:
        return False
    arguments = function.args
    for argument in arguments.posonlyargs + arguments.args + arguments.kwonlyargs:
        if argument.arg == name.id and argument.annotation is not None:
            annotation = argument.annotation
            if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
                try:  # a quoted annotation: ``conn: "sqlite3.Connection"``
                    annotation = ast.parse(annotation.value, mode="eval").body
                except SyntaxError:
                    return False
            return (facts.qualify(annotation) or "") in known.LOCAL_DATABASE_CONNECTION_TYPES
    return False


def _self_attribute_values(cls: ast.ClassDef, attr: str, facts: ModuleFacts) -> List[ast.AST]:
    values = []
    for statement in facts.assigns:
        if isinstance(statement, ast.Assign) and facts.enclosing_class(statement) is cls and any(
                isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name)
                and t.value.id == "self" for t in statement.targets):
            values.append(statement.value)
    return values


def _own_function(call: ast.Call, facts: ModuleFacts) -> Optional[ast.AST]:
    """The def of this module a call runs: ``open_db(...)``, ``self._open(...)`` / ``cls._open(...)``."""
    func = call.func
    if isinstance(func, ast.Name):
        found = facts.functions_by_name.get(func.id, [])
        return found[0] if len(found) == 1 else None
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
        cls = facts.enclosing_class(call)
        for statement in cls.body if cls is not None else ():
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == func.attr:
                return statement
    return None


def _returns_local_database(function: ast.AST, facts: ModuleFacts, depth: int) -> bool:
    """A function typed to return a local connection, or whose every ``return`` gives one."""
    returns = getattr(function, "returns", None)
    if returns is not None and (facts.qualify(returns) or "") in known.LOCAL_DATABASE_CONNECTION_TYPES:
        return True
    results = [n.value for n in walk(function) if isinstance(n, ast.Return) and n.value is not None]
    return bool(results) and depth >= 0 and all(_is_local_database(r, facts, depth - 1) for r in results)


# -- code that runs only for a local database -----------------------------------------------------------
#: How many callers up (within the module) a SQLite-only branch is looked for.
_MAX_LOCAL_BRANCH_DEPTH = 3


def only_for_local_database(node: ast.AST, facts: ModuleFacts, depth: int = 0) -> bool:
    """The code at ``node`` runs only when the configured database is a local file: it sits in the branch
    of a test that says so (``if settings.is_sqlite():``, ``if url.startswith("sqlite")``, after
    ``if dialect != "sqlite": return``), or every call of its function in this module does."""
    function = enclosing_function(node)
    child: ast.AST = node
    for above in ancestors(node):
        if above is function:
            break
        if isinstance(above, ast.If):
            says = _tests_local_dialect(above.test)
            if says is True and _in_block(child, above.body):
                return True
            if says is False and _in_block(child, above.orelse):
                return True
        child = above
    if function is None:
        return False
    if _after_non_local_return(node, function):
        return True
    if depth >= _MAX_LOCAL_BRANCH_DEPTH:
        return False
    sites = [call for call in facts.calls_named(function.name) if _calls_function(call, function, facts)]
    sites += [call for call in facts.calls if any(isinstance(a, ast.Name) and a.id == function.name
                                                  for a in call.args)]
    # This module's callers first: one that runs for any database settles it without the project-wide
    # search for callers under other names.
    if not all(only_for_local_database(site, facts, depth + 1) for site in sites):
        return False
    if facts.context.cross_file:
        from .renamed_callers import project_callers

        others = [(call, other) for call, other in project_callers(function, facts) if other is not facts]
        if not all(only_for_local_database(site, other, depth + 1) for site, other in others):
            return False
        return bool(sites or others)
    return bool(sites)


def _calls_function(call: ast.Call, function: ast.AST, facts: ModuleFacts) -> bool:
    """A call of this module that runs ``function``: by its name, on ``self``/``cls``, or on an object whose
    class the module shows (``service = Service()`` ... ``service.prepare()``)."""
    from .summaries import resolve

    func = call.func
    if isinstance(func, ast.Name):
        return facts.enclosing_class(function) is None
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
        return True
    if facts.enclosing_class(function) is None:
        return False
    return any(target is function for target, _ in resolve(call, facts, enclosing_function(call), by_name=False))


def _in_block(node: ast.AST, block: List[ast.stmt]) -> bool:
    return any(statement is node for statement in block)


def _tests_local_dialect(test: ast.AST) -> Optional[bool]:
    """True when ``test`` holds only for a local database, False when it holds only for another one, None
    when it says nothing about the database."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _tests_local_dialect(test.operand)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        answers = [_tests_local_dialect(value) for value in test.values]
        if isinstance(test.op, ast.And) and True in answers:
            return True
        if isinstance(test.op, ast.Or) and answers and all(a is False for a in answers):
            return False
        return None
    if not _mentions_local_dialect(test):
        return None
    if isinstance(test, ast.Compare):
        negated = any(isinstance(op, (ast.NotEq, ast.IsNot, ast.NotIn)) for op in test.ops)
        if any(isinstance(side, ast.Constant) and side.value is None for side in test.comparators):
            return negated  # ``sqlite_path is not None``: a SQLite file is configured
        return not negated  # ``dialect.name != "sqlite"``: any database but SQLite
    return True


def _mentions_local_dialect(test: ast.AST) -> bool:
    for node in walk(test):
        word = ""
        if isinstance(node, ast.Name):
            word = node.id
        elif isinstance(node, ast.Attribute):
            word = node.attr
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            word = node.value
        if any(local in word.lower() for local in known.LOCAL_DIALECT_WORDS):
            return True
    return False


def _after_non_local_return(node: ast.AST, function: ast.AST) -> bool:
    """``if not settings.is_sqlite(): return`` at the top of the function, before ``node``."""
    line = getattr(node, "lineno", 0)
    for statement in getattr(function, "body", ()):
        if getattr(statement, "lineno", 0) >= line:
            return False
        if (isinstance(statement, ast.If) and _tests_local_dialect(statement.test) is False
                and statement.body and isinstance(statement.body[-1], (ast.Return, ast.Raise))):
            return True
    return False


def with_binding(name: ast.Name, facts: ModuleFacts) -> Optional[ast.AST]:
    function = enclosing_function(name)
    for statement in facts.withs:
        if enclosing_function(statement) is not function:
            continue
        for item in statement.items:
            if isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == name.id:
                return item.context_expr
    return None



def is_lock_helper(node: ast.AST) -> bool:
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


def _only_reports(arguments, keywords) -> bool:
    """``migrate --check`` / ``--plan`` (or ``check_unapplied=True``, ``plan=True``): it reads the migration state
    and applies nothing."""
    if any(isinstance(a, ast.Constant) and a.value in known.DJANGO_MIGRATE_READ_ONLY_OPTIONS for a in arguments):
        return True
    return any(k.arg in known.DJANGO_MIGRATE_READ_ONLY_KEYWORDS and is_true(k.value) for k in keywords)


def removes_or_restores(write: SchemaWrite) -> bool:
    """Schema a request or a job removes (``DROP ...``, ``drop_all()``), or brings to a revision the code holds
    in a variable (a backup's version, a downgrade target) rather than ``head``: an operation somebody asks for,
    which one replica carries out when asked, not schema that every pass ensures and that concurrent passes
    race.  (At start-up every replica runs it all the same: there it is reported whatever it is.)"""
    if "drop" in write.what.lower():
        return True
    if not write.applies_migrations or write.framework not in (known.ALEMBIC, known.FLASK_MIGRATE):
        return False
    arguments = list(write.call.args)
    for index, argument in enumerate(arguments):
        if (dotted(argument) or "").endswith("upgrade"):
            arguments = arguments[index + 1:]  # (handed to a helper that calls it: ``run(command.upgrade, cfg, rev)``)
            break
    revision = next((k.value for k in write.call.keywords if k.arg == "revision"), None)
    if revision is None and len(arguments) > 1:
        revision = arguments[1]
    if revision is None:
        return False  # (the default revision is head)
    function = next((above for above in ancestors(write.call) if isinstance(above, (ast.FunctionDef,
                                                                                   ast.AsyncFunctionDef))), None)
    if isinstance(revision, ast.Name) and function is not None and revision.id in {
            a.arg for a in function.args.posonlyargs + function.args.args + function.args.kwonlyargs}:
        return False  # (a helper handing its caller's revision on: which one, its callers say)
    return not (isinstance(revision, ast.Constant) and isinstance(revision.value, str)
                and revision.value.endswith("head") or isinstance(revision, ast.Constant) and revision.value is None)


def schema_of_its_own(write: SchemaWrite, facts: ModuleFacts) -> bool:
    """Schema made for one thing a caller names: ``CREATE SCHEMA "{name}"`` with the name built from the
    function's arguments (a tenant's own schema at sign-up), or ``create_all`` on a connection whose
    ``schema_translate_map`` sends the tables into such a schema.  Each ask makes another schema, once, on the
    replica asked: not the application's schema, which every replica ensures and concurrent passes race."""
    function = enclosing_function(write.call)
    if function is None:
        return False
    if "create schema" in write.what.lower():
        named = [n for argument in write.call.args[:1] for n in walk(argument) if isinstance(n, ast.JoinedStr)]
        return any(_from_arguments(value.value, function, facts) for text in named for value in text.values
                   if isinstance(value, ast.FormattedValue))
    receiver = write.call.func.value if isinstance(write.call.func, ast.Attribute) else None
    made = bound_value(receiver, facts) if isinstance(receiver, ast.Name) else None
    made = made.value if isinstance(made, ast.Await) else made
    if not isinstance(made, ast.Call) or "create_all" not in write.what:
        return False
    return any(keyword.arg == known.SCHEMA_TRANSLATE_KEYWORD and isinstance(keyword.value, ast.Dict)
               and keyword.value.values and all(_from_arguments(v, function, facts) for v in keyword.value.values)
               for keyword in made.keywords)


def _from_arguments(value: ast.AST, function: ast.AST, facts: ModuleFacts) -> bool:
    """``value`` is made from an argument of ``function``: the parameter itself, or a name bound once from it."""
    parameters = {a.arg for a in function.args.posonlyargs + function.args.args + function.args.kwonlyargs}
    names = [n for n in walk(value) if isinstance(n, ast.Name)]
    if any(n.id in parameters for n in names):
        return True
    for name in names:
        bound = bound_value(name, facts)
        if bound is not None and any(isinstance(n, ast.Name) and n.id in parameters for n in walk(bound)):
            return True
    return False
