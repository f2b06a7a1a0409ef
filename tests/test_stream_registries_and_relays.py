"""Queues of event streams a Sanic handler serves (``await request.respond(...)`` opens the request's stream) kept
by an object the application holds: a webhook that puts a message into each of them reaches this process's
streams only (OG605, and not OG608: the registry is OG605's to say).  When only a relay of a pub/sub channel
calls that method, each replica delivers to its own streams: a function of another module sharing the method's
name (``relay.deliver``) and a Redis client's method of that name (``redis.deliver`` is none) are no callers."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

FANOUT = """
    import asyncio


    class Fanout:
        def __init__(self):
            self._streams = {}

        def follow(self, parcel: str) -> asyncio.Queue:
            inbox = asyncio.Queue(maxsize=16)
            self._streams.setdefault(parcel, set()).add(inbox)
            return inbox

        def drop(self, parcel: str, inbox) -> None:
            self._streams.get(parcel, set()).discard(inbox)

        def deliver(self, parcel: str, note: dict) -> None:
            for inbox in list(self._streams.get(parcel, ())):
                inbox.put_nowait(note)
    """

ROUTES = """
    from sanic import Blueprint, Request
    from sanic.response import json

    from . import relay

    routes = Blueprint("parcels")


    @routes.get("/parcels/<parcel>/stream")
    async def stream(request: Request, parcel: str):
        inbox = request.app.ctx.fanout.follow(parcel)
        try:
            response = await request.respond(content_type="text/event-stream")
            while True:
                note = await inbox.get()
                await response.send(f"data: {note}\\n\\n")
        finally:
            request.app.ctx.fanout.drop(parcel, inbox)


    @routes.post("/hooks/carrier")
    async def carrier(request: Request):
        {send}
        return json({"ok": True})
    """

RELAY = """
    import json

    from redis.asyncio import Redis

    CHANNEL = "parcels"


    async def deliver(redis: Redis, parcel: str, note: dict) -> None:
        await redis.publish(CHANNEL, json.dumps({"parcel": parcel, "note": note}))


    async def pump(redis: Redis, fanout) -> None:
        feed = redis.pubsub()
        await feed.subscribe(CHANNEL)
        async for message in feed.listen():
            body = json.loads(message["data"])
            fanout.deliver(body["parcel"], body["note"])
    """

LOCAL = 'request.app.ctx.fanout.deliver(request.json["parcel"], request.json)'
SHARED = 'await relay.deliver(request.app.ctx.redis, request.json["parcel"], request.json)'


@pytest.mark.parametrize("send, expected", [(LOCAL, [(18, "OG605")]), (SHARED, [])])
def test_stream_queues_of_a_sanic_handler(tmp_path, send, expected):
    write(tmp_path, {"parcels/__init__.py": "", "parcels/fanout.py": FANOUT, "parcels/relay.py": RELAY,
                     "parcels/routes.py": ROUTES.replace("{send}", send)})
    assert findings(tmp_path, "parcels/fanout.py", codes=("OG605", "OG608")) == expected
