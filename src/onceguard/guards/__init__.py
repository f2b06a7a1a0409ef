"""Runtime guards for work that must happen once although every replica runs it.

Call :func:`configure` once at start-up with a Redis URL or client (``pip install 'onceguard-guards[redis]'``)
or a PostgreSQL conninfo or psycopg pool (``pip install 'onceguard-guards[postgres]'``); then, as the first
statement of the work:

=========================================  ====================================================================
situation                                  guard
=========================================  ====================================================================
a sweep on a timer                         ``if not claim_period("billing.renew", 300): return`` — the first
                                           replica to ask in a period wins, every later ask in that period
                                           (other replicas, restarts, the start-up run) gets False; or the
                                           decorator ``@claimed_period("billing.renew", "5m")``
one side effect per business event         ``if not claim_once(f"sla.notify:{task.id}:{step}", ttl): return``
once per period even when all wake         ``run_once("backup.hourly", 3600, backup)`` — the key stays after
together and the work may fail             success; a failure frees it for a retry
long work that must not overlap itself     ``with exclusive("reindex", ttl=60) as lease:`` or
                                           ``run_exclusive("reindex", 60, reindex)`` — an owner-token lease
                                           renewed every ttl/3; losing it stops the work
=========================================  ====================================================================

Every guard has an asyncio twin with an ``a`` in front (``await aclaim_period(...)``,
``async with aexclusive(...)``); the decorator serves both kinds of function.

With no backend configured (local development, tests) every claim succeeds, and the first claim of the
process logs a warning naming :func:`configure`, because in a cluster that means every replica runs the
work. With a backend configured but unreachable or slower than ``timeout`` every claim fails, so a tick is
skipped rather than run on every replica. A claim lost to another replica is the normal case on all
replicas but one: it is logged at debug. A mistaken configuration (a URL without a scheme, an object that
is not a client or pool, an asyncio client under the sync guards) is an error, never a silent skip.

Importing ``onceguard`` (the linter) never imports this module, and this module imports redis-py or
psycopg only when configured with them.
"""
from __future__ import annotations

import logging
from typing import Any, Optional

from ._common import BackendError, Duration, LeaseLost, Seconds, milliseconds, storage_key
from ._lease import Lease
from ._periods import Instant, Period, Zone, claim_ttl_ms, epoch_ms, period_key, window
from . import _state
from ._exclusive import aexclusive, arun_exclusive, exclusive, run_exclusive
from ._run import arun_once, claimed_period, run_once

__all__ = [
    "BackendError",
    "Lease",
    "LeaseLost",
    "aacquire",
    "aclaim_once",
    "aclaim_period",
    "acquire",
    "aexclusive",
    "alast_success",
    "arun_exclusive",
    "arun_once",
    "claim_once",
    "claim_period",
    "claimed_period",
    "configure",
    "exclusive",
    "last_success",
    "period_key",
    "postgres_schema",
    "run_exclusive",
    "run_once",
]

log = logging.getLogger("onceguard.guards")

#: How long any one call to the backend may take before the claim counts as failed (a skipped tick).
DEFAULT_TIMEOUT_SECONDS = 5.0


def configure(redis: Any = None, postgres: Any = None, *, namespace: str = "onceguard:",
              table: str = "onceguard_claims", timeout: Seconds = DEFAULT_TIMEOUT_SECONDS) -> None:
    """Choose the backend the guards claim through, once at start-up; no argument turns the guards off.

    ``redis``: a URL (``redis://host:6379/0``, ``rediss://``, ``unix://``) or a redis-py client
    (``redis.Redis``, ``redis.asyncio.Redis``, or either ``RedisCluster``); keys are stored under
    ``namespace``. ``postgres``: a conninfo string or a ``psycopg_pool`` pool (each claim is one short
    transaction without prepared statements, so PgBouncer in transaction mode is fine); claims are rows of
    ``table``, created when missing (or by your migration: :func:`postgres_schema`). ``timeout``: how long
    a call to the backend may take before the claim fails and the tick is skipped.

    A wrong argument raises here (``ValueError``/``TypeError``), so a mistaken configuration shows at
    start-up instead of as an outage at every tick.
    """
    if redis is not None and postgres is not None:
        raise ValueError("configure one backend: redis or postgres")
    limit = milliseconds(timeout, "timeout") / 1000
    if redis is not None:
        from ._redis import RedisBackend

        _state.install(RedisBackend(redis, namespace), limit)
    elif postgres is not None:
        from ._postgres import PostgresBackend

        _state.install(PostgresBackend(postgres, table), limit)
    else:
        _state.install(None, limit)


def postgres_schema(table: str = "onceguard_claims") -> str:
    """The DDL of the PostgreSQL claims table, for a migration that creates it ahead of the first claim."""
    from ._postgres import schema_sql

    return schema_sql(table)


def __getattr__(name: str) -> Any:
    # ``guards._backend`` for code (and tests) that look at the configured backend.
    if name == "_backend":
        return _state.backend()
    raise AttributeError(name)


# ---------------------------------------------------------------------------------------------------------
# Claims: the key stays until it expires


def claim_once(key: str, ttl: Duration) -> bool:
    """True for the first caller of ``key`` within ``ttl``: one side effect per business event."""
    return _state.acquire(storage_key(key), milliseconds(ttl, "ttl"), fence=False) is not None


async def aclaim_once(key: str, ttl: Duration) -> bool:
    return await _state.aacquire(storage_key(key), milliseconds(ttl, "ttl"), fence=False) is not None


def claim_period(key: str, period: Period, *, now: Instant = None, tz: Zone = None) -> bool:
    """True for the first caller in the current period, False for every later one.

    ``period`` is seconds, a timedelta, text (``"5m"``, ``"1h"``, ``"1d"``) or a calendar period
    (``"day"``, ``"week"`` from Monday, ``"month"``); ``tz`` (a zone name or tzinfo) makes day-long and
    calendar periods follow the schedule's local midnight, across daylight-saving changes. The claim lives
    until the period's end plus a margin, so one replica wins each period even when the last asks of a
    period reach the server late or the replicas' clocks disagree by seconds."""
    at_ms = epoch_ms(now)
    found = window(period, at_ms / 1000, tz)
    return _state.acquire(storage_key(f"{key}:{found.name}"), claim_ttl_ms(found, epoch_ms(None)),
                          fence=False) is not None


async def aclaim_period(key: str, period: Period, *, now: Instant = None, tz: Zone = None) -> bool:
    at_ms = epoch_ms(now)
    found = window(period, at_ms / 1000, tz)
    return await _state.aacquire(storage_key(f"{key}:{found.name}"), claim_ttl_ms(found, epoch_ms(None)),
                                 fence=False) is not None


def acquire(key: str, ttl: Duration) -> Optional[Lease]:
    """A lease on ``key`` for ``ttl`` with an owner token and a fencing token, or None when it is taken.

    Renew it with :meth:`Lease.renew` before ``ttl`` runs out, release it with :meth:`Lease.release`
    (compare-and-delete: a lease that expired and was taken by another owner is not deleted)."""
    return _state.acquire(storage_key(key), milliseconds(ttl, "ttl"), fence=True)


async def aacquire(key: str, ttl: Duration) -> Optional[Lease]:
    return await _state.aacquire(storage_key(key), milliseconds(ttl, "ttl"), fence=True)


# ---------------------------------------------------------------------------------------------------------
# When guarded work last finished


def last_success(key: str) -> Optional[float]:
    """When guarded work on ``key`` last finished (epoch seconds, by the backend's clock), or None.

    :func:`run_once`, :func:`run_exclusive`, :func:`exclusive` and :func:`claimed_period` record it when
    the work returns without an exception: alert when it is older than a few periods, and a job that
    silently stopped running anywhere is noticed. Raises :class:`BackendError` when the backend cannot be
    asked (None without a backend)."""
    return _state.last_success(storage_key(key))


async def alast_success(key: str) -> Optional[float]:
    return await _state.alast_success(storage_key(key))
