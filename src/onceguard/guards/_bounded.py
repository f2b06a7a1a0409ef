"""Calls to a backend that return within a bounded time, whatever the backend does.

A claim sits in front of a scheduled tick: a backend that hangs (a table locked by a migration, a frozen
server behind a pool, a client made without socket timeouts) must cost one skipped tick, not a tick that
never ends. Sync calls run in a short-lived daemon thread the caller stops waiting for; asyncio calls are
awaited with a timeout. A claim the caller stopped waiting for may still land later: ``on_late_success``
then gives it back (compare-and-delete with its token), so a period is not held by a claim nobody has.
"""
from __future__ import annotations

import asyncio
import threading
from typing import Any, Awaitable, Callable, Dict, Optional, TypeVar

from ._common import BackendError

T = TypeVar("T")


def call_within(seconds: float, fn: Callable[[], T],
                on_late_success: Optional[Callable[[T], None]] = None) -> T:
    """``fn()`` if it returns within ``seconds``; otherwise :class:`BackendError` (and ``fn`` goes on)."""
    outcome: Dict[str, Any] = {}
    done = threading.Event()
    state = threading.Lock()  # decides, exactly once, who hands back a late success
    flags = {"gave_up": False}

    def hand_back() -> None:
        if "value" in outcome and on_late_success is not None:
            try:
                on_late_success(outcome["value"])
            except Exception:  # noqa: BLE001 - best effort, nobody is waiting any more
                pass

    def run() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as error:  # noqa: BLE001 - handed to the caller below
            outcome["error"] = error
        with state:
            done.set()
            late = flags["gave_up"]
        if late:
            hand_back()

    worker = threading.Thread(target=run, name="onceguard-backend-call", daemon=True)
    worker.start()
    if not done.wait(seconds):
        with state:
            flags["gave_up"] = not done.is_set()
        if flags["gave_up"]:
            raise BackendError(f"no answer within {seconds:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]


async def acall_within(seconds: float, awaitable: Awaitable[T],
                       on_late_success: Optional[Callable[[T], Awaitable[Any]]] = None) -> T:
    """``await awaitable`` if it completes within ``seconds``; otherwise :class:`BackendError`."""
    task = asyncio.ensure_future(awaitable)
    done, _ = await asyncio.wait({task}, timeout=seconds)
    if task in done:
        return task.result()
    if on_late_success is None:
        task.cancel()
    else:
        def give_back(finished: "asyncio.Future[T]") -> None:
            if not finished.cancelled() and finished.exception() is None:
                asyncio.ensure_future(on_late_success(finished.result()))

        task.add_done_callback(give_back)
    raise BackendError(f"no answer within {seconds:g} s")
