"""A lease: an owned key with an owner token, a fencing token, and a deadline the owner can trust.

The server counts a lease's ttl from when a request *reached* it. The owner cannot know that moment, only
when it *sent* the request, which is earlier; so the owner's deadline is the send time plus the ttl, minus
a margin for clock-rate drift and scheduling. Before the server can expire the lease, its owner already
treats it as lost: a partitioned or stalled owner stops before a new owner can start.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Optional

from ._common import BackendError, LeaseLost


def safety_margin_ms(ttl_ms: int) -> int:
    """What the owner gives up of each ttl: a tenth of it, at most a second, at least 5 ms."""
    return max(5, min(ttl_ms // 10, 1000))


class Lease:
    """An owned key: the owner token that release and renewal compare against, and a fencing token.

    ``fence`` grows with every acquisition of the key, also across a restart of the backend (it is 0 when
    no backend is configured): pass it to the resource the work writes to, which rejects a write carrying
    a smaller fence than one it has seen, so a replica whose lease expired during a pause cannot
    overwrite a newer owner's work. ``lost`` is set when the lease may be gone (a renewal found it gone,
    or its deadline passed without a renewal); thread-based work checks it (or calls :meth:`check`)
    between steps, asyncio work is cancelled.
    """

    def __init__(self, key: str, token: str, fence: int, ttl_ms: int, backend: Any = None,
                 sent_at: Optional[float] = None) -> None:
        self.key = key
        self.token = token
        self.fence = fence
        self.ttl_ms = ttl_ms
        self.lost = threading.Event()
        self._backend = backend
        self._deadline = self._deadline_from(time.monotonic() if sent_at is None else sent_at)

    def _deadline_from(self, sent_at: float) -> float:
        return sent_at + (self.ttl_ms - safety_margin_ms(self.ttl_ms)) / 1000

    @property
    def deadline(self) -> float:
        """``time.monotonic()`` value after which the lease may belong to someone else."""
        return self._deadline

    @property
    def is_lost(self) -> bool:
        if self._backend is not None and not self.lost.is_set() and time.monotonic() >= self._deadline:
            self.lost.set()
        return self.lost.is_set()

    def check(self) -> None:
        """Raise :class:`LeaseLost` when the lease is gone or may be, so long work stops between steps.

        Also true after a stall longer than the ttl (a long C call, a paused VM) even when nothing has
        noticed yet: the deadline has passed, so the write that would follow could carry a stale fence."""
        if self.is_lost:
            raise LeaseLost(self.key)

    def renew(self) -> bool:
        """Extend the lease by its ttl if it is still this owner's; False when it is gone (or unreachable)."""
        if self._backend is None:
            return True
        sent_at = time.monotonic()
        try:
            renewed = bool(self._backend.renew(self.key, self.token, self.ttl_ms))
        except BackendError:
            return False
        if renewed:
            self._deadline = self._deadline_from(sent_at)
        return renewed

    def release(self) -> bool:
        """Delete the key if it is still this owner's (compare-and-delete); False otherwise."""
        if self._backend is None:
            return True
        try:
            return bool(self._backend.release(self.key, self.token))
        except BackendError:
            return False

    async def arenew(self) -> bool:
        if self._backend is None:
            return True
        sent_at = time.monotonic()
        try:
            renewed = bool(await self._backend.arenew(self.key, self.token, self.ttl_ms))
        except BackendError:
            return False
        if renewed:
            self._deadline = self._deadline_from(sent_at)
        return renewed

    async def arelease(self) -> bool:
        if self._backend is None:
            return True
        try:
            return bool(await self._backend.arelease(self.key, self.token))
        except BackendError:
            return False

    def __repr__(self) -> str:
        state = "lost" if self.lost.is_set() else "held"
        return f"<Lease {self.key!r} fence={self.fence} {state}>"
