"""Database handles: which constructors give a pool (statements may land on any server
connection) and which give one pinned connection (reference/frameworks.md §2)."""
from __future__ import annotations

from typing import Dict, FrozenSet

POOLED = "pooled"
PINNED = "pinned"
SESSION_FACTORY = "session-factory"
FLASK_SQLALCHEMY = "flask-sqlalchemy"

#: qualified constructor -> (kind, library)
CONSTRUCTORS: Dict[str, tuple] = {
    "sqlalchemy.create_engine": (POOLED, "sqlalchemy"),
    "sqlalchemy.engine.create_engine": (POOLED, "sqlalchemy"),
    "sqlalchemy.ext.asyncio.create_async_engine": (POOLED, "sqlalchemy"),
    "sqlmodel.create_engine": (POOLED, "sqlalchemy"),
    "sqlalchemy.orm.Session": (POOLED, "sqlalchemy"),
    "sqlalchemy.orm.session.Session": (POOLED, "sqlalchemy"),
    "sqlalchemy.ext.asyncio.AsyncSession": (POOLED, "sqlalchemy"),
    "sqlmodel.Session": (POOLED, "sqlalchemy"),
    "sqlmodel.ext.asyncio.session.AsyncSession": (POOLED, "sqlalchemy"),
    "sqlalchemy.orm.scoped_session": (POOLED, "sqlalchemy"),
    "sqlalchemy.orm.sessionmaker": (SESSION_FACTORY, "sqlalchemy"),
    "sqlalchemy.ext.asyncio.async_sessionmaker": (SESSION_FACTORY, "sqlalchemy"),
    "asyncpg.create_pool": (POOLED, "asyncpg"),
    "asyncpg.pool.create_pool": (POOLED, "asyncpg"),
    "psycopg_pool.ConnectionPool": (POOLED, "psycopg"),
    "psycopg_pool.AsyncConnectionPool": (POOLED, "psycopg"),
    "psycopg2.pool.SimpleConnectionPool": (POOLED, "psycopg2"),
    "psycopg2.pool.ThreadedConnectionPool": (POOLED, "psycopg2"),
    "psycopg2.pool.PersistentConnectionPool": (POOLED, "psycopg2"),
    "databases.Database": (POOLED, "databases"),
    "playhouse.pool.PooledPostgresqlDatabase": (POOLED, "peewee"),
    "playhouse.pool.PooledPostgresqlExtDatabase": (POOLED, "peewee"),
    "flask_sqlalchemy.SQLAlchemy": (FLASK_SQLALCHEMY, "sqlalchemy"),
    "asyncpg.connect": (PINNED, "asyncpg"),
    "psycopg.connect": (PINNED, "psycopg"),
    "psycopg.Connection.connect": (PINNED, "psycopg"),
    "psycopg.AsyncConnection.connect": (PINNED, "psycopg"),
    "psycopg2.connect": (PINNED, "psycopg2"),
}

#: Module-level objects that are handles by themselves.
#: ``Handle.how`` of a module's own connection (Django's per-thread ``connection``): not a checkout; two
#: ``with connection.cursor()`` blocks run on the same session.
MODULE_OBJECT = "module object"
OBJECTS: Dict[str, tuple] = {
    "django.db.connection": (PINNED, "django", MODULE_OBJECT),
}

#: Methods that, called on a pooled handle, check out one connection for as long as it is held.
PIN_METHODS: FrozenSet[str] = frozenset({
    "connect", "begin", "acquire", "connection", "getconn", "raw_connection", "connection_context",
})

#: Calls that give a checked-out connection back (``pool.putconn(conn)``, ``await pool.release(conn)``) or close it
#: (``conn.close()``): a ``try`` whose ``finally`` runs one ends the checkout ``conn = pool.getconn()`` began.
RETURN_METHODS: FrozenSet[str] = frozenset({"putconn", "release", "close"})

#: Methods that only open, wait for or close a database handle's own connections (``pool.open(wait=True)``,
#: ``database.connect()``, ``engine.dispose()``): the process's set-up of its handle, no statement sent.
SETUP_METHODS: FrozenSet[str] = frozenset({
    "open", "wait", "close", "connect", "disconnect", "dispose", "check",
})
#: Blocks that hand the handle itself a connection for their length, without naming it: peewee's
#: ``with db.connection_context():`` opens one on the Database (from its pool) and closes it at the block's end;
#: ``db.execute_sql(...)`` inside runs on it.  library -> the methods.
IMPLICIT_CHECKOUTS: Dict[str, FrozenSet[str]] = {"peewee": frozenset({"connection_context"})}

#: How a SQLAlchemy Session handle was made (``Handle.how``).  Such a Session holds a connection only
#: for its current transaction: COMMIT, ROLLBACK or close hands it back to the pool.
SESSION_HOWS: FrozenSet[str] = frozenset({"session", "Session", "AsyncSession", "scoped_session"})

#: ``session.connection()``: the Session's connection for the current transaction, not a checkout of
#: its own; it goes back to the pool with the Session's next COMMIT/ROLLBACK.
SESSION_CONNECTION = "Session.connection"

#: Methods whose result is the same kind of handle as their receiver.
SAME_HANDLE_METHODS: FrozenSet[str] = frozenset({"cursor", "execution_options"})

#: Attributes of a Flask-SQLAlchemy object that are pooled handles.
FLASK_SQLALCHEMY_POOLED_ATTRS: FrozenSet[str] = frozenset({"session", "engine"})

#: Type annotations -> (kind, library), for parameters such as ``session: Session = Depends(...)``.
ANNOTATIONS: Dict[str, tuple] = {
    # a factory handed in (``sessions: async_sessionmaker[AsyncSession]``): what calling it opens is a Session
    "sqlalchemy.orm.sessionmaker": (SESSION_FACTORY, "sqlalchemy"),
    "sqlalchemy.ext.asyncio.async_sessionmaker": (SESSION_FACTORY, "sqlalchemy"),
    "sqlalchemy.Engine": (POOLED, "sqlalchemy"),
    "sqlalchemy.engine.Engine": (POOLED, "sqlalchemy"),
    "sqlalchemy.ext.asyncio.AsyncEngine": (POOLED, "sqlalchemy"),
    "sqlalchemy.orm.Session": (POOLED, "sqlalchemy"),
    "sqlalchemy.ext.asyncio.AsyncSession": (POOLED, "sqlalchemy"),
    "sqlmodel.Session": (POOLED, "sqlalchemy"),
    "sqlmodel.ext.asyncio.session.AsyncSession": (POOLED, "sqlalchemy"),
    "asyncpg.Pool": (POOLED, "asyncpg"),
    "asyncpg.pool.Pool": (POOLED, "asyncpg"),
    "psycopg_pool.ConnectionPool": (POOLED, "psycopg"),
    "psycopg_pool.AsyncConnectionPool": (POOLED, "psycopg"),
    "databases.Database": (POOLED, "databases"),
    "sqlalchemy.Connection": (PINNED, "sqlalchemy"),
    "sqlalchemy.engine.Connection": (PINNED, "sqlalchemy"),
    "sqlalchemy.ext.asyncio.AsyncConnection": (PINNED, "sqlalchemy"),
    "asyncpg.Connection": (PINNED, "asyncpg"),
    "asyncpg.connection.Connection": (PINNED, "asyncpg"),
    "psycopg.Connection": (PINNED, "psycopg"),
    "psycopg.AsyncConnection": (PINNED, "psycopg"),
    "psycopg.Cursor": (PINNED, "psycopg"),
    "psycopg.AsyncCursor": (PINNED, "psycopg"),
    "psycopg2.extensions.connection": (PINNED, "psycopg2"),
    "psycopg2.extensions.cursor": (PINNED, "psycopg2"),
}

#: Methods that send SQL text to the server; the SQL is their first argument.  (DB-API's ``fetchone()`` and
#: ``fetchall()`` take none: given SQL text, they are a database wrapper's query-and-fetch.)
SQL_METHODS: FrozenSet[str] = frozenset({
    "execute", "executemany", "exec_driver_sql", "fetch", "fetchrow", "fetchval", "fetch_one",
    "fetch_all", "fetch_val", "scalar", "scalars", "exec", "execute_sql", "execute_query",
    "execute_query_dict", "raw", "fetchone", "fetchall",
    # Twisted's ``adbapi.ConnectionPool``: a query's rows, or an operation, run on a pooled connection
    "runQuery", "runOperation",
})

#: Calls that wrap SQL text into a statement object.
SQL_WRAPPERS: FrozenSet[str] = frozenset({"sqlalchemy.text", "sqlalchemy.sql.text", "sqlmodel.text",
                                          "psycopg.sql.SQL", "psycopg2.sql.SQL", "sqlalchemy.sql.expression.text"})

#: Pools whose release runs ``pg_advisory_unlock_all()`` (asyncpg's default reset), so a session lock
#: taken by a call on the pool itself is dropped as soon as the call returns.
RESETTING_POOL_LIBRARIES: FrozenSet[str] = frozenset({"asyncpg", "databases"})

#: Pinned connections that end the server session when their ``with`` block exits (psycopg 3,
#: asyncpg.connect) or are reset on return to the pool (asyncpg ``pool.acquire()``).
CLOSES_SESSION_ON_EXIT = {
    ("psycopg", "connect"), ("asyncpg", "connect"), ("asyncpg", "acquire"),
}

#: Pool classes that close a connection when it is returned: its server session (and its locks) ends.
CLOSING_POOL_CLASSES: FrozenSet[str] = frozenset({
    "sqlalchemy.pool.NullPool", "sqlalchemy.NullPool", "sqlalchemy.pool.impl.NullPool",
})


# -- dialects and the drivers that make them possible ------------------------------------------------------
#: SQLAlchemy dialect names a branch may test (``engine.dialect.name == "postgresql"``).
DIALECT_NAMES: FrozenSet[str] = frozenset({
    "postgresql", "sqlite", "mysql", "mariadb", "oracle", "mssql", "duckdb", "cockroachdb", "snowflake",
    "bigquery", "clickhouse", "redshift", "trino", "firebird", "sybase",
})
#: Dialects every CPython can reach with no driver to install.
STANDARD_LIBRARY_DIALECTS: FrozenSet[str] = frozenset({"sqlite"})
#: canonical distribution name of a driver (or a dialect package) -> the dialect it connects with
DRIVER_DIALECTS: Dict[str, str] = {
    "psycopg": "postgresql", "psycopg-binary": "postgresql", "psycopg-c": "postgresql",
    "psycopg2": "postgresql", "psycopg2-binary": "postgresql", "psycopg2cffi": "postgresql",
    "asyncpg": "postgresql", "pg8000": "postgresql", "aiopg": "postgresql",
    "aiosqlite": "sqlite", "pysqlite3": "sqlite", "pysqlite3-binary": "sqlite", "sqlean-py": "sqlite",
    "libsql-experimental": "sqlite", "sqlalchemy-libsql": "sqlite",
    "pymysql": "mysql", "mysqlclient": "mysql", "mysql-connector-python": "mysql", "aiomysql": "mysql",
    "asyncmy": "mysql", "mariadb": "mariadb",
    "oracledb": "oracle", "cx-oracle": "oracle",
    "pyodbc": "mssql", "pymssql": "mssql", "aioodbc": "mssql",
    "duckdb-engine": "duckdb", "sqlalchemy-cockroachdb": "cockroachdb", "snowflake-sqlalchemy": "snowflake",
    "sqlalchemy-bigquery": "bigquery", "clickhouse-sqlalchemy": "clickhouse", "sqlalchemy-redshift": "redshift",
    "trino": "trino", "sqlalchemy-firebird": "firebird",
}
