"""Exclusive work: a lease renewed while the work runs; when it may be lost, the work is told or stopped."""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from contextlib import asynccontextmanager, contextmanager
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, Iterator, Optional

from . import _state
from ._bounded import acall_within, call_within
from ._common import BackendError, Duration, LeaseLost, milliseconds, storage_key
from ._lease import Lease

log = logging.getLogger("onceguard.guards")


def _lost(lease: Lease, why: str) -> None:
    lease.lost.set()
    log.warning("%s: lease lost (%s); the work is being stopped", lease.key, why)


def _renew_until(lease: Lease, stop: threading.Event) -> None:
    """Renew every ttl/3; declare the lease lost at its deadline (counted from when the last successful
    renewal was *sent*), before the server can hand it to anyone else."""
    interval = lease.ttl_ms / 3000
    backend = lease._backend
    while True:
        if stop.wait(min(interval, max(0.0, lease.deadline - time.monotonic()))):
            return
        if time.monotonic() >= lease.deadline:
            _lost(lease, "no renewal reached the backend before the lease's deadline")
            return
        sent_at = time.monotonic()
        try:
            renewed = call_within(max(0.001, lease.deadline - sent_at),
                                  lambda: backend.renew(lease.key, lease.token, lease.ttl_ms))
        except BackendError:
            continue  # tried again until the deadline
        if not renewed:
            _lost(lease, "expired or taken over")
            return
        lease._deadline = lease._deadline_from(sent_at)


@contextmanager
def exclusive(key: str, ttl: Duration) -> Iterator[Optional[Lease]]:
    """Hold an owner-token lease on ``key`` for the ``with`` block; ``None`` when another owner has it.

    ::

        with exclusive("reindex", ttl=60) as lease:
            if lease is None:
                return                      # another replica is at it
            for batch in batches():
                lease.check()               # LeaseLost once the lease may be gone
                write(batch, fence=lease.fence)

    A thread renews the lease every ttl/3. When a renewal finds it gone, or no renewal has succeeded by
    its deadline, ``lease.lost`` is set and ``lease.check()`` raises :class:`LeaseLost`; if the block ends
    normally after that, :class:`LeaseLost` is raised at its end. On leaving, the lease is released with
    compare-and-delete, and a normal end is recorded for :func:`last_success`."""
    stored = storage_key(key)
    lease = _state.acquire(stored, milliseconds(ttl, "ttl"), fence=True)
    if lease is None:
        yield None
        return
    stop = threading.Event()
    renewer = None
    if lease._backend is not None:
        renewer = threading.Thread(target=_renew_until, args=(lease, stop), name=f"onceguard-lease:{key}",
                                   daemon=True)
        renewer.start()
    try:
        yield lease
    finally:
        stop.set()
        if renewer is not None:
            renewer.join()
        lost = lease.is_lost
        if not lost:
            lease.release()
    if lost:
        raise LeaseLost(key)
    _state.mark_success(stored)


def run_exclusive(key: str, ttl: Duration, fn: Callable[[Lease], Any]) -> bool:
    """Run ``fn(lease)`` while holding an owner-token lease on ``key``; False when another owner has it.

    The same lease as :func:`exclusive`: ``fn`` checks ``lease.check()`` between steps; if the lease was
    lost on the way, :class:`LeaseLost` is raised when ``fn`` returns."""
    with exclusive(key, ttl) as lease:
        if lease is None:
            return False
        fn(lease)
    return True


async def _arenew_until(lease: Lease, task: "asyncio.Task[Any]", body: Dict[str, bool]) -> None:
    interval = lease.ttl_ms / 3000
    backend = lease._backend

    def stop_work(why: str) -> None:
        _lost(lease, why)
        if not body["done"]:
            task.cancel()

    while True:
        await asyncio.sleep(min(interval, max(0.0, lease.deadline - time.monotonic())))
        if time.monotonic() >= lease.deadline:
            stop_work("no renewal reached the backend before the lease's deadline")
            return
        sent_at = time.monotonic()
        try:
            renewed = await acall_within(max(0.001, lease.deadline - sent_at),
                                         backend.arenew(lease.key, lease.token, lease.ttl_ms))
        except BackendError:
            continue
        if not renewed:
            stop_work("expired or taken over")
            return
        lease._deadline = lease._deadline_from(sent_at)


@asynccontextmanager
async def aexclusive(key: str, ttl: Duration) -> AsyncIterator[Optional[Lease]]:
    """asyncio :func:`exclusive`: when the lease may be lost, the task running the block is cancelled at
    its next ``await`` and :class:`LeaseLost` is raised out of the block."""
    stored = storage_key(key)
    lease = await _state.aacquire(stored, milliseconds(ttl, "ttl"), fence=True)
    if lease is None:
        yield None
        return
    task = asyncio.current_task()
    body = {"done": False}
    renewer = None
    if lease._backend is not None and task is not None:
        renewer = asyncio.ensure_future(_arenew_until(lease, task, body))
    try:
        try:
            yield lease
        finally:
            body["done"] = True
    except asyncio.CancelledError:
        if lease.lost.is_set():
            if task is not None and hasattr(task, "uncancel"):
                task.uncancel()  # the cancellation was ours, not the caller's
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
    if lease.is_lost:
        raise LeaseLost(key)
    await _state.amark_success(stored)


async def arun_exclusive(key: str, ttl: Duration, fn: Callable[[Lease], Awaitable[Any]]) -> bool:
    """asyncio :func:`run_exclusive`: ``await fn(lease)`` is cancelled when the lease may be lost, and then
    :class:`LeaseLost` is raised."""
    async with aexclusive(key, ttl) as lease:
        if lease is None:
            return False
        await fn(lease)
    return True
