"""OG605: the queue a connection's handler reads its messages from stands for that connection, whether the reader
is a streaming generator, a WebSocket handler that sends what it takes on its socket (Quart's ``websocket`` is
the connection the handler serves), or a handler writing to the aiohttp ``StreamResponse`` it opened.  Kept in a
module's set or the application's state, such queues are a registry of this process's connections."""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

HUB = """\
    import asyncio

    _listeners: set = set()


    def join() -> asyncio.Queue:
        inbox: asyncio.Queue = asyncio.Queue(maxsize=100)
        _listeners.add(inbox)
        return inbox


    def leave(inbox: asyncio.Queue) -> None:
        _listeners.discard(inbox)


    async def announce(text: str) -> None:
        for inbox in list(_listeners):
            inbox.put_nowait(text)
"""

QUART_ROUTES = """\
    from quart import Blueprint, request, websocket

    from hall import hub

    bp = Blueprint("hall", __name__)


    @bp.websocket("/ws")
    async def listen():
        inbox = hub.join()
        try:
            while True:
                {deliver}
        finally:
            hub.leave(inbox)


    @bp.post("/announce")
    async def post():
        await hub.announce((await request.get_json())["text"])
        return {"ok": True}
"""


@pytest.mark.parametrize("deliver, expected", [
    ("await websocket.send(await inbox.get())", [(17, "OG605")]),
    # the queue is read, but what it holds goes nowhere a client sees: no connection of this process
    ("print(await inbox.get())", []),
])
def test_a_quart_websocket_handler_reading_a_registered_queue(tmp_path, deliver, expected):
    write(tmp_path, {"hall/__init__.py": "", "hall/hub.py": HUB,
                     "hall/routes.py": QUART_ROUTES.replace("{deliver}", deliver)})
    assert findings(tmp_path, "hall/hub.py", codes=("OG605",)) == expected


STREAM = """\
    import asyncio

    from aiohttp import web


    async def stream(request: web.Request) -> web.StreamResponse:
        inbox: asyncio.Queue = asyncio.Queue()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        request.app["{key}"].append(inbox)
        try:
            while True:
                event = await inbox.get()
                await response.write(f"data: {event}\\n\\n".encode())
        finally:
            request.app["{key}"].remove(inbox)
        return response
"""

PUBLISH = """\
    from aiohttp import web


    async def publish(request: web.Request) -> web.Response:
        event = await request.text()
        for inbox in list(request.app["feeds"]):
            inbox.put_nowait(event)
        return web.json_response({"ok": True}, status=202)
"""


@pytest.mark.parametrize("key, expected", [("feeds", [(6, "OG605")]), ("drafts", [])])
def test_an_aiohttp_event_stream_registering_its_queue_in_the_app(tmp_path, key, expected):
    write(tmp_path, {"feed/__init__.py": "", "feed/stream.py": STREAM.replace("{key}", key),
                     "feed/publish.py": PUBLISH})
    assert findings(tmp_path, "feed/publish.py", codes=("OG605",)) == expected
