"""OG605: the queue of a server-sent-event stream handed out by a context manager.

``@asynccontextmanager async def subscribe(self, room): inbox = asyncio.Queue(); self._rooms[room].add(inbox);
yield inbox`` entered by the stream's generator (``async with hub.subscribe(room) as inbox: ... await
inbox.get()``): each queue is one client's connection, so ``publish`` putting a message in every queue of the
registry reaches this process's clients only.  Fed by a subscription every replica holds, it reaches them all.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

HUB = """\
    import asyncio
    from collections import defaultdict
    from contextlib import asynccontextmanager


    class RoomHub:
        def __init__(self):
            self._rooms = defaultdict(set)

        @asynccontextmanager
        async def subscribe(self, room):
            inbox = asyncio.Queue()
            self._rooms[room].add(inbox)
            try:
                yield inbox
            finally:
                self._rooms[room].discard(inbox)

        async def publish(self, room, message):
            for inbox in tuple(self._rooms.get(room, ())):
                inbox.put_nowait(message)


    hub = RoomHub()
"""

STREAM = """\
    from fastapi import APIRouter
    from fastapi.responses import StreamingResponse

    from .hub import hub

    router = APIRouter()


    async def _events(room):
        async with hub.subscribe(room) as {name}:
            while True:
                message = await {read}
                yield f"data: {message}\\n\\n"


    @router.get("/rooms/{room}/events")
    async def events(room: str):
        return StreamingResponse(_events(room), media_type="text/event-stream")


    @router.post("/rooms/{room}/messages")
    async def post_message(room: str, text: str):
        await hub.publish(room, text)
        return {"ok": True}
"""


@pytest.mark.parametrize("name, read, reported", [
    ("inbox", "inbox.get()", [(20, "OG605")]),
    ("feed", "feed.get()", [(20, "OG605")]),
    ("inbox", "asyncio.sleep(1)", []),
])
def test_a_queue_a_context_manager_hands_to_a_stream(tmp_path, name, read, reported):
    write(tmp_path, {"chat/__init__.py": "", "chat/hub.py": HUB,
                     "chat/routes.py": STREAM.replace("{name}", name).replace("{read}", read)})
    assert findings(tmp_path, "chat/hub.py", codes=("OG605",)) == reported
