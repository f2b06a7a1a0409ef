"""OG604: a limiter object kept in the application's state for the process's life.

aiohttp's ``app[SENDS] = SlidingWindow(5, 60)`` in a cleanup context, read by a handler as
``request.app[SENDS].hit(phone)`` and refused with ``HTTPTooManyRequests``; Starlette's ``app.state.sends =
SlidingWindow(...)`` in a lifespan, read as ``request.app.state.sends``: each process makes its own at start-up
and counts only the requests it serves.  A limiter whose class counts in Redis is shared.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

WINDOW = """\
    import time
    from collections import defaultdict, deque


    class SlidingWindow:
        def __init__(self, limit, window):
            self.limit = limit
            self.window = window
            self._hits = defaultdict(deque)

        async def hit(self, key):
            now = time.monotonic()
            hits = self._hits[key]
            while hits and now - hits[0] >= self.window:
                hits.popleft()
            if len(hits) >= self.limit:
                return False
            hits.append(now)
            return True
"""

SHARED_WINDOW = """\
    import redis.asyncio as redis


    class SlidingWindow:
        def __init__(self, limit, window):
            self.limit = limit
            self.window = window
            self._redis = redis.Redis()

        async def hit(self, key):
            count = await self._redis.incr(f"hits:{key}")
            if count == 1:
                await self._redis.expire(f"hits:{key}", self.window)
            return count <= self.limit
"""

AIOHTTP_APP = """\
    from aiohttp import web

    from .window import SlidingWindow

    SENDS = web.AppKey("sends", SlidingWindow)


    async def _resources(app):
        app[SENDS] = SlidingWindow(5, 60)
        yield


    async def send_code(request):
        phone = request.match_info["phone"]
        if not await request.app[SENDS].hit(phone):
            raise web.HTTPTooManyRequests(text="slow down")
        return web.json_response({"sent": True})


    def make_app():
        app = web.Application()
        app.cleanup_ctx.append(_resources)
        app.router.add_post("/codes/{phone}", send_code)
        return app
"""

STARLETTE_APP = """\
    from contextlib import asynccontextmanager

    from fastapi import FastAPI, HTTPException, Request

    from .window import SlidingWindow


    @asynccontextmanager
    async def lifespan(app):
        app.state.sends = SlidingWindow(5, 60)
        yield


    app = FastAPI(lifespan=lifespan)


    @app.post("/codes/{phone}")
    async def send_code(phone: str, request: Request):
        if not await request.app.state.sends.hit(phone):
            raise HTTPException(status_code=429, detail="slow down")
        return {"sent": True}
"""


@pytest.mark.parametrize("app, line", [(AIOHTTP_APP, 9), (STARLETTE_APP, 10)])
@pytest.mark.parametrize("window, flagged", [(WINDOW, True), (SHARED_WINDOW, False)])
def test_a_limiter_kept_in_the_application_state(tmp_path, app, line, window, flagged):
    write(tmp_path, {"otp/__init__.py": "", "otp/window.py": window, "otp/app.py": app})
    assert findings(tmp_path, "otp/app.py", codes=("OG604",)) == ([(line, "OG604")] if flagged else [])
