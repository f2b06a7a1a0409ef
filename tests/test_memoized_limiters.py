"""OG604: a limiter object made by a memoised factory (``@lru_cache`` / ``@functools.cache``) is one per
process for the process's life, as a module-level limiter is; a handler that gets it from the factory (as a
FastAPI dependency or by calling it) and refuses with 429 counts in this process alone."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LIMITER = """\
    import time
    from collections import defaultdict, deque


    class Window:
        def __init__(self, limit, seconds=60.0):
            self.limit, self.seconds = limit, seconds
            self.hits = defaultdict(deque)

        def allow(self, key):
            now = time.monotonic()
            hits = self.hits[key]
            while hits and hits[0] <= now - self.seconds:
                hits.popleft()
            if len(hits) >= self.limit:
                return False
            hits.append(now)
            return True
"""

SHARED_LIMITER = """\
    class Window:
        def __init__(self, redis, limit, seconds=60):
            self.redis, self.limit, self.seconds = redis, limit, seconds

        def allow(self, key):
            count = self.redis.incr(key)
            if count == 1:
                self.redis.expire(key, self.seconds)
            return count <= self.limit
"""

DEPS = """\
    {imports}
    from typing import Annotated

    from fastapi import Depends, HTTPException

    from .limits import Window


    @{decorator}
    def get_window() -> Window:
        return Window({arguments})


    def enforce(client: str, {parameter}) -> str:
        if not window.allow(client):
            raise HTTPException(status_code=429, detail="slow down")
        return client
"""

PARAMETERS = {
    "annotated": "window: Annotated[Window, Depends(get_window)]",
    "default": "window: Window = Depends(get_window)",
}
DECORATORS = {
    "lru_cache": ("from functools import lru_cache", "lru_cache(maxsize=1)"),
    "functools.cache": ("import functools", "functools.cache"),
}


def _deps(parameter, decorator, arguments="limit=30"):
    imports, spelled = DECORATORS[decorator]
    return (DEPS.replace("{imports}", imports).replace("{decorator}", spelled)
            .replace("{parameter}", PARAMETERS[parameter]).replace("{arguments}", arguments))


@pytest.mark.parametrize("parameter", sorted(PARAMETERS))
@pytest.mark.parametrize("decorator", sorted(DECORATORS))
def test_a_memoised_limiter_handed_as_a_dependency(tmp_path, parameter, decorator):
    write(tmp_path, {"geo/__init__.py": "", "geo/limits.py": LIMITER, "geo/deps.py": _deps(parameter, decorator)})
    assert findings(tmp_path, "geo/deps.py", codes=("OG604",)) == [(11, "OG604")]


def test_a_memoised_limiter_called_by_the_handler_in_another_module(tmp_path):
    deps = """\
    from functools import lru_cache

    from .limits import Window


    @lru_cache
    def get_window():
        return Window(30)
"""
    view = """\
    from flask import Flask, abort, request

    from .deps import get_window as window_for

    app = Flask(__name__)


    @app.post("/lookup")
    def lookup():
        window = window_for()
        if not window.allow(request.remote_addr):
            abort(429)
        return {"ok": True}
"""
    write(tmp_path, {"geo/__init__.py": "", "geo/limits.py": LIMITER, "geo/deps.py": deps, "geo/views.py": view})
    assert findings(tmp_path, "geo/deps.py", codes=("OG604",)) == [(8, "OG604")]


def test_a_memoised_limiter_counting_in_redis(tmp_path):
    deps = _deps("annotated", "lru_cache", arguments="redis_client, limit=30").replace(
        "from .limits import Window", "from .limits import Window\nfrom .clients import redis_client")
    write(tmp_path, {"geo/__init__.py": "", "geo/limits.py": SHARED_LIMITER, "geo/deps.py": deps,
                     "geo/clients.py": "import redis\n\nredis_client = redis.Redis()\n"})
    assert findings(tmp_path, "geo/deps.py", codes=("OG604",)) == []


def test_a_factory_that_makes_a_new_limiter_each_call(tmp_path):
    # Without memoising, each request gets a fresh limiter: nothing is counted (a bug, not replica state).
    deps = _deps("annotated", "lru_cache").replace("@lru_cache(maxsize=1)\n", "")
    write(tmp_path, {"geo/__init__.py": "", "geo/limits.py": LIMITER, "geo/deps.py": deps})
    assert findings(tmp_path, "geo/deps.py", codes=("OG604",)) == []
