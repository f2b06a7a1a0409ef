"""Durations, period keys, leases and the errors the guards share; no backend imports here."""
from __future__ import annotations

import datetime as _dt
import threading
import time
from typing import Union

Seconds = Union[int, float, _dt.timedelta]
Instant = Union[int, float, _dt.datetime, None]


class BackendError(Exception):
    """The configured backend could not be reached or answered with an error."""


class LeaseLost(Exception):
    """The lease expired or was taken over while the work ran: exclusivity was not guaranteed."""


def milliseconds(duration: Seconds, what: str = "duration") -> int:
    """A positive duration in whole milliseconds (Redis ``PX`` and the claims table both count them)."""
    if isinstance(duration, _dt.timedelta):
        seconds = duration.total_seconds()
    elif isinstance(duration, (int, float)) and not isinstance(duration, bool):
        seconds = float(duration)
    else:
        raise TypeError(f"{what} must be seconds (int or float) or a timedelta, not {type(duration).__name__}")
    ms = int(round(seconds * 1000))
    if ms <= 0:
        raise ValueError(f"{what} must be positive, got {duration!r}")
    return ms


def _epoch_ms(now: Instant) -> int:
    if now is None:
        return int(time.time() * 1000)
    if isinstance(now, _dt.datetime):
        if now.tzinfo is None:
            # A naive datetime means different instants on replicas in different zones: refuse it.
            raise ValueError("now must be timezone-aware (replicas must agree on the period)")
        return int(round(now.timestamp() * 1000))
    return int(round(float(now) * 1000))


def period_key(prefix: str, period: Seconds, now: Instant = None) -> str:
    """``prefix`` plus the UTC start of the period that contains ``now`` (default: the current time).

    Periods are aligned to the Unix epoch, so every replica computes the same key for the same period
    whatever the moment it woke: ``period_key("billing.renew", 300)`` at 06:47:12 is
    ``"billing.renew:2026-12-01T06:45:00Z"``.
    """
    period_ms = milliseconds(period, "period")
    start_ms = _epoch_ms(now) // period_ms * period_ms
    start = _dt.datetime.fromtimestamp(start_ms / 1000, tz=_dt.timezone.utc)
    if start_ms % 1000:
        stamp = start.strftime("%Y-%m-%dT%H:%M:%S.") + f"{start_ms % 1000:03d}Z"
    else:
        stamp = start.strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{prefix}:{stamp}"


class Lease:
    """An owned key: the owner token that release and renewal compare against, and a fencing token.

    ``fence`` grows with every acquisition anywhere (it is 0 when no backend is configured): pass it to the
    resource the work writes to, which rejects a write carrying a smaller fence than one it has seen, so a
    replica whose lease expired during a pause cannot overwrite a newer owner's work.
    ``lost`` is set when a renewal finds the lease gone; thread-based work checks it (or calls
    :meth:`check`) between steps, asyncio work is cancelled.
    """

    def __init__(self, key: str, token: str, fence: int, ttl_ms: int, backend: object = None) -> None:
        self.key = key
        self.token = token
        self.fence = fence
        self.ttl_ms = ttl_ms
        self.lost = threading.Event()
        self._backend = backend

    @property
    def is_lost(self) -> bool:
        return self.lost.is_set()

    def check(self) -> None:
        """Raise :class:`LeaseLost` when the lease is gone, so long work stops between steps."""
        if self.lost.is_set():
            raise LeaseLost(self.key)

    def renew(self) -> bool:
        """Extend the lease by its ttl if it is still this owner's; False when it is gone (or unreachable)."""
        if self._backend is None:
            return True
        try:
            return self._backend.renew(self.key, self.token, self.ttl_ms)  # type: ignore[attr-defined]
        except BackendError:
            return False

    def release(self) -> bool:
        """Delete the key if it is still this owner's (compare-and-delete); False otherwise."""
        if self._backend is None:
            return True
        try:
            return self._backend.release(self.key, self.token)  # type: ignore[attr-defined]
        except BackendError:
            return False

    async def arenew(self) -> bool:
        if self._backend is None:
            return True
        try:
            return await self._backend.arenew(self.key, self.token, self.ttl_ms)  # type: ignore[attr-defined]
        except BackendError:
            return False

    async def arelease(self) -> bool:
        if self._backend is None:
            return True
        try:
            return await self._backend.arelease(self.key, self.token)  # type: ignore[attr-defined]
        except BackendError:
            return False

    def __repr__(self) -> str:
        state = "lost" if self.lost.is_set() else "held"
        return f"<Lease {self.key!r} fence={self.fence} {state}>"

