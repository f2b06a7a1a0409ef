"""Runtime guards for work that must happen once although every replica runs it.

Call :func:`configure` once at start-up with a Redis URL or client (``pip install 'onceguard[redis]'``)
or a PostgreSQL conninfo or psycopg pool (``pip install 'onceguard[postgres]'``); then, as the first
statement of the work:

=========================================  ====================================================================
situation                                  guard
=========================================  ====================================================================
a sweep on a timer                         ``if not claim_period("billing.renew", 300): return`` — the first
                                           replica to ask in a period wins, every later ask in that period
                                           (other replicas, restarts, the start-up run) gets False
one side effect per business event         ``if not claim_once(f"sla.notify:{task.id}:{step}", ttl): return``
once per period even when all wake         ``run_once("backup.hourly", 3600, backup)`` — the key stays after
together and the work may fail             success; a failure frees it for a retry
long work that must not overlap itself     ``run_exclusive("reindex", 60, reindex)`` — an owner-token lease
                                           renewed every ttl/3; losing it cancels the work
=========================================  ====================================================================

Every guard has an asyncio twin with an ``a`` in front (``await aclaim_period(...)``).

With no backend configured (local development, tests) every claim succeeds. With a backend configured
but unreachable every claim fails, so a tick is skipped rather than run on every replica. A claim lost
to another replica is the normal case on all replicas but one: it is logged at debug.

Importing ``onceguard`` (the linter) never imports this module, and this module imports redis-py or
psycopg only when configured with them.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from typing import Any, Awaitable, Callable, Optional

from ._common import BackendError, Instant, Lease, LeaseLost, Seconds, milliseconds, period_key

__all__ = [
    "BackendError",
    "Lease",
    "LeaseLost",
    "aacquire",
    "aclaim_once",
    "aclaim_period",
    "acquire",
    "arun_exclusive",
    "arun_once",
    "claim_once",
    "claim_period",
    "configure",
    "postgres_schema",
    "period_key",
    "run_exclusive",
    "run_once",
]

log = logging.getLogger("onceguard.guards")

_backend: Any = None


def configure(redis: Any = None, postgres: Any = None, *, namespace: str = "onceguard:",
              table: str = "onceguard_claims") -> None:
    """Choose the backend the guards claim through, once at start-up; no argument turns the guards off.

    ``redis``: a URL (``redis://host:6379/0``) or a redis-py client (``redis.Redis`` or
    ``redis.asyncio.Redis``); keys are stored under ``namespace``.
    ``postgres``: a conninfo string (each claim is one autocommit statement, so PgBouncer in transaction
    mode is fine) or a ``psycopg_pool`` pool; claims are rows of ``table``, created when missing (or
    by your migration: :func:`postgres_schema`).
    """
    global _backend
    if redis is not None and postgres is not None:
        raise ValueError("configure one backend: redis or postgres")
    if redis is not None:
        from ._redis import RedisBackend

        _backend = RedisBackend(redis, namespace)
    elif postgres is not None:
        from ._postgres import PostgresBackend

        _backend = PostgresBackend(postgres, table)
    else:
        _backend = None


def postgres_schema(table: str = "onceguard_claims") -> str:
    """The DDL of the PostgreSQL claims table, for a migration that creates it ahead of the first claim."""
    from ._postgres import schema_sql

    return schema_sql(table)


def _token() -> str:
    return uuid.uuid4().hex


def _skipped(key: str, error: Optional[BaseException]) -> None:
    if error is None:
        # The normal case on every replica but one: not worth more than debug.
        log.debug("%s: claimed by another replica; this run is skipped", key)
    else:
        # Not the normal case: every replica skips until the backend is back.
        log.warning("%s: claim backend unreachable, this run is skipped: %s", key, error)


def _acquire(key: str, ttl_ms: int, fence: bool) -> Optional[Lease]:
    backend = _backend
    token = _token()
    if backend is None:
        return Lease(key, token, 0, ttl_ms)
    try:
        got = backend.acquire(key, token, ttl_ms, fence)
    except BackendError as error:
        _skipped(key, error)
        return None
    if got is None:
        _skipped(key, None)
        return None
    return Lease(key, token, got, ttl_ms, backend)


async def _aacquire(key: str, ttl_ms: int, fence: bool) -> Optional[Lease]:
    backend = _backend
    token = _token()
    if backend is None:
        return Lease(key, token, 0, ttl_ms)
    try:
        got = await backend.aacquire(key, token, ttl_ms, fence)
    except BackendError as error:
        _skipped(key, error)
        return None
    if got is None:
        _skipped(key, None)
        return None
    return Lease(key, token, got, ttl_ms, backend)


# ---------------------------------------------------------------------------------------------------------
# Claims: the key stays until it expires


def claim_once(key: str, ttl: Seconds) -> bool:
    """True for the first caller of ``key`` within ``ttl``: one side effect per business event."""
    return _acquire(key, milliseconds(ttl, "ttl"), fence=False) is not None


async def aclaim_once(key: str, ttl: Seconds) -> bool:
    return await _aacquire(key, milliseconds(ttl, "ttl"), fence=False) is not None


def claim_period(key: str, period: Seconds, *, now: Instant = None) -> bool:
    """True for the first caller in the current period (epoch-aligned), False for every later one."""
    return claim_once(period_key(key, period, now), period)


async def aclaim_period(key: str, period: Seconds, *, now: Instant = None) -> bool:
    return await aclaim_once(period_key(key, period, now), period)


def acquire(key: str, ttl: Seconds) -> Optional[Lease]:
    """A lease on ``key`` for ``ttl`` with an owner token and a fencing token, or None when it is taken.

    Renew it with :meth:`Lease.renew` before ``ttl`` runs out, release it with :meth:`Lease.release`
    (compare-and-delete: a lease that expired and was taken by another owner is not deleted)."""
    return _acquire(key, milliseconds(ttl, "ttl"), fence=True)


async def aacquire(key: str, ttl: Seconds) -> Optional[Lease]:
    return await _aacquire(key, milliseconds(ttl, "ttl"), fence=True)


# ---------------------------------------------------------------------------------------------------------
# Run once per period: kept after success, freed after failure


def run_once(key: str, period: Seconds, fn: Callable[[], Any], *, now: Instant = None) -> bool:
    """Run ``fn`` unless this period's key was already claimed; True when it ran here.

    The key (``period_key(key, period)``) stays after success, so a replica that wakes late cannot
    repeat the period; an exception frees it, so another replica (or the next tick) can retry. A replica
    that dies while running keeps the key until the period ends."""
    period_ms = milliseconds(period, "period")
    lease = _acquire(period_key(key, period, now), period_ms, fence=False)
    if lease is None:
        return False
    try:
        fn()
    except BaseException:
        lease.release()
        raise
    return True


async def arun_once(key: str, period: Seconds, fn: Callable[[], Awaitable[Any]], *, now: Instant = None) -> bool:
    period_ms = milliseconds(period, "period")
    lease = await _aacquire(period_key(key, period, now), period_ms, fence=False)
    if lease is None:
        return False
    try:
        await fn()
    except BaseException:
        await asyncio.shield(lease.arelease())
        raise
    return True


# ---------------------------------------------------------------------------------------------------------
# Exclusive leases: renewed while the work runs, lost → cancelled


def _lost(lease: Lease, why: str) -> None:
    lease.lost.set()
    log.warning("%s: lease lost (%s); the work is being stopped", lease.key, why)


def run_exclusive(key: str, ttl: Seconds, fn: Callable[[Lease], Any]) -> bool:
    """Run ``fn(lease)`` while holding an owner-token lease on ``key``; False when another owner has it.

    A thread renews the lease every ttl/3. When a renewal finds it gone (expired during a pause, taken
    over), or the backend stays unreachable for a whole ttl, ``lease.lost`` is set: long work checks it
    (``lease.check()`` raises :class:`LeaseLost`) between steps. The lease is released with
    compare-and-delete when ``fn`` returns; if it was lost on the way, :class:`LeaseLost` is raised then.
    """
    ttl_ms = milliseconds(ttl, "ttl")
    lease = _acquire(key, ttl_ms, fence=True)
    if lease is None:
        return False
    stop = threading.Event()
    renewer = None
    if lease._backend is not None:
        renewer = threading.Thread(target=_renew_until, args=(lease, stop), name=f"onceguard-lease:{key}",
                                   daemon=True)
        renewer.start()
    try:
        fn(lease)
    finally:
        stop.set()
        if renewer is not None:
            renewer.join()
        if not lease.lost.is_set():
            lease.release()
    if lease.lost.is_set():
        raise LeaseLost(key)
    return True


def _renew_until(lease: Lease, stop: threading.Event) -> None:
    interval = lease.ttl_ms / 3000
    last_renewed = time.monotonic()
    while not stop.wait(interval):
        try:
            renewed = lease._backend.renew(lease.key, lease.token, lease.ttl_ms)  # type: ignore[union-attr]
        except BackendError as error:
            if time.monotonic() - last_renewed >= lease.ttl_ms / 1000:
                _lost(lease, f"backend unreachable for a whole ttl: {error}")
                return
            continue
        if not renewed:
            _lost(lease, "expired or taken over")
            return
        last_renewed = time.monotonic()


async def arun_exclusive(key: str, ttl: Seconds, fn: Callable[[Lease], Awaitable[Any]]) -> bool:
    """asyncio :func:`run_exclusive`: ``await fn(lease)`` runs as a task that is cancelled when the lease
    is lost, and then :class:`LeaseLost` is raised."""
    ttl_ms = milliseconds(ttl, "ttl")
    lease = await _aacquire(key, ttl_ms, fence=True)
    if lease is None:
        return False
    work = asyncio.ensure_future(fn(lease))
    renewer = asyncio.ensure_future(_arenew_until(lease, work)) if lease._backend is not None else None
    try:
        await work
    except asyncio.CancelledError:
        if lease.lost.is_set() and work.cancelled():
            raise LeaseLost(key) from None
        raise
    finally:
        if renewer is not None:
            renewer.cancel()
            try:
                await renewer
            except BaseException:  # noqa: BLE001 - its own cancellation
                pass
        if not lease.lost.is_set():
            await asyncio.shield(lease.arelease())
    if lease.lost.is_set():
        raise LeaseLost(key)
    return True


async def _arenew_until(lease: Lease, work: "asyncio.Future[Any]") -> None:
    interval = lease.ttl_ms / 3000
    last_renewed = time.monotonic()
    while not work.done():
        await asyncio.sleep(interval)
        try:
            renewed = await lease._backend.arenew(lease.key, lease.token, lease.ttl_ms)  # type: ignore[union-attr]
        except BackendError as error:
            if time.monotonic() - last_renewed >= lease.ttl_ms / 1000:
                _lost(lease, f"backend unreachable for a whole ttl: {error}")
                work.cancel()
                return
            continue
        if not renewed:
            _lost(lease, "expired or taken over")
            work.cancel()
            return
        last_renewed = time.monotonic()
