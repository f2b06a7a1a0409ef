"""A Redis client the application keeps for every request (Flask's ``app.extensions["redis"]``, Starlette's
``app.state.redis``) is that client wherever it is read back (``current_app.extensions["redis"]``,
``request.app.state.redis``): a counter read with GET and written back with SET through it is a lost update
(OG301); INCR is not."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

FLASK_FACTORY = """\
    import redis
    from flask import Flask

    from meter.limits import install


    def create_app() -> Flask:
        app = Flask(__name__)
        app.extensions["redis"] = redis.Redis.from_url("redis://cache:6379/0")
        install(app)
        return app
"""

FLASK_LIMITS = """\
    from flask import Flask, current_app, request


    def install(app: Flask) -> None:
        @app.before_request
        def count_call():
            r = current_app.extensions["redis"]
            key = "calls:" + request.headers.get("X-Key", "anonymous")
            {count}
"""

STARLETTE_APP = """\
    from contextlib import asynccontextmanager

    from fastapi import FastAPI, Request
    from redis.asyncio import Redis


    @asynccontextmanager
    async def lifespan(app: FastAPI):
        app.state.redis = Redis.from_url("redis://cache:6379/0")
        yield


    app = FastAPI(lifespan=lifespan)


    @app.post("/visits/{{page}}")
    async def visit(page: str, request: Request) -> dict:
        r = request.app.state.redis
        {count}
        return {{"ok": True}}
"""

READ_THEN_WRITE = "used = int(r.get(key) or 0)\n            r.set(key, used + 1, ex=3600)"
ASYNC_READ_THEN_WRITE = "seen = int(await r.get(page) or 0)\n        await r.set(page, seen + 1)"


@pytest.mark.parametrize("count, expected", [
    (READ_THEN_WRITE, [(10, "OG301")]),
    ("r.incr(key)", []),
])
def test_a_client_flask_keeps_in_its_extensions(tmp_path, count, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'meter'\n", "meter/__init__.py": "",
                     "meter/app.py": FLASK_FACTORY, "meter/limits.py": FLASK_LIMITS.format(count=count)})
    assert findings(tmp_path, "meter/limits.py", codes=("OG301",)) == expected


@pytest.mark.parametrize("count, expected", [
    (ASYNC_READ_THEN_WRITE, [(20, "OG301")]),
    ("await r.incr(page)", []),
])
def test_a_client_kept_on_app_state(tmp_path, count, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'meter'\n", "meter/__init__.py": "",
                     "meter/app.py": STARLETTE_APP.format(count=count)})
    assert findings(tmp_path, "meter/app.py", codes=("OG301",)) == expected
