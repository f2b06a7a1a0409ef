"""Reach: a function a web framework hands the request (or an ASGI scope) to runs while a request is served.

Starlette, aiohttp and Litestar apps often route through a table in another module (``Route("/flags/{name}",
update_flag)``), where no decorator on the handler says it is one.  The handler's own parameter does:
``async def update_flag(request: Request)``.  So what it does (here clearing a per-process memo of shared data,
OG607) is request code, in every replica, without reading the table.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

FLAGS = """\
    import functools

    from flagsvc.db import engine


    @functools.lru_cache(maxsize=1)
    def load_flags():
        with engine.connect() as conn:
            return dict(conn.exec_driver_sql("SELECT name, enabled FROM flags").all())
"""

ROUTES = """\
    {imports}
    from starlette.responses import JSONResponse

    from flagsvc.flags import load_flags


    async def update_flag({parameter}):
        load_flags.cache_clear()
        return JSONResponse({{"ok": True}})
"""


@pytest.mark.parametrize("imports, parameter, expected", [
    ("from starlette.requests import Request", "request: Request", [(8, "OG607")]),
    ("from aiohttp import web", "request: web.Request", [(8, "OG607")]),
    ("import os", "name: str", []),  # (nothing says a request runs it)
])
def test_a_handler_known_by_its_request_parameter(tmp_path, imports, parameter, expected):
    write(tmp_path, {"flagsvc/__init__.py": "", "flagsvc/flags.py": FLAGS,
                     "flagsvc/db.py": "from sqlalchemy import create_engine\nengine = create_engine('postgresql://x/y')\n",
                     "flagsvc/routes.py": ROUTES.replace("{imports}", imports).replace("{parameter}", parameter)})
    assert findings(tmp_path, "flagsvc/routes.py", codes=("OG607",)) == expected


THROTTLE = """\
    import time
    from collections import deque

    from litestar.exceptions import {refusal}
    from litestar.middleware import ASGIMiddleware
    from litestar.types import ASGIApp, Receive, Scope, Send

    _attempts: dict[str, deque] = {{}}


    class LoginThrottle(ASGIMiddleware):
        async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
            now = time.monotonic()
            window = _attempts.setdefault(scope["client"][0], deque())
            while window and window[0] <= now - 60:
                window.popleft()
            if len(window) >= 5:
                raise {refusal}(detail="Too many login attempts")
            window.append(now)
            await next_app(scope, receive, send)
"""


@pytest.mark.parametrize("refusal, expected", [("TooManyRequestsException", [(8, "OG604")]),
                                               ("PermissionDeniedException", [])])
def test_litestars_429_refuses_past_a_limit(tmp_path, refusal, expected):
    write(tmp_path, {"gate/__init__.py": "", "gate/throttle.py": THROTTLE.replace("{refusal}", refusal)})
    assert findings(tmp_path, "gate/throttle.py", codes=("OG604",)) == expected
