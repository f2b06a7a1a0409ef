"""A limiter object an app factory makes and hands straight to a project function that defines a request hook
over it and registers it (``install_quota(app, Window(60))``): one object for the process's life, refusing
with 429 on counts of this process alone (OG604)."""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

WINDOW = """
    import time
    from collections import deque


    class Window:
        def __init__(self, most: int, span: float = 60.0):
            self.most = most
            self.span = span
            self.seen = {}

        def admit(self, key: str) -> bool:
            now = time.monotonic()
            hits = self.seen.setdefault(key, deque())
            while hits and now - hits[0] >= self.span:
                hits.popleft()
            if len(hits) >= self.most:
                return False
            hits.append(now)
            return True
    """

HOOKS = """
    from sanic import Sanic
    from sanic.response import json

    from .window import Window


    def install_quota(app: Sanic, window: Window) -> None:
        async def quota(request):
            if not window.admit(request.headers.get("X-Key", "")):
                return json({"error": "slow down"}, status=429)
            return None

        app.register_middleware(quota, "request")
    """

FACTORY = """
    from sanic import Sanic

    from .hooks import install_quota
    from .window import Window


    def create_app() -> Sanic:
        app = Sanic("links")
        install_quota(app, Window(30))
        return app


    app = create_app()
    """


def test_a_limiter_an_app_factory_hands_to_a_hook(tmp_path):
    write(tmp_path, {"links/__init__.py": "", "links/window.py": WINDOW, "links/hooks.py": HOOKS,
                     "links/app.py": FACTORY})
    assert findings(tmp_path, "links/app.py", codes=("OG604",)) == [(10, "OG604")]
