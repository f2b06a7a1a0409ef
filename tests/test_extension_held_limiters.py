"""OG604: a limiter object an app factory keeps in Flask's ``app.extensions`` registry (or Sanic's ``app.ctx``) for
the process's life, read back by a request hook or decorator of another module (``current_app.extensions[...]``)
that answers 429: each worker process of each replica makes its own and counts only the requests it serves.  A
limiter whose class counts in Redis is shared by all of them."""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

WINDOW = """
    import time
    from collections import deque


    class CallWindow:
        def __init__(self, most: int, span: float) -> None:
            self.most = most
            self.span = span
            self.calls = {}

        def admit(self, who: str) -> bool:
            now = time.monotonic()
            calls = self.calls.setdefault(who, deque())
            while calls and now - calls[0] > self.span:
                calls.popleft()
            if len(calls) >= self.most:
                return False
            calls.append(now)
            return True
    """

SHARED_WINDOW = """
    import redis


    class CallWindow:
        def __init__(self, most: int, span: float) -> None:
            self.most = most
            self.span = span
            self.store = redis.Redis(host="cache")

        def admit(self, who: str) -> bool:
            used = self.store.incr(f"calls:{who}")
            if used == 1:
                self.store.expire(f"calls:{who}", int(self.span))
            return used <= self.most
    """

FACTORY = """
    from flask import Flask

    from .window import CallWindow


    def build_app() -> Flask:
        app = Flask(__name__)
        app.extensions["call_window"] = CallWindow(most=30, span=60.0)
        from .routes import pages
        app.register_blueprint(pages)
        return app
    """

# the decorator reads the registry entry into a local and sets the status on the response it builds
DECORATOR = """
    import functools

    from flask import current_app, jsonify, request


    def metered(view):
        @functools.wraps(view)
        def inner(*args, **kwargs):
            window = current_app.extensions["call_window"]
            if not window.admit(request.headers.get("X-Client", "")):
                reply = jsonify(error="slow down")
                reply.status_code = 429
                return reply
            return view(*args, **kwargs)
        return inner
    """

ROUTES = """
    from flask import Blueprint

    from .metering import metered

    pages = Blueprint("pages", __name__)


    @pages.get("/lookup")
    @metered
    def lookup():
        return {"ok": True}
    """

# the same registry read in one piece by a hook that aborts (another import style)
HOOK = """
    import flask

    from .metering import metered  # noqa: F401


    def install(bp: flask.Blueprint) -> None:
        @bp.before_request
        def meter():
            if not flask.current_app.extensions["call_window"].admit(flask.request.remote_addr or ""):
                flask.abort(429)
    """

SANIC_APP = """
    from sanic import Sanic
    from sanic.exceptions import SanicException

    from .window import CallWindow

    app = Sanic("pages")


    @app.before_server_start
    async def setup(app, _loop):
        app.ctx.call_window = CallWindow(most=30, span=60.0)


    @app.get("/lookup")
    async def lookup(request):
        if not request.app.ctx.call_window.admit(request.ip):
            raise SanicException("slow down", status_code=429)
        return {"ok": True}
    """


@pytest.mark.parametrize("window, flagged", [(WINDOW, True), (SHARED_WINDOW, False)])
def test_a_limiter_kept_in_the_extensions_registry(tmp_path, window, flagged):
    write(tmp_path, {"pages/__init__.py": "", "pages/window.py": window, "pages/app.py": FACTORY,
                     "pages/metering.py": DECORATOR, "pages/routes.py": ROUTES})
    assert findings(tmp_path, "pages/app.py", codes=("OG604",)) == ([(9, "OG604")] if flagged else [])


@pytest.mark.parametrize("metering, expected", [
    (HOOK, [(9, "OG604")]),
    # an entry no handler refuses on is no limit
    (DECORATOR.replace("reply.status_code = 429", "reply.status_code = 200"), []),
])
def test_the_entry_read_by_a_hook_or_a_decorator(tmp_path, metering, expected):
    write(tmp_path, {"pages/__init__.py": "", "pages/window.py": WINDOW, "pages/app.py": FACTORY,
                     "pages/metering.py": metering, "pages/routes.py": ROUTES})
    assert findings(tmp_path, "pages/app.py", codes=("OG604",)) == expected


@pytest.mark.parametrize("window, flagged", [(WINDOW, True), (SHARED_WINDOW, False)])
def test_a_limiter_kept_on_the_sanic_context(tmp_path, window, flagged):
    write(tmp_path, {"pages/__init__.py": "", "pages/window.py": window, "pages/app.py": SANIC_APP})
    assert findings(tmp_path, "pages/app.py", codes=("OG604",)) == ([(12, "OG604")] if flagged else [])
