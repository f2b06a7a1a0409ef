"""OG605: a registry of connections kept in the application's own state.

aiohttp's ``app["clients"]`` and Starlette's ``app.state.clients`` live once per process, as a module does: a
WebSocket handler that puts the connection it serves there (directly or through a local name) makes it a
registry of this process's connections, and a request that sends to every member of it reaches only the
clients of the replica that served it.  A key no handler puts a connection into is no registry.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SOCKETS = """\
    from aiohttp import web


    async def lobby(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        members = request.app["{key}"]
        members.add(ws)
        try:
            async for _ in ws:
                pass
        finally:
            members.discard(ws)
        return ws
"""

ANNOUNCE = """\
    from aiohttp import web


    async def announce(request: web.Request) -> web.Response:
        text = (await request.json())["text"]
        for ws in list(request.app["clients"]):
            await ws.send_json({"text": text})
        return web.json_response({"ok": True})
"""


@pytest.mark.parametrize("key, expected", [("clients", [(6, "OG605")]), ("sessions", [])])
def test_an_aiohttp_app_key_a_websocket_handler_fills(tmp_path, key, expected):
    write(tmp_path, {"lobby/__init__.py": "", "lobby/sockets.py": SOCKETS.replace("{key}", key),
                     "lobby/announce.py": ANNOUNCE})
    assert findings(tmp_path, "lobby/announce.py", codes=("OG605",)) == expected


STARLETTE = """\
    from fastapi import FastAPI, Request, WebSocket

    app = FastAPI()
    app.state.watchers = set()


    @app.websocket("/watch")
    async def watch(websocket: WebSocket):
        await websocket.accept()
        websocket.app.state.watchers.add(websocket)
        try:
            while True:
                await websocket.receive_text()
        finally:
            websocket.app.state.watchers.discard(websocket)


    @app.post("/notify")
    async def notify(request: Request):
        body = await request.json()
        for watcher in tuple(request.app.state.{read}):
            await watcher.send_json(body)
"""


@pytest.mark.parametrize("read, expected", [("watchers", [(21, "OG605")]), ("subscribers", [])])
def test_a_starlette_app_state_attribute(tmp_path, read, expected):
    write(tmp_path, {"watch/__init__.py": "", "watch/main.py": STARLETTE.replace("{read}", read)})
    assert findings(tmp_path, "watch/main.py", codes=("OG605",)) == expected
