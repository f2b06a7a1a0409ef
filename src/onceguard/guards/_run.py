"""Work run at most once per period: ``run_once`` (kept after success, freed after failure) and the
``@claimed_period`` decorator (the first replica to ask in a period runs the function)."""
from __future__ import annotations

import asyncio
import functools
from typing import Any, Awaitable, Callable, Coroutine, Optional, TypeVar, overload

from . import _state
from ._common import storage_key
from ._periods import Instant, Period, Zone, claim_ttl_ms, epoch_ms, window

from typing import ParamSpec

P = ParamSpec("P")
R = TypeVar("R")


def _period_claim_ms(period: Period, now: Instant, tz: Zone) -> "tuple[str, int]":
    found = window(period, epoch_ms(now) / 1000, tz)
    return found.name, claim_ttl_ms(found, epoch_ms(None))


def run_once(key: str, period: Period, fn: Callable[[], Any], *, now: Instant = None, tz: Zone = None) -> bool:
    """Run ``fn`` unless this period's key was already claimed; True when it ran here.

    The key stays after success, so a replica that wakes late cannot repeat the period; an exception frees
    it, so another replica (or the next tick) can retry. What it does not cover: a replica killed while
    running keeps the key until the period ends plus a margin (nobody retries that period), and work that
    runs longer than its period can overlap the next period's run (use :func:`exclusive` for that)."""
    name, ttl_ms = _period_claim_ms(period, now, tz)
    lease = _state.acquire(storage_key(f"{key}:{name}"), ttl_ms, fence=False)
    if lease is None:
        return False
    try:
        fn()
    except BaseException:
        lease.release()
        raise
    _state.mark_success(storage_key(key))
    return True


async def arun_once(key: str, period: Period, fn: Callable[[], Awaitable[Any]], *, now: Instant = None,
                    tz: Zone = None) -> bool:
    name, ttl_ms = _period_claim_ms(period, now, tz)
    lease = await _state.aacquire(storage_key(f"{key}:{name}"), ttl_ms, fence=False)
    if lease is None:
        return False
    try:
        await fn()
    except BaseException:
        await asyncio.shield(lease.arelease())
        raise
    await _state.amark_success(storage_key(key))
    return True


class claimed_period:
    """Decorator: the function runs only for the first caller in each period; others get ``None``.

    ::

        @scheduler.scheduled_job("cron", minute="*/5")
        @claimed_period("billing.renew", "5m")
        def renew_subscriptions() -> None: ...

        @claimed_period("reports.daily", "day", tz="America/New_York")
        async def send_daily_report() -> None: ...

    Sync and ``async def`` functions alike. A run that returns normally is recorded for
    :func:`last_success`. The period is checked when the function is decorated, so a mistaken period
    fails at import, not at the first tick."""

    def __init__(self, key: str, period: Period, *, tz: Zone = None) -> None:
        window(period, None, tz)  # a bad period or zone raises here
        self.key = key
        self.period = period
        self.tz = tz

    @overload
    def __call__(self, fn: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, Coroutine[Any, Any, Optional[R]]]:
        ...

    @overload
    def __call__(self, fn: Callable[P, R]) -> Callable[P, Optional[R]]:
        ...

    def __call__(self, fn: Callable[P, Any]) -> Callable[P, Any]:
        key, period, tz = self.key, self.period, self.tz
        stored = storage_key(key)
        if asyncio.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def run_claimed_async(*args: P.args, **kwargs: P.kwargs) -> Any:
                name, ttl_ms = _period_claim_ms(period, None, tz)
                if await _state.aacquire(storage_key(f"{key}:{name}"), ttl_ms, fence=False) is None:
                    return None
                result = await fn(*args, **kwargs)
                await _state.amark_success(stored)
                return result

            return run_claimed_async

        @functools.wraps(fn)
        def run_claimed(*args: P.args, **kwargs: P.kwargs) -> Any:
            name, ttl_ms = _period_claim_ms(period, None, tz)
            if _state.acquire(storage_key(f"{key}:{name}"), ttl_ms, fence=False) is None:
                return None
            result = fn(*args, **kwargs)
            _state.mark_success(stored)
            return result

        return run_claimed

