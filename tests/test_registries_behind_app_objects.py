"""Registries of connections kept by an object the application holds: the sockets handed to a method of a
hub (a Sanic ``Websocket`` among the connection types), and queues a method makes, registers and hands back to
the WebSocket handler that serves them, reached through an application's own mapping (``app.extensions``)
where the receiver's class is not in view."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

HUB = """
    import asyncio
    from collections import defaultdict

    from sanic import Websocket


    class RoomHub:
        def __init__(self):
            self._rooms = defaultdict(set)

        def enter(self, room: str, ws: Websocket) -> None:
            self._rooms[room].add(ws)

        def exit(self, room: str, ws: Websocket) -> None:
            self._rooms[room].discard(ws)

        async def shout(self, room: str, text: str) -> None:
            members = list(self._rooms.get(room, ()))
            await asyncio.gather(*(ws.send(text) for ws in members), return_exceptions=True)
    """

HUB_VIEWS = """
    from sanic import Blueprint, Request, Websocket
    from sanic.response import json

    views = Blueprint("rooms")


    @views.post("/rooms/<room>/say")
    async def say(request: Request, room: str):
        await request.app.ctx.hub.shout(room, request.json["text"])
        return json({"ok": True})


    @views.websocket("/rooms/<room>/live")
    async def live(request: Request, ws: Websocket, room: str):
        request.app.ctx.hub.enter(room, ws)
        try:
            async for _ in ws:
                pass
        finally:
            request.app.ctx.hub.exit(room, ws)
    """


def test_sockets_a_hub_method_is_handed_are_its_registry(tmp_path):
    write(tmp_path, {"chat/__init__.py": "", "chat/hub.py": HUB, "chat/views.py": HUB_VIEWS})
    assert findings(tmp_path, "chat/hub.py", codes=("OG605",)) == [(20, "OG605")]


INBOXES = """
    import asyncio


    class Inboxes:
        def __init__(self):
            self._open = set()

        def open(self) -> asyncio.Queue:
            inbox = asyncio.Queue(maxsize=50)
            self._open.add(inbox)
            return inbox

        def close(self, inbox) -> None:
            self._open.discard(inbox)

        def post(self, note: str) -> None:
            for inbox in list(self._open):
                inbox.put_nowait(note)
    """

ROUTES = """
    from quart import Blueprint, current_app, request, websocket

    routes = Blueprint("notes", __name__)


    @routes.websocket("/notes")
    async def follow():
        inboxes = current_app.extensions["inboxes"]
        inbox = inboxes.open()
        try:
            while True:
                await websocket.send(await inbox.get())
        finally:
            inboxes.close(inbox)


    @routes.post("/notes")
    async def add_note():
        current_app.extensions["inboxes"].post((await request.get_json())["text"])
        return {"ok": True}
    """

# The same queues handed back to a function that drains them into a log file: no stream serves them.
ROUTES_DRAINED = """
    from quart import Blueprint, current_app, request

    routes = Blueprint("notes", __name__)


    async def archive(path):
        inboxes = current_app.extensions["inboxes"]
        inbox = inboxes.open()
        while True:
            line = await inbox.get()
            with open(path, "a") as handle:
                handle.write(line)


    @routes.post("/notes")
    async def add_note():
        current_app.extensions["inboxes"].post((await request.get_json())["text"])
        return {"ok": True}
    """


@pytest.mark.parametrize("routes, expected", [(ROUTES, [(18, "OG605")]), (ROUTES_DRAINED, [])])
def test_queues_a_method_hands_back_to_a_websocket_handler(tmp_path, routes, expected):
    write(tmp_path, {"board/__init__.py": "", "board/inboxes.py": INBOXES, "board/routes.py": routes})
    assert findings(tmp_path, "board/inboxes.py", codes=("OG605",)) == expected


RELAY = """
    import asyncio
    from collections import defaultdict

    import redis.asyncio as aioredis
    from sanic import Websocket


    class RoomRelay:
        def __init__(self, url: str):
            self._redis = aioredis.from_url(url)
            self._rooms = defaultdict(set)

        def enter(self, room: str, ws: Websocket) -> None:
            self._rooms[room].add(ws)

        async def shout(self, room: str, text: str) -> None:
            await self._redis.publish(f"room:{room}", text)

        async def pump(self) -> None:
            feed = self._redis.pubsub()
            await feed.psubscribe("room:*")
            async for message in feed.listen():
                if message["type"] != "pmessage":
                    continue
                room = message["channel"].decode().split(":", 1)[1]
                members = list(self._rooms.get(room, ()))
                await asyncio.gather(*(ws.send(message["data"]) for ws in members), return_exceptions=True)
    """

RELAY_APP = """
    from sanic import Sanic

    from .relay import RoomRelay

    app = Sanic("rooms")


    @app.after_server_start
    async def start_pump(app, _loop):
        app.ctx.relay = RoomRelay("redis://cache:6379/0")
        app.add_task(app.ctx.relay.pump())
    """


def test_a_relay_that_sends_each_message_to_its_own_sockets_in_a_comprehension(tmp_path):
    write(tmp_path, {"chat/__init__.py": "", "chat/relay.py": RELAY, "chat/app.py": RELAY_APP})
    assert findings(tmp_path, "chat/relay.py", codes=("OG602", "OG605")) == []
