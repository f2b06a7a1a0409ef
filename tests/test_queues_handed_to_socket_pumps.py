"""A WebSocket handler takes a per-client queue from a hub's registering method and hands it to a helper that
reads the queue and sends each message on to the connection (``create_task(forward(ws, inbox))``), or to the
generator of the event stream it answers with (``StreamingResponse(relay(inbox))``): the queue
stands for the connection as much as one the handler reads itself, so a hub method that puts a message into
every registered queue reaches only this replica's clients (OG605).  A queue handed to a helper that serves
no client (no connection of its own, no stream) is no connection."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

HUB = """
    import asyncio
    from collections import defaultdict


    class Lobby:
        def __init__(self) -> None:
            self._inboxes = defaultdict(set)

        def join(self, room: str) -> asyncio.Queue:
            inbox: asyncio.Queue = asyncio.Queue(maxsize=64)
            self._inboxes[room].add(inbox)
            return inbox

        def leave(self, room: str, inbox: asyncio.Queue) -> None:
            self._inboxes[room].discard(inbox)

        async def shout(self, room: str, note: dict) -> None:
            for inbox in list(self._inboxes.get(room, ())):
                inbox.put_nowait(note)


    lobby = Lobby()
    """

FORWARD = """
    async def forward(ws: WebSocket, inbox: asyncio.Queue) -> None:
        while True:
            await ws.send_json(await inbox.get())
    """

ROUTES = """
    import asyncio

    from fastapi import FastAPI, WebSocket
    {imports}
    from chat.hub import lobby

    app = FastAPI()
    {forward}

    @app.websocket("/rooms/{{room}}")
    async def room_feed(ws: WebSocket, room: str) -> None:
        await ws.accept()
        inbox = lobby.join(room)
        sender = asyncio.create_task(forward(ws, inbox))
        try:
            while True:
                await ws.receive_text()
        finally:
            sender.cancel()
            lobby.leave(room, inbox)


    @app.post("/rooms/{{room}}/notes")
    async def post_note(room: str, note: dict) -> dict:
        await lobby.shout(room, note)
        return {{"ok": True}}
    """


@pytest.mark.parametrize("imports, forward", [
    ("", FORWARD),  # the pump beside the handler
    ("from chat.pumps import forward", ""),  # the pump in a module of its own
])
def test_a_queue_handed_to_a_pump_that_sends_on_the_socket(tmp_path, imports, forward):
    files = {"chat/__init__.py": "", "chat/hub.py": HUB,
             "chat/routes.py": ROUTES.format(imports=imports, forward=forward.replace("\n    ", "\n    ", 1))}
    if imports:
        files["chat/pumps.py"] = "\n    import asyncio\n\n    from fastapi import WebSocket\n\n" + FORWARD
    write(tmp_path, files)
    assert findings(tmp_path, "chat/hub.py", codes=("OG605",)) == [(19, "OG605")]


ARCHIVER = """
    async def archive(inbox: asyncio.Queue) -> None:
        while True:
            note = await inbox.get()
            print("archived", note)
    """


def test_a_queue_handed_to_a_helper_that_serves_no_client_is_no_connection(tmp_path):
    routes = ROUTES.format(imports="", forward=ARCHIVER).replace("forward(ws, inbox)", "archive(inbox)")
    write(tmp_path, {"chat/__init__.py": "", "chat/hub.py": HUB, "chat/routes.py": routes})
    assert findings(tmp_path, "chat/hub.py", codes=("OG605",)) == []


STREAM = """
    import asyncio

    from fastapi import FastAPI
    from fastapi.responses import StreamingResponse

    from chat.hub import lobby

    app = FastAPI()


    async def relay(inbox: asyncio.Queue):
        while True:
            note = await inbox.get()
            yield f"data: {note}\\n\\n"


    @app.get("/rooms/{room}/events")
    async def room_events(room: str) -> StreamingResponse:
        return StreamingResponse(relay(lobby.join(room)), media_type="text/event-stream")


    @app.get("/rooms/{room}/stream")
    async def room_stream(room: str) -> StreamingResponse:
        inbox = lobby.join(room)
        return StreamingResponse(relay(inbox), media_type="text/event-stream")


    @app.post("/rooms/{room}/notes")
    async def post_note(room: str, note: dict) -> dict:
        await lobby.shout(room, note)
        return {"ok": True}
    """


def test_a_queue_handed_to_the_generator_of_a_stream(tmp_path):
    write(tmp_path, {"chat/__init__.py": "", "chat/hub.py": HUB, "chat/streams.py": STREAM})
    assert findings(tmp_path, "chat/hub.py", codes=("OG605",)) == [(19, "OG605")]
