"""PostgreSQL backend (psycopg 3, sync and asyncio): a claims table keyed by the claim key.

A claim is a row, not an advisory lock: a session lock is released when the work ends, so a replica that
wakes later in the same period would get it again, and through PgBouncer in transaction mode lock and
unlock can land on different server connections. Each claim is one short transaction that sets its own
lock and statement timeouts, uses no server-side prepared statements (so any pooler in transaction mode
is fine), and lets the database clock decide expiry, so replicas' clocks need not agree. Fences come from
a sequence, which survives restarts.

Rows: ``c:<key>`` a claim or lease, ``s:<key>`` when guarded work on the key last finished (its ``fence``
column holds the epoch milliseconds).
"""
from __future__ import annotations

import asyncio
import importlib
import random
import re
from contextlib import asynccontextmanager, contextmanager
from typing import Any, AsyncIterator, Dict, Iterator, Optional

from ._common import BackendError

CONNECT_TIMEOUT_SECONDS = 2
#: Server-side bounds on the guards' own statements: a table locked by a migration or VACUUM FULL means
#: a skipped tick after a second, not a tick that waits for the lock.
_LOCK_TIMEOUT_MS = 1000
_STATEMENT_TIMEOUT_MS = 2000
_NAME = re.compile(r"^(?:[a-z_][a-z0-9_]*\.)?[a-z_][a-z0-9_]*$")
# Expired rows are deleted now and then by the replicas themselves, a bounded batch at a time.
_CLEANUP_CHANCE = 1 / 64
_CLEANUP_BATCH = 500


def schema_sql(table: str = "onceguard_claims") -> str:
    """The DDL of the claims table, for a migration (the guards create it when it is missing)."""
    _check_name(table)
    index = table.replace(".", "_") + "_expires_at"
    return (
        f"CREATE SEQUENCE IF NOT EXISTS {table}_fence;\n"
        f"CREATE TABLE IF NOT EXISTS {table} (\n"
        "    key text PRIMARY KEY,\n"
        "    token text NOT NULL,\n"
        "    fence bigint NOT NULL,\n"
        "    expires_at timestamptz NOT NULL\n"
        ");\n"
        f"CREATE INDEX IF NOT EXISTS {index} ON {table} (expires_at);\n"
    )


def _check_name(table: str) -> None:
    if not isinstance(table, str) or not _NAME.match(table):
        raise ValueError(f"table must be a lower-case identifier, optionally schema-qualified: {table!r}")


def _pool_kind(target: Any) -> Optional[str]:
    try:
        import psycopg_pool  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None
    if isinstance(target, psycopg_pool.AsyncConnectionPool):
        return "async"
    if isinstance(target, psycopg_pool.ConnectionPool):
        return "sync"
    return None


class PostgresBackend:
    name = "postgres"

    def __init__(self, target: Any, table: str) -> None:
        try:
            importlib.import_module("psycopg")  # fail at configure() time, not at the first tick
        except ImportError as error:  # pragma: no cover - depends on the install
            raise ImportError("the PostgreSQL guards need psycopg 3: pip install 'onceguard-guards[postgres]'") \
                from error
        _check_name(table)
        if isinstance(target, str):
            import psycopg.conninfo

            psycopg.conninfo.conninfo_to_dict(target)  # a malformed conninfo fails here, not at every tick
            self._kind = "conninfo"
        else:
            kind = _pool_kind(target)
            if kind is None:
                raise TypeError("configure(postgres=...) takes a conninfo string or a psycopg_pool pool, "
                                f"not {type(target).__name__}")
            self._kind = kind
        self.table = table
        self._target = target
        self._acquire_sql = (
            f"INSERT INTO {table} AS c (key, token, fence, expires_at) "
            f"VALUES (%(key)s, %(token)s, CASE WHEN %(fence)s THEN nextval('{table}_fence') ELSE 0 END, "
            "now() + %(ttl)s * interval '1 millisecond') "
            "ON CONFLICT (key) DO UPDATE SET token = EXCLUDED.token, fence = EXCLUDED.fence, "
            "expires_at = EXCLUDED.expires_at WHERE c.expires_at <= now() "
            "RETURNING fence"
        )
        self._renew_sql = (
            f"UPDATE {table} SET expires_at = now() + %(ttl)s * interval '1 millisecond' "
            "WHERE key = %(key)s AND token = %(token)s AND expires_at > now()"
        )
        self._release_sql = f"DELETE FROM {table} WHERE key = %(key)s AND token = %(token)s AND expires_at > now()"
        self._cleanup_sql = (
            f"DELETE FROM {table} WHERE key IN (SELECT key FROM {table} "
            f"WHERE expires_at < now() - interval '1 hour' ORDER BY expires_at LIMIT {_CLEANUP_BATCH} "
            "FOR UPDATE SKIP LOCKED)"
        )
        self._mark_sql = (
            f"INSERT INTO {table} (key, token, fence, expires_at) "
            "VALUES (%(key)s, '', (extract(epoch from clock_timestamp()) * 1000)::bigint, 'infinity') "
            "ON CONFLICT (key) DO UPDATE SET fence = EXCLUDED.fence RETURNING fence"
        )
        self._last_sql = f"SELECT fence FROM {table} WHERE key = %(key)s"

    # -- connections ----------------------------------------------------------------------------------

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        import psycopg

        if self._kind == "conninfo":
            with psycopg.connect(self._target, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS,
                                 prepare_threshold=None) as conn:
                yield conn
        elif self._kind == "async":
            raise TypeError("onceguard.guards is configured with an asyncio psycopg pool: call the asyncio "
                            "guards (aclaim_period, arun_exclusive, ...) or configure a sync pool")
        else:
            with self._target.connection(timeout=CONNECT_TIMEOUT_SECONDS) as conn:
                yield conn

    @asynccontextmanager
    async def _aconnection(self) -> AsyncIterator[Any]:
        import psycopg

        if self._kind == "conninfo":
            conn = await psycopg.AsyncConnection.connect(
                self._target, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS, prepare_threshold=None)
            async with conn:
                yield conn
        else:
            async with self._target.connection(timeout=CONNECT_TIMEOUT_SECONDS) as conn:
                yield conn

    _TIMEOUTS_SQL = ("SELECT set_config('lock_timeout', %(lock)s, true), "
                     "set_config('statement_timeout', %(statement)s, true)")
    _TIMEOUTS = {"lock": f"{_LOCK_TIMEOUT_MS}ms", "statement": f"{_STATEMENT_TIMEOUT_MS}ms"}

    def _create_table(self, conn: Any) -> None:
        import psycopg

        for statement in schema_sql(self.table).split(";\n"):
            if statement.strip():
                try:
                    with conn.transaction():  # a savepoint when a pool's connection is in a transaction
                        conn.execute(statement, prepare=False)
                except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable,
                        psycopg.errors.DuplicateObject):
                    pass  # another replica created it at the same moment

    async def _acreate_table(self, conn: Any) -> None:
        import psycopg

        for statement in schema_sql(self.table).split(";\n"):
            if statement.strip():
                try:
                    async with conn.transaction():
                        await conn.execute(statement, prepare=False)
                except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable,
                        psycopg.errors.DuplicateObject):
                    pass

    # -- sync -----------------------------------------------------------------------------------------

    def _statement(self, conn: Any, query: str, params: Dict[str, Any], fetch: bool) -> Any:
        with conn.transaction():
            conn.execute(self._TIMEOUTS_SQL, self._TIMEOUTS, prepare=False)
            cursor = conn.execute(query, params, prepare=False)
            return cursor.fetchone() if fetch else cursor.rowcount

    def _run(self, query: str, params: Dict[str, Any], fetch: bool) -> Any:
        import psycopg

        try:
            with self._connection() as conn:
                try:
                    return self._statement(conn, query, params, fetch)
                except psycopg.errors.UndefinedTable:
                    self._create_table(conn)
                    return self._statement(conn, query, params, fetch)
        except (psycopg.Error, OSError) as error:
            raise BackendError(f"postgres: {error}") from error
        except Exception as error:
            if type(error).__module__.startswith("psycopg_pool"):  # PoolTimeout: no connection in time
                raise BackendError(f"postgres: {error}") from error
            raise

    def _cleanup_now_and_then(self) -> None:
        if random.random() < _CLEANUP_CHANCE:
            try:
                self._run(self._cleanup_sql, {}, False)
            except BackendError:
                pass  # housekeeping only

    def acquire(self, key: str, token: str, ttl_ms: int, fence: bool) -> Optional[int]:
        row = self._run(self._acquire_sql, {"key": "c:" + key, "token": token, "ttl": ttl_ms, "fence": fence}, True)
        self._cleanup_now_and_then()
        return None if row is None else int(row[0])

    def renew(self, key: str, token: str, ttl_ms: int) -> bool:
        return bool(self._run(self._renew_sql, {"key": "c:" + key, "token": token, "ttl": ttl_ms}, False) == 1)

    def release(self, key: str, token: str) -> bool:
        return bool(self._run(self._release_sql, {"key": "c:" + key, "token": token}, False) == 1)

    def mark_success(self, key: str) -> int:
        return int(self._run(self._mark_sql, {"key": "s:" + key}, True)[0])

    def last_success_ms(self, key: str) -> Optional[int]:
        row = self._run(self._last_sql, {"key": "s:" + key}, True)
        return None if row is None else int(row[0])

    # -- asyncio --------------------------------------------------------------------------------------

    async def _astatement(self, conn: Any, query: str, params: Dict[str, Any], fetch: bool) -> Any:
        async with conn.transaction():
            await conn.execute(self._TIMEOUTS_SQL, self._TIMEOUTS, prepare=False)
            cursor = await conn.execute(query, params, prepare=False)
            return (await cursor.fetchone()) if fetch else cursor.rowcount

    async def _arun(self, query: str, params: Dict[str, Any], fetch: bool) -> Any:
        if self._kind == "sync":  # an app's sync pool serves the asyncio guards from a thread
            return await asyncio.to_thread(self._run, query, params, fetch)
        import psycopg

        try:
            async with self._aconnection() as conn:
                try:
                    return await self._astatement(conn, query, params, fetch)
                except psycopg.errors.UndefinedTable:
                    await self._acreate_table(conn)
                    return await self._astatement(conn, query, params, fetch)
        except (psycopg.Error, OSError) as error:
            raise BackendError(f"postgres: {error}") from error
        except Exception as error:
            if type(error).__module__.startswith("psycopg_pool"):
                raise BackendError(f"postgres: {error}") from error
            raise

    async def _acleanup_now_and_then(self) -> None:
        if random.random() < _CLEANUP_CHANCE:
            try:
                await self._arun(self._cleanup_sql, {}, False)
            except BackendError:
                pass

    async def aacquire(self, key: str, token: str, ttl_ms: int, fence: bool) -> Optional[int]:
        row = await self._arun(self._acquire_sql,
                               {"key": "c:" + key, "token": token, "ttl": ttl_ms, "fence": fence}, True)
        await self._acleanup_now_and_then()
        return None if row is None else int(row[0])

    async def arenew(self, key: str, token: str, ttl_ms: int) -> bool:
        return bool(await self._arun(self._renew_sql, {"key": "c:" + key, "token": token, "ttl": ttl_ms}, False) == 1)

    async def arelease(self, key: str, token: str) -> bool:
        return bool(await self._arun(self._release_sql, {"key": "c:" + key, "token": token}, False) == 1)

    async def amark_success(self, key: str) -> int:
        return int((await self._arun(self._mark_sql, {"key": "s:" + key}, True))[0])

    async def alast_success_ms(self, key: str) -> Optional[int]:
        row = await self._arun(self._last_sql, {"key": "s:" + key}, True)
        return None if row is None else int(row[0])
