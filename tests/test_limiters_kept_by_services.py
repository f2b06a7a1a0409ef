"""A hand-written limiter handed at start-up to a service the application keeps in its state: the service lives
as long as the process, and so does the limiter's per-key history, one per worker process. A handler that asks
the service and refuses with 429 on its answer limits each process on its own. A limiter counting in Redis, or
a service whose asked method never consults the limiter, is not reported."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

WINDOW = """
    import time


    class AttemptWindow:
        def __init__(self, allowed: int, seconds: float) -> None:
            self.allowed = allowed
            self.seconds = seconds
            self.seen = {}

        def admit(self, who: str) -> bool:
            now = time.time()
            recent = [t for t in self.seen.get(who, []) if t > now - self.seconds]
            if len(recent) >= self.allowed:
                return False
            recent.append(now)
            self.seen[who] = recent
            return True
    """

SHARED_WINDOW = """
    import time


    class AttemptWindow:
        def __init__(self, redis, allowed: int, seconds: float) -> None:
            self.redis = redis
            self.allowed = allowed
            self.seconds = seconds

        def admit(self, who: str) -> bool:
            bucket = f"attempts:{who}:{int(time.time() // self.seconds)}"
            count = self.redis.incr(bucket)
            self.redis.expire(bucket, int(self.seconds))
            return count <= self.allowed
    """

SERVICE = """
    class LoginGuard:
        def __init__(self, window, audit) -> None:
            self.window = window
            self.audit = audit

        def may_try(self, user: str) -> bool:
            {asks}

        def note(self, user: str) -> None:
            self.audit.append(user)
    """

FACTORY = """
    from quart import Quart

    from .guard import LoginGuard
    from .window import AttemptWindow
    from .views import register


    def build() -> Quart:
        app = Quart(__name__)
        register(app)

        @app.before_serving
        async def start() -> None:
            {made}

        return app
    """

VIEWS = """
    from quart import current_app, request


    def register(app) -> None:
        @app.post("/login")
        async def login():
            user = (await request.get_json())["user"]
            if not current_app.extensions["guard"].may_try(user):
                return {"error": "slow down"}, 429
            return {"ok": True}
    """

MADE_BY_KEYWORD = 'app.extensions["guard"] = LoginGuard(window=AttemptWindow(5, 60), audit=[])'
MADE_BY_POSITION = 'app.extensions["guard"] = LoginGuard(AttemptWindow(5, 60), [])'


def project(tmp_path, window=WINDOW, asks="return self.window.admit(user)", made=MADE_BY_KEYWORD):
    write(tmp_path, {
        "auth/__init__.py": "",
        "auth/window.py": window,
        "auth/guard.py": SERVICE.format(asks=asks),
        "auth/app.py": FACTORY.format(made=made),
        "auth/views.py": VIEWS,
    })


@pytest.mark.parametrize("made", [MADE_BY_KEYWORD, MADE_BY_POSITION])
def test_a_limiter_kept_by_a_service_in_the_application_state(tmp_path, made):
    project(tmp_path, made=made)
    assert findings(tmp_path, "auth/window.py", codes=("OG604",)) == [(9, "OG604")]


def test_a_limiter_counting_in_redis_is_not(tmp_path):
    project(tmp_path, window=SHARED_WINDOW, made=MADE_BY_KEYWORD.replace("AttemptWindow(", "AttemptWindow(None, "))
    assert findings(tmp_path, "auth/window.py", codes=("OG604",)) == []


def test_a_service_whose_asked_method_ignores_the_limiter_is_not(tmp_path):
    project(tmp_path, asks="return bool(user)")
    assert findings(tmp_path, "auth/window.py", codes=("OG604",)) == []


def test_a_limiter_made_per_request_is_not(tmp_path):
    project(tmp_path, made="guard = LoginGuard(window=AttemptWindow(5, 60), audit=[])")
    assert findings(tmp_path, "auth/window.py", codes=("OG604",)) == []
