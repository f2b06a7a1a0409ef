"""The configured backend, and the bounded, logged calls every guard makes through it."""
from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import Any, Optional

from ._bounded import acall_within, call_within
from ._common import BackendError
from ._lease import Lease

log = logging.getLogger("onceguard.guards")

_backend: Any = None
_timeout: float = 5.0
_warned_unconfigured = threading.Event()


def install(backend: Any, timeout: float) -> None:
    global _backend, _timeout
    _backend = backend
    _timeout = timeout


def backend() -> Any:
    return _backend


def timeout() -> float:
    return _timeout


def _token() -> str:
    return uuid.uuid4().hex


def _unconfigured(key: str) -> None:
    # Right on a laptop, wrong in a cluster: say so once per process, naming the fix.
    if not _warned_unconfigured.is_set():
        _warned_unconfigured.set()
        log.warning("%s: no claim backend is configured, so every claim succeeds and every replica runs "
                    "the work; call onceguard.guards.configure(redis=...) or configure(postgres=...) "
                    "at start-up", key)


def _skipped(key: str, error: Optional[BaseException]) -> None:
    if error is None:
        # The normal case on every replica but one: not worth more than debug.
        log.debug("%s: claimed by another replica; this run is skipped", key)
    else:
        # Not the normal case: every replica skips until the backend is back.
        log.warning("%s: claim backend unreachable, this run is skipped: %s", key, error)


def acquire(key: str, ttl_ms: int, fence: bool) -> Optional[Lease]:
    chosen = _backend
    token = _token()
    if chosen is None:
        _unconfigured(key)
        return Lease(key, token, 0, ttl_ms)
    sent_at = time.monotonic()

    def give_back(got: Optional[int]) -> None:
        if got is not None:  # landed after the caller gave up: nobody holds it, so free the key
            chosen.release(key, token)

    try:
        got = call_within(_timeout, lambda: chosen.acquire(key, token, ttl_ms, fence), give_back)
    except BackendError as error:
        _skipped(key, error)
        return None
    if got is None:
        _skipped(key, None)
        return None
    return Lease(key, token, got, ttl_ms, chosen, sent_at=sent_at)


async def aacquire(key: str, ttl_ms: int, fence: bool) -> Optional[Lease]:
    chosen = _backend
    token = _token()
    if chosen is None:
        _unconfigured(key)
        return Lease(key, token, 0, ttl_ms)
    sent_at = time.monotonic()

    async def give_back(got: Optional[int]) -> None:
        if got is not None:
            await chosen.arelease(key, token)

    try:
        got = await acall_within(_timeout, chosen.aacquire(key, token, ttl_ms, fence), give_back)
    except BackendError as error:
        _skipped(key, error)
        return None
    if got is None:
        _skipped(key, None)
        return None
    return Lease(key, token, got, ttl_ms, chosen, sent_at=sent_at)


def bounded(fn: Any) -> Any:
    """``fn()`` within the configured timeout (a :class:`BackendError` after it)."""
    return call_within(_timeout, fn)


async def abounded(awaitable: Any) -> Any:
    return await acall_within(_timeout, awaitable)


def mark_success(key: str) -> None:
    chosen = _backend
    if chosen is None:
        return
    try:
        call_within(_timeout, lambda: chosen.mark_success(key))
    except BackendError as error:
        log.warning("%s: could not record the last success: %s", key, error)


async def amark_success(key: str) -> None:
    chosen = _backend
    if chosen is None:
        return
    try:
        await acall_within(_timeout, chosen.amark_success(key))
    except BackendError as error:
        log.warning("%s: could not record the last success: %s", key, error)


def last_success(key: str) -> Optional[float]:
    chosen = _backend
    if chosen is None:
        return None
    found = call_within(_timeout, lambda: chosen.last_success_ms(key))
    return None if found is None else found / 1000


async def alast_success(key: str) -> Optional[float]:
    chosen = _backend
    if chosen is None:
        return None
    found = await acall_within(_timeout, chosen.alast_success_ms(key))
    return None if found is None else found / 1000
