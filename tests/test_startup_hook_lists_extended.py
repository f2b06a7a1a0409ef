"""aiohttp's start-up lists filled several at a time (``app.cleanup_ctx.extend([open_pool, start_refresher])``,
``app.on_startup.extend((...))``): each element is a hook, as one appended is, so a loop a hook starts runs in
every replica."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SERVER = """
    import asyncio

    from aiohttp import web

    from .mirror import PriceMirror


    async def open_pool(app):
        app["pool"] = object()
        yield


    async def start_mirror(app):
        mirror = PriceMirror("https://prices.invalid")
        task = asyncio.create_task(mirror.keep_pushing(60))
        yield
        task.cancel()


    async def quiet(app):
        app["ready"] = True
        yield


    def build() -> web.Application:
        app = web.Application()
        app.{hooks}.extend({listed})
        return app
    """

MIRROR = """
    import asyncio

    import httpx


    class PriceMirror:
        def __init__(self, base: str) -> None:
            self._client = httpx.AsyncClient(base_url=base)

        async def push_all(self) -> None:
            await self._client.put("/prices", json={"all": True})

        async def keep_pushing(self, seconds: float) -> None:
            while True:
                await self.push_all()
                await asyncio.sleep(seconds)
    """


@pytest.mark.parametrize("hooks, listed", [
    ("cleanup_ctx", "[open_pool, start_mirror]"),
    ("cleanup_ctx", "(start_mirror, open_pool)"),
])
def test_a_ticker_started_by_a_hook_of_an_extended_list(tmp_path, hooks, listed):
    write(tmp_path, {"shop/__init__.py": "", "shop/server.py": SERVER.format(hooks=hooks, listed=listed),
                     "shop/mirror.py": MIRROR})
    assert (16, "OG201") in findings(tmp_path, "shop/server.py")


def test_an_extended_list_of_hooks_that_start_no_loop(tmp_path):
    write(tmp_path, {"shop/__init__.py": "", "shop/server.py": SERVER.format(hooks="cleanup_ctx",
                                                                                listed="[open_pool, quiet]"),
                     "shop/mirror.py": MIRROR})
    assert findings(tmp_path, "shop/server.py") == []


def test_a_list_extended_that_is_no_start_up_hook(tmp_path):
    later = "        app['later'] = []\n        app['later'].extend([start_mirror])\n"
    source = SERVER.format(hooks="cleanup_ctx", listed="[open_pool]").replace(
        "        return app\n", later + "        return app\n")
    write(tmp_path, {"shop/__init__.py": "", "shop/server.py": source, "shop/mirror.py": MIRROR})
    assert findings(tmp_path, "shop/server.py") == []
