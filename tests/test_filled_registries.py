"""OG605: a module-level set of connections is a registry whoever fills it. aiohttp's handler makes the
connection it serves (``ws = web.WebSocketResponse()``), and the handler that adds it may live in another
module than the set and the broadcast (``hub.subscribers.add(ws)`` beside ``from . import hub``)."""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

HUB = """\
    import asyncio
    import json

    from aiohttp import web

    watchers: set[web.WebSocketResponse] = set()


    async def push(event):
        text = json.dumps(event)
        open_ones = [w for w in watchers if not w.closed]
        await asyncio.gather(*(w.send_str(text) for w in open_ones))
"""

HANDLER = """\
    from aiohttp import web

    from {imported}


    async def follow(request):
        sock = web.WebSocketResponse()
        await sock.prepare(request)
        {container}.add(sock)
        try:
            async for _ in sock:
                pass
        finally:
            {container}.discard(sock)
        return sock
"""

PUBLISH = """\
    from aiohttp import web

    from tally import hub as live


    async def publish(request):
        await live.push(await request.json())
        return web.json_response({"ok": True})
"""

SAME_MODULE = """\
    import json

    from aiohttp import web

    watchers = set()


    async def follow(request):
        sock = web.WebSocketResponse()
        await sock.prepare(request)
        watchers.add(sock)
        async for _ in sock:
            pass
        watchers.discard(sock)
        return sock


    async def publish(request):
        text = json.dumps(await request.json())
        for w in list(watchers):
            await w.send_str(text)
        return web.json_response({"ok": True})
"""


def _project(tmp_path, imported, container):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'tally'\n", "tally/__init__.py": "",
                     "tally/hub.py": HUB, "tally/publish.py": PUBLISH,
                     "tally/sockets.py": HANDLER.format(imported=imported, container=container)})


def test_a_registry_filled_by_a_handler_of_another_module(tmp_path):
    _project(tmp_path, ". import hub", "hub.watchers")
    assert findings(tmp_path, "tally/hub.py", codes=("OG605",)) == [(12, "OG605")]


def test_the_container_imported_by_name(tmp_path):
    _project(tmp_path, "tally.hub import watchers", "watchers")
    assert findings(tmp_path, "tally/hub.py", codes=("OG605",)) == [(12, "OG605")]


def test_a_set_no_handler_puts_a_connection_into_is_no_registry(tmp_path):
    _project(tmp_path, "tally.hub import watchers", "print")
    assert findings(tmp_path, "tally/hub.py", codes=("OG605",)) == []


def test_the_connection_an_aiohttp_handler_makes_is_the_one_it_serves(tmp_path):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'tally'\n", "tally/__init__.py": "",
                     "tally/live.py": SAME_MODULE})
    assert findings(tmp_path, "tally/live.py", codes=("OG605",), cross_file=False) == [(20, "OG605")]
