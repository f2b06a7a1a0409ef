"""OG605: a registry of connections copied before the broadcast walks it.

``targets = list(self._screens)`` under the hub's lock, then ``for ws in targets: await ws.send_text(...)``: the
copy holds every connection of the registry, so sending to each is a broadcast to this process's clients only.
When the broadcast is fed by a subscription every replica holds (Redis pub/sub relayed to the local sockets),
each replica reaches its own clients and all of them are reached.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

HUB = """\
    import asyncio

    from fastapi import WebSocket


    class ScreenHub:
        def __init__(self) -> None:
            self._screens: set[WebSocket] = set()
            self._lock = asyncio.Lock()

        async def join(self, ws: WebSocket) -> None:
            await ws.accept()
            async with self._lock:
                self._screens.add(ws)

        async def leave(self, ws: WebSocket) -> None:
            async with self._lock:
                self._screens.discard(ws)

        async def push(self, payload: str) -> None:
            async with self._lock:
                targets = {copy}(self._screens)
            for ws in targets:
                await ws.send_text(payload)
"""

ROUTES = """\
    from fastapi import APIRouter, Request

    router = APIRouter()


    @router.post("/notices")
    async def post_notice(request: Request, text: str) -> dict:
        await request.app.state.hub.push(text)
        return {"ok": True}
"""

RELAY = """\
    from redis.asyncio import Redis

    from .hub import ScreenHub


    async def relay(hub: ScreenHub, redis: Redis) -> None:
        pubsub = redis.pubsub(ignore_subscribe_messages=True)
        await pubsub.subscribe("notices")
        async for message in pubsub.listen():
            await hub.push(message["data"])
"""


@pytest.mark.parametrize("copy", ["list", "tuple", "sorted"])
def test_a_broadcast_over_a_copy_of_the_registry(tmp_path, copy):
    write(tmp_path, {"board/__init__.py": "", "board/hub.py": HUB.replace("{copy}", copy),
                     "board/routes.py": ROUTES})
    assert findings(tmp_path, "board/hub.py", codes=("OG605",)) == [(23, "OG605")]


def test_a_broadcast_fed_by_a_subscription_every_replica_holds(tmp_path):
    write(tmp_path, {"board/__init__.py": "", "board/hub.py": HUB.replace("{copy}", "list"),
                     "board/relay.py": RELAY})
    assert findings(tmp_path, "board/hub.py", codes=("OG605",)) == []
