"""PostgreSQL backend (psycopg 3, sync and asyncio): a claims table keyed by the claim key.

A claim is a row, not an advisory lock: a session lock is released when the work ends, so a replica that
wakes later in the same period would get it again, and through PgBouncer in transaction mode lock and
unlock can land on different server connections. Every statement here stands alone (autocommit), so any
pooler is fine, and the database clock decides expiry, so replicas' clocks need not agree.
"""
from __future__ import annotations

import importlib
import random
import re
from contextlib import asynccontextmanager, contextmanager
from typing import Any, AsyncIterator, Iterator, Optional

from ._common import BackendError

_TIMEOUT_SECONDS = 2
_NAME = re.compile(r"^(?:[a-z_][a-z0-9_]*\.)?[a-z_][a-z0-9_]*$")
# Expired rows are deleted now and then by the replicas themselves, after a grace period.
_CLEANUP_CHANCE = 1 / 64


def schema_sql(table: str = "onceguard_claims") -> str:
    """The DDL of the claims table, for a migration (the guards create it when it is missing)."""
    _check_name(table)
    return (
        f"CREATE SEQUENCE IF NOT EXISTS {table}_fence;\n"
        f"CREATE TABLE IF NOT EXISTS {table} (\n"
        "    key text PRIMARY KEY,\n"
        "    token text NOT NULL,\n"
        "    fence bigint NOT NULL,\n"
        "    expires_at timestamptz NOT NULL\n"
        ");\n"
    )


def _check_name(table: str) -> None:
    if not _NAME.match(table):
        raise ValueError(f"table must be a lower-case identifier, optionally schema-qualified: {table!r}")


def _is_async_pool(target: Any) -> bool:
    try:
        import psycopg_pool
    except ImportError:
        return False
    return isinstance(target, psycopg_pool.AsyncConnectionPool)


class PostgresBackend:
    name = "postgres"

    def __init__(self, target: Any, table: str) -> None:
        try:
            importlib.import_module("psycopg")  # fail at configure() time, not at the first tick
        except ImportError as error:  # pragma: no cover - depends on the install
            raise ImportError("the PostgreSQL guards need psycopg 3: pip install 'onceguard[postgres]'") from error
        _check_name(table)
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
        self._cleanup_sql = f"DELETE FROM {table} WHERE expires_at < now() - interval '1 hour'"

    # -- connections ----------------------------------------------------------------------------------

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        import psycopg

        if isinstance(self._target, str):
            with psycopg.connect(self._target, autocommit=True, connect_timeout=_TIMEOUT_SECONDS) as conn:
                yield conn
        elif _is_async_pool(self._target):
            raise BackendError("configured with an asyncio pool: use the a* guards")
        else:  # a psycopg_pool.ConnectionPool: commits when the block ends
            with self._target.connection() as conn:
                yield conn

    @asynccontextmanager
    async def _aconnection(self) -> AsyncIterator[Any]:
        import psycopg

        if isinstance(self._target, str):
            conn = await psycopg.AsyncConnection.connect(
                self._target, autocommit=True, connect_timeout=_TIMEOUT_SECONDS)
            async with conn:
                yield conn
        elif _is_async_pool(self._target):
            async with self._target.connection() as conn:
                yield conn
        else:
            raise BackendError("configured with a sync pool: use the sync guards")

    def _create_table(self, conn: Any) -> None:
        import psycopg

        for statement in schema_sql(self.table).split(";\n"):
            if statement.strip():
                try:
                    with conn.transaction():  # a savepoint when a pool's connection is in a transaction
                        conn.execute(statement)
                except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable,
                        psycopg.errors.DuplicateObject):
                    pass  # another replica created it at the same moment

    async def _acreate_table(self, conn: Any) -> None:
        import psycopg

        for statement in schema_sql(self.table).split(";\n"):
            if statement.strip():
                try:
                    async with conn.transaction():
                        await conn.execute(statement)
                except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable,
                        psycopg.errors.DuplicateObject):
                    pass

    # -- sync -----------------------------------------------------------------------------------------

    def _run(self, query: str, params: dict, fetch: bool) -> Any:
        import psycopg

        try:
            with self._connection() as conn:
                try:
                    cursor = conn.execute(query, params)
                except psycopg.errors.UndefinedTable:
                    if not conn.autocommit:
                        conn.rollback()
                    self._create_table(conn)
                    cursor = conn.execute(query, params)
                return cursor.fetchone() if fetch else cursor.rowcount
        except (psycopg.Error, OSError) as error:
            raise BackendError(f"postgres: {error}") from error

    def acquire(self, key: str, token: str, ttl_ms: int, fence: bool) -> Optional[int]:
        row = self._run(self._acquire_sql, {"key": key, "token": token, "ttl": ttl_ms, "fence": fence}, True)
        if row is not None and random.random() < _CLEANUP_CHANCE:
            try:
                self._run(self._cleanup_sql, {}, False)
            except BackendError:
                pass  # housekeeping only
        return None if row is None else int(row[0])

    def renew(self, key: str, token: str, ttl_ms: int) -> bool:
        return self._run(self._renew_sql, {"key": key, "token": token, "ttl": ttl_ms}, False) == 1

    def release(self, key: str, token: str) -> bool:
        return self._run(self._release_sql, {"key": key, "token": token}, False) == 1

    # -- asyncio --------------------------------------------------------------------------------------

    async def _arun(self, query: str, params: dict, fetch: bool) -> Any:
        import psycopg

        try:
            async with self._aconnection() as conn:
                try:
                    cursor = await conn.execute(query, params)
                except psycopg.errors.UndefinedTable:
                    if not conn.autocommit:
                        await conn.rollback()
                    await self._acreate_table(conn)
                    cursor = await conn.execute(query, params)
                return (await cursor.fetchone()) if fetch else cursor.rowcount
        except (psycopg.Error, OSError) as error:
            raise BackendError(f"postgres: {error}") from error

    async def aacquire(self, key: str, token: str, ttl_ms: int, fence: bool) -> Optional[int]:
        row = await self._arun(self._acquire_sql, {"key": key, "token": token, "ttl": ttl_ms, "fence": fence}, True)
        return None if row is None else int(row[0])

    async def arenew(self, key: str, token: str, ttl_ms: int) -> bool:
        return await self._arun(self._renew_sql, {"key": key, "token": token, "ttl": ttl_ms}, False) == 1

    async def arelease(self, key: str, token: str) -> bool:
        return await self._arun(self._release_sql, {"key": key, "token": token}, False) == 1
