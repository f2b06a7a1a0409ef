"""OG608: a count of what is live in this process, read by another request.

A WebSocket handler counts a client in as it connects (``_online[room] += 1``) and out as it leaves (``-= 1``);
an HTTP endpoint reads the count as "who is online".  Each replica counts only its own connections, so the
answer depends on which replica serves the request.  Followed through helpers of another module; a count only
its own writers read is left alone.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

PRESENCE = """\
    from collections import Counter

    _online: Counter = Counter()


    def joined(room: str) -> None:
        _online[room] += 1


    def left(room: str) -> None:
        _online[room] -= 1
        if _online[room] <= 0:
            del _online[room]


    def online_count(room: str) -> int:
        return _online.get(room, 0)
"""

SERVER = """\
    from fastapi import FastAPI, WebSocket

    from rooms import presence

    app = FastAPI()


    @app.websocket("/rooms/{room}")
    async def room_socket(websocket: WebSocket, room: str):
        await websocket.accept()
        presence.joined(room)
        try:
            while True:
                await websocket.receive_text()
        finally:
            presence.left(room)
    {reader}
"""

READER = """
    @app.get("/rooms/{room}/online")
    async def online(room: str):
        return {"online": presence.online_count(room)}
"""


@pytest.mark.parametrize("reader, expected", [(READER, [(3, "OG608")]), ("", [])])
def test_a_count_of_connections_read_by_another_request(tmp_path, reader, expected):
    write(tmp_path, {"rooms/__init__.py": "", "rooms/presence.py": PRESENCE,
                     "rooms/server.py": SERVER.replace("    {reader}\n", reader)})
    presence = PRESENCE if reader else PRESENCE.replace(
        "def online_count(room: str) -> int:\n        return _online.get(room, 0)", "")
    write(tmp_path, {"rooms/presence.py": presence})
    assert findings(tmp_path, "rooms/presence.py", codes=("OG608",)) == expected
