"""Calls that write schema and DSNs that go through a pooler (where code runs: ``knowledge.startup``)
(reference/frameworks.md §1.17, §2.10, §4; seed 000 "Migrations").

Adding a framework means adding rows here; the rules in ``rules/schema*.py`` only read these tables.
"""
from __future__ import annotations

from typing import Dict, FrozenSet, Tuple, Union

# -- frameworks, for the suggestion each finding carries ------------------------------------------
SQLALCHEMY = "sqlalchemy"
FLASK_SQLALCHEMY = "flask-sqlalchemy"
SQLMODEL = "sqlmodel"
PEEWEE = "peewee"
TORTOISE = "tortoise"
PONY = "pony"
PICCOLO = "piccolo"
YOYO = "yoyo"
GINO = "gino"
DJANGO = "django"
ALEMBIC = "alembic"
FLASK_MIGRATE = "flask-migrate"
RAW_SQL = "raw-sql"
#: a schema tool run as a command line (``prisma db push``, ``aerich upgrade``)
SCHEMA_TOOL = "schema-tool"

#: framework -> the single locked migration entrypoint to use instead (OG401's suggestion).
ENTRYPOINT_ADVICE: Dict[str, str] = {
    SQLALCHEMY: (
        "Move the schema into Alembic migrations and apply them from one migrate entrypoint run before the "
        "server (init container, release phase or `docker compose run migrate`): `alembic.command.upgrade` "
        "inside a runner that connects directly to PostgreSQL, holds `pg_advisory_lock(<service key>)` on "
        "that connection for the whole run and exits non-zero on failure."
    ),
    SQLMODEL: (
        "Generate Alembic migrations from `SQLModel.metadata` and apply them from one migrate entrypoint run "
        "before the server: `alembic.command.upgrade` inside a runner that connects directly to PostgreSQL, "
        "holds `pg_advisory_lock(<service key>)` for the whole run and exits non-zero on failure."
    ),
    FLASK_SQLALCHEMY: (
        "Use Flask-Migrate (Alembic) migrations and run `flask db upgrade` from one migrate entrypoint "
        "before the server starts, with an env.py that holds `pg_advisory_lock(<service key>)` on its "
        "connection for the whole run; keep `db.create_all()` for tests."
    ),
    PEEWEE: (
        "Apply schema changes with a migration tool (peewee's playhouse.migrate or peewee-migrate) from one "
        "migrate entrypoint run before the server, holding `pg_advisory_lock(<service key>)` on the "
        "database connection for the whole run and exiting non-zero on failure."
    ),
    TORTOISE: (
        "Set `generate_schemas=False` and apply Aerich migrations (`aerich upgrade`) from one migrate "
        "entrypoint run before the server, holding `pg_advisory_lock(<service key>)` on a direct "
        "connection for the whole run."
    ),
    PONY: (
        "Call `generate_mapping(create_tables=False)` in the app and create or alter tables from one migrate "
        "entrypoint run before the server, holding `pg_advisory_lock(<service key>)` for the whole run."
    ),
    YOYO: (
        "Apply yoyo migrations from one migrate entrypoint before the server (a release step, an init container "
        "or a single-replica Job), or hold `with backend.lock():` around `apply_migrations` so replicas wait "
        "and the later ones find nothing to apply."
    ),
    PICCOLO: (
        "Run `piccolo migrations forwards all` from one migrate entrypoint before the server, holding "
        "`pg_advisory_lock(<service key>)` for the whole run, instead of creating tables in the app."
    ),
    GINO: (
        "Apply schema with Alembic from one migrate entrypoint run before the server, holding "
        "`pg_advisory_lock(<service key>)` for the whole run."
    ),
    DJANGO: (
        "Run `migrate` once per rollout from an init container or entrypoint runner before the server: a "
        "command that takes `pg_advisory_lock(<service key>)` on `django.db.connection`, then calls "
        "`call_command(\"migrate\")` in the same thread, and exits non-zero on failure."
    ),
    ALEMBIC: (
        "Call `alembic.command.upgrade` only from the dedicated migrate entrypoint (init container, release "
        "phase) that connects directly to PostgreSQL and holds `pg_advisory_lock(<service key>)` on that "
        "connection for the whole run, never from application start-up or request code."
    ),
    FLASK_MIGRATE: (
        "Run `flask db upgrade` from the dedicated migrate entrypoint before the server starts, with an "
        "env.py that holds `pg_advisory_lock(<service key>)` for the whole run, not from the app."
    ),
    SCHEMA_TOOL: (
        "Run the schema tool from one migrate entrypoint before the server (init container, release phase or "
        "a Job), not from the app's start-up: with a blocking `pg_advisory_lock(<service key>)` held around "
        "it on a direct connection, or a tool that takes such a lock itself (`prisma migrate deploy`, never "
        "`prisma db push` in every pod)."
    ),
    RAW_SQL: (
        "Put this DDL in a migration applied by one migrate entrypoint run before the server, which "
        "connects directly to PostgreSQL and holds `pg_advisory_lock(<service key>)` for the whole run."
    ),
}

# -- OG401: calls that write schema ------------------------------------------------------------------
#: Methods of a SQLAlchemy ``MetaData`` (or Flask-SQLAlchemy ``db``, GINO ``db.gino``) that run DDL.
METADATA_DDL_METHODS: FrozenSet[str] = frozenset({"create_all", "drop_all"})

#: The last name of a receiver chain that is a ``MetaData``: ``Base.metadata``, ``SQLModel.metadata``,
#: ``meta``, ``db.gino``.  A ``create_all`` on anything else (``repository.create_all(rows)``) is not ours.
METADATA_RECEIVER_NAMES: FrozenSet[str] = frozenset({"metadata", "meta", "metadata_obj", "gino"})

#: Constructors whose result has ``create_all``: qualified name -> framework.
METADATA_CONSTRUCTORS: Dict[str, str] = {
    "sqlalchemy.MetaData": SQLALCHEMY,
    "sqlalchemy.schema.MetaData": SQLALCHEMY,
    "sqlalchemy.sql.schema.MetaData": SQLALCHEMY,
    "sqlmodel.MetaData": SQLMODEL,
    "flask_sqlalchemy.SQLAlchemy": FLASK_SQLALCHEMY,
    "flask_sqlalchemy.extension.SQLAlchemy": FLASK_SQLALCHEMY,
    "gino.Gino": GINO,
}

#: ``db.create_all()`` on a ``db`` imported from the app's own package, in a module that imports one of
#: these, is Flask-SQLAlchemy's (its conventional name; nothing else spells it that way).
FLASK_SQLALCHEMY_RECEIVER = "db"
FLASK_MODULES: Tuple[str, ...] = ("flask", "flask_sqlalchemy")

#: ``conn.run_sync(Base.metadata.create_all)``: the DDL method passed by reference.
RUN_SYNC_METHODS: FrozenSet[str] = frozenset({"run_sync"})

#: ``Model.__table__.create(engine)``, ``users_table.create(engine)``: ``create``/``drop`` on a Table.
TABLE_DDL_METHODS: FrozenSet[str] = frozenset({"create", "drop"})
TABLE_ATTRIBUTE = "__table__"
TABLE_CONSTRUCTORS: FrozenSet[str] = frozenset({
    "sqlalchemy.Table", "sqlalchemy.schema.Table", "sqlalchemy.sql.schema.Table", "sqlmodel.Table",
})

#: peewee ``db.create_tables([A, B])`` (a list of models is its first argument).
CREATE_TABLES_METHOD = "create_tables"
#: peewee ``Model.create_table(safe=True)``, Piccolo ``Table.create_table(if_not_exists=True)``: called on
#: a model class (a capitalised name).  Qualified names under these prefixes are other libraries'
#: ``create_table`` (Alembic's ``op.create_table`` in revisions, boto3 DynamoDB clients).
CREATE_TABLE_METHOD = "create_table"
CREATE_TABLE_FOREIGN_PREFIXES: Tuple[str, ...] = ("alembic.", "boto3.", "botocore.", "aioboto3.")
#: Keywords that show a ``create_table`` call is some other API (DynamoDB ``TableName=``).
CREATE_TABLE_FOREIGN_KEYWORDS: FrozenSet[str] = frozenset({"TableName", "KeySchema", "table_name"})

#: Calls that write schema whatever their arguments: qualified name -> framework.
SCHEMA_CALLS: Dict[str, str] = {
    "tortoise.Tortoise.generate_schemas": TORTOISE,
    "tortoise.utils.generate_schema_for_client": TORTOISE,
    "piccolo.table.create_db_tables": PICCOLO,
    "piccolo.table.create_db_tables_sync": PICCOLO,
    "alembic.command.upgrade": ALEMBIC,
    "alembic.command.downgrade": ALEMBIC,
    "alembic.command.stamp": ALEMBIC,
    "flask_migrate.upgrade": FLASK_MIGRATE,
    "flask_migrate.downgrade": FLASK_MIGRATE,
    "flask_migrate.stamp": FLASK_MIGRATE,
}

#: Calls that write schema when a keyword is True: qualified name -> (keyword, framework).
#: ``register_tortoise``/``RegisterTortoise`` hook schema generation into the app's start-up wherever
#: they are called, so they are reported wherever they appear in application code.
SCHEMA_KEYWORD_CALLS: Dict[str, Tuple[str, str]] = {
    "tortoise.contrib.fastapi.register_tortoise": ("generate_schemas", TORTOISE),
    "tortoise.contrib.fastapi.RegisterTortoise": ("generate_schemas", TORTOISE),
    "tortoise.contrib.starlette.register_tortoise": ("generate_schemas", TORTOISE),
    "tortoise.contrib.aiohttp.register_tortoise": ("generate_schemas", TORTOISE),
    "tortoise.contrib.quart.register_tortoise": ("generate_schemas", TORTOISE),
    "tortoise.contrib.sanic.register_tortoise": ("generate_schemas", TORTOISE),
}
#: Names under which these hook registrations are reported even when the call itself is not start-up code.
STARTUP_REGISTERING_CALLS: FrozenSet[str] = frozenset(SCHEMA_KEYWORD_CALLS)

#: Pony ``db.generate_mapping(create_tables=True)`` (any receiver: the method name is Pony's own).
KEYWORD_METHODS: Dict[str, Tuple[str, str]] = {
    "generate_mapping": ("create_tables", PONY),
}
#: Tortoise ``Tortoise.generate_schemas()``: the receiver must be Tortoise itself.
GENERATE_SCHEMAS_METHOD = "generate_schemas"

#: Django management commands that write schema, by name.
DJANGO_CALL_COMMAND: FrozenSet[str] = frozenset({
    "django.core.management.call_command",
})
DJANGO_SCHEMA_COMMANDS: FrozenSet[str] = frozenset({"migrate", "createcachetable"})
#: Options with which ``migrate`` only reports: ``--check`` exits non-zero on unapplied migrations, ``--plan``
#: lists them; neither applies anything (``call_command("migrate", "--check")`` or ``check_unapplied=True``).
DJANGO_MIGRATE_READ_ONLY_OPTIONS: FrozenSet[str] = frozenset({"--check", "--plan"})
DJANGO_MIGRATE_READ_ONLY_KEYWORDS: FrozenSet[str] = frozenset({"check_unapplied", "plan"})
#: ``execute_from_command_line(["manage.py", "migrate"])``: a literal argv naming a schema command.
DJANGO_EXECUTE_FROM_COMMAND_LINE: FrozenSet[str] = frozenset({
    "django.core.management.execute_from_command_line",
})

#: Statement types that are DDL but do not write shared schema (TRUNCATE is data).
NOT_SCHEMA_STATEMENTS: FrozenSet[str] = frozenset({"TruncateStmt"})
#: pglast ``relpersistence`` of a temporary table: session-local, so every replica may create its own.
TEMPORARY_PERSISTENCE = "t"
#: Scanner tokens that make a CREATE temporary, when the text does not parse as a whole.
TEMPORARY_TOKENS: FrozenSet[str] = frozenset({"TEMP", "TEMPORARY"})

# -- OG402: DSNs that go through a pooler ------------------------------------------------------------
PGBOUNCER_PORTS: FrozenSet[int] = frozenset({6432})
#: Host names (any dot-separated label, or a part of one) that name a pooler.
POOLER_HOST_WORDS: Tuple[str, ...] = ("pgbouncer", "pooler", "pgcat", "odyssey", "supavisor")
#: URL query options / libpq keywords that name PgBouncer (``?pgbouncer=true``).
POOLER_OPTION_WORDS: Tuple[str, ...] = ("pgbouncer",)

#: Calls that open a connection or pool from a DSN: qualified name -> argument position of the DSN
#: (keywords below are looked at too).
CONNECT_CALLS: Dict[str, int] = {
    "sqlalchemy.create_engine": 0,
    "sqlalchemy.engine.create_engine": 0,
    "sqlalchemy.ext.asyncio.create_async_engine": 0,
    "sqlmodel.create_engine": 0,
    "sqlalchemy.engine.make_url": 0,
    "sqlalchemy.make_url": 0,
    "asyncpg.connect": 0,
    "asyncpg.create_pool": 0,
    "psycopg.connect": 0,
    "psycopg.Connection.connect": 0,
    "psycopg.AsyncConnection.connect": 0,
    "psycopg2.connect": 0,
    "psycopg_pool.ConnectionPool": 0,
    "psycopg_pool.AsyncConnectionPool": 0,
    "databases.Database": 0,
    "playhouse.db_url.connect": 0,
    "dj_database_url.parse": 0,
    "dj_database_url.config": -1,
    "tortoise.Tortoise.init": -1,
    "yoyo.get_backend": 0,
}
DSN_KEYWORDS: FrozenSet[str] = frozenset({"url", "dsn", "conninfo", "db_url", "default"})
#: ``config.set_main_option("sqlalchemy.url", dsn)`` in an Alembic env.py or runner.
SET_MAIN_OPTION = "set_main_option"
ALEMBIC_URL_OPTIONS: FrozenSet[str] = frozenset({"sqlalchemy.url"})
#: Database objects whose ``create_tables`` creates tables (peewee, Pony).
DATABASE_CONSTRUCTORS: FrozenSet[str] = frozenset({
    "peewee.PostgresqlDatabase", "peewee.SqliteDatabase", "peewee.MySQLDatabase", "peewee.Database",
    "playhouse.pool.PooledPostgresqlDatabase", "playhouse.pool.PooledPostgresqlExtDatabase",
    "playhouse.postgres_ext.PostgresqlExtDatabase", "playhouse.postgres_ext.PooledPsycopg3Database",
    "playhouse.db_url.connect", "pony.orm.Database",
})
#: ``sqlalchemy.URL.create(host=..., port=6432)``.
URL_CREATE: FrozenSet[str] = frozenset({
    "sqlalchemy.URL.create", "sqlalchemy.engine.URL.create", "sqlalchemy.engine.url.URL.create",
})
#: Reading an environment variable: ``os.environ["X"]``, ``os.environ.get("X")``, ``os.getenv("X")``.
ENV_MAPPINGS: FrozenSet[str] = frozenset({"os.environ"})
ENV_GETTERS: FrozenSet[str] = frozenset({"os.getenv", "os.environ.get", "environ.get"})
#: Words an environment variable's name has when it holds a database URL.
DB_URL_ENV_WORDS: Tuple[str, ...] = ("DATABASE", "POSTGRES", "PG", "DB", "SQLALCHEMY")
DB_URL_ENV_SUFFIXES: Tuple[str, ...] = ("_URL", "_URI", "_DSN")

# -- OG403: code that applies migrations ---------------------------------------------------------------
#: Alembic commands that run revisions: ``command.upgrade(cfg, "head")``.
ALEMBIC_APPLY: FrozenSet[str] = frozenset({
    "alembic.command.upgrade", "alembic.command.downgrade", "flask_migrate.upgrade", "flask_migrate.downgrade",
})
#: ``cfg.set_main_option("script_location", ...)``: where the env.py that ``command.upgrade`` runs lives.
SCRIPT_LOCATION_OPTION = "script_location"
#: Flask-Migrate's ``upgrade()`` runs ``migrations/`` (of the directory the app runs in) unless told.
FLASK_MIGRATE_DIRECTORY = "migrations"
#: ``context.run_migrations()`` in env.py.
ALEMBIC_CONTEXT: FrozenSet[str] = frozenset({"alembic.context"})
RUN_MIGRATIONS = "run_migrations"
#: ``config.attributes["connection"] = connection``: the runner shares its connection with env.py.
ALEMBIC_SHARED_CONNECTION_KEY = "connection"
#: Calls that open a transaction in which an xact lock is held (``with context.begin_transaction():``).
TRANSACTION_METHODS: FrozenSet[str] = frozenset({"begin_transaction", "begin", "transaction", "atomic"})
#: DB-API connections whose ``with`` block is one transaction (begun by the first statement, committed at its end).
TRANSACTIONAL_CONNECTS: FrozenSet[str] = frozenset({"psycopg.connect", "psycopg.Connection.connect",
                                                    "psycopg.AsyncConnection.connect"})
#: Reading a SQL file to execute it: ``path.read_text()``, ``open(p).read()``.
FILE_READ_METHODS: FrozenSet[str] = frozenset({"read", "read_text"})
#: A migration revision (Alembic ``revision = "..."``, Django ``class Migration``) runs inside the runner
#: that holds (or not) the lock; the SQL files it executes are not a runner of their own.
REVISION_MODULE_NAMES: FrozenSet[str] = frozenset({"revision", "down_revision"})
REVISION_CLASS_NAMES: FrozenSet[str] = frozenset({"Migration"})
#: A call whose name contains this word, around or before the migration, is a lock helper we cannot see
#: into (``with migration_lock(conn):``, django-pglocks ``advisory_lock``, a Redis lock): trusted.
LOCK_HELPER_WORD = "lock"

#: Bytes every file that one of these rules reports contains (prefilter; case-sensitive).
#: Raw DDL is found by pglast, but the prefilter needs bytes: upper-case keywords, and the lower-case
#: phrases people write (a statement split over lines as ``create\n table`` is missed by design).
OG401_TRIGGERS: Tuple[Union[bytes, Tuple[bytes, ...]], ...] = (
    b"create_all", b"drop_all", b"create_table", b"generate_schemas", b"generate_mapping", b"create_db_tables",
    b"migrate", b"createcachetable", b"alembic", b"generate_schema_for_client",  # alembic: command.upgrade/stamp
    # schema tools run as command lines (``prisma db push``, ``flask db upgrade``, ``aerich upgrade``)
    b"prisma", b"aerich", b"yoyo", b"dbmate", b"goose", b"flyway", b"liquibase", (b"db", b"upgrade"),
    (b"piccolo", b"forwards"),
    # DDL in executed SQL: a verb and an object must both occur.
    *((verb, noun) for verb in (b"CREATE", b"ALTER", b"DROP")
      for noun in (b"TABLE", b"INDEX", b"SCHEMA", b"TYPE", b"EXTENSION", b"SEQUENCE", b"VIEW", b"FUNCTION",
                   b"TRIGGER", b"DOMAIN")),
    b"create table", b"create index", b"create unique", b"create schema", b"create type", b"create extension",
    b"create sequence", b"create view", b"create or replace", b"create materialized", b"create function",
    b"create trigger", b"create domain", b"alter table", b"alter type", b"alter sequence",
    b"drop table", b"drop index", b"drop schema", b"drop type", b"drop view",
    # SQL read from a .sql file of the project and sent (``conn.execute(Path("schema.sql").read_text())``)
    *((b".sql", read, b"execute") for read in (b"read_text", b".read(", b"read_bytes")),
)
#: OG402 looks at migration code only (the rule says so to the engine), so any DSN source may matter.
OG402_TRIGGERS: Tuple[bytes, ...] = (
    b"6432", b"pgbouncer", b"PGBOUNCER", b"PgBouncer", b"pooler", b"pgcat", b"odyssey", b"supavisor",
    b"environ", b"getenv",
    # a URL the migration code takes from the app's settings: where it points is in the project's other files
    b"sqlalchemy.url", b"create_engine", b"create_async_engine",
)
OG403_TRIGGERS: Tuple[bytes, ...] = (
    # command.upgrade is OG403's only when the runner hands env.py its connection (config.attributes);
    # every Alembic revision file says "alembic" and "upgrade" and has nothing for this rule.
    (b"alembic", b"upgrade", b"attributes"), b"run_migrations", (b"call_command", b"migrate"),
    # Django's manage.py: a deployment file may run its ``migrate`` in every replica
    b"execute_from_command_line",
    (b"read_text", b"execute"),
    (b".read()", b"execute"),
)


# -- databases local to one process --------------------------------------------------------------
#: Schema written to a database only this process sees (SQLite, DuckDB, in-memory) cannot race another
#: replica: such writes are not reported.
LOCAL_DATABASE_CONNECTORS: FrozenSet[str] = frozenset({
    "sqlite3.connect", "sqlite3.dbapi2.connect", "aiosqlite.connect", "duckdb.connect",
})
ENGINE_FACTORIES: FrozenSet[str] = frozenset({
    "sqlalchemy.create_engine", "sqlalchemy.engine.create_engine", "sqlalchemy.ext.asyncio.create_async_engine",
    "sqlmodel.create_engine",
})
LOCAL_DATABASE_URL_PREFIXES: Tuple[str, ...] = ("sqlite", "duckdb")
#: Connection classes of databases that live in one process's file or memory: a parameter annotated with one
#: (``conn: sqlite3.Connection``) is a per-host store, not the shared schema.
LOCAL_DATABASE_CONNECTION_TYPES: FrozenSet[str] = frozenset({
    "sqlite3.Connection", "sqlite3.Cursor", "sqlite3.dbapi2.Connection", "aiosqlite.Connection",
    "aiosqlite.core.Connection", "duckdb.DuckDBPyConnection",
})
#: Words by which a condition tests that the configured database is a local file (``settings.is_sqlite()``,
#: ``engine.dialect.name == "sqlite"``, ``url.startswith("sqlite")``): code only that branch runs writes the
#: schema of a database no other replica shares.
LOCAL_DIALECT_WORDS: Tuple[str, ...] = ("sqlite", "duckdb")
#: yoyo-migrations: ``backend.apply_migrations(backend.to_apply(migrations))`` on a ``get_backend(url)`` backend.
YOYO_APPLY_METHOD = "apply_migrations"

#: A table lock that serialises migration runners: ``LOCK TABLE`` (pglast's statement), in a mode that conflicts
#: with itself (ACCESS EXCLUSIVE is the default), waited for unless ``NOWAIT``.
LOCK_STATEMENT = "LockStmt"
NO_WAIT = "NOWAIT"
SELF_CONFLICTING_LOCK_MODES: Tuple[str, ...] = ("ACCESS EXCLUSIVE", " EXCLUSIVE MODE", "SHARE ROW EXCLUSIVE",
                                                "SHARE UPDATE EXCLUSIVE")
#: SQLAlchemy's execution option that renders a schema name in place of another (``{"tenant": "t_acme"}``): a
#: ``create_all`` on such a connection makes its tables in the schema it maps to.
SCHEMA_TRANSLATE_KEYWORD = "schema_translate_map"
