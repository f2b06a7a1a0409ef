"""A middleware class is handed to the framework, which makes one instance of it per process: what the instance
keeps on ``self`` is per-process state, and a window of hits kept there to refuse with 429 allows N times the
limit behind N processes (OG604), however the class is registered."""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

THROTTLE = """
    import time
    from collections import defaultdict, deque

    from starlette.responses import PlainTextResponse


    class HitWindow:
        def __init__(self, app, per_minute: int = 60) -> None:
            self.app = app
            self.per_minute = per_minute
            self._recent = defaultdict(deque)

        async def __call__(self, scope, receive, send):
            if scope["type"] != "http":
                return await self.app(scope, receive, send)
            client = scope["client"][0]
            now = time.monotonic()
            hits = self._recent[client]
            while hits and now - hits[0] > 60:
                hits.popleft()
            if len(hits) >= self.per_minute:
                return await PlainTextResponse("slow down", status_code=429)(scope, receive, send)
            hits.append(now)
            await self.app(scope, receive, send)
    """

LISTED = """
    from starlette.applications import Starlette
    from starlette.middleware import Middleware

    from .throttle import HitWindow

    app = Starlette(middleware=[Middleware(HitWindow, per_minute=120)])
    """

ADDED = """
    from fastapi import FastAPI

    from search import throttle as limits

    app = FastAPI()
    app.add_middleware(limits.HitWindow, per_minute=120)
    """

UNREGISTERED = """
    from starlette.applications import Starlette

    app = Starlette()
    """


def _project(tmp_path, app):
    write(tmp_path, {"search/__init__.py": "", "search/throttle.py": THROTTLE, "search/app.py": app})


def test_a_middleware_listed_for_the_application(tmp_path):
    _project(tmp_path, LISTED)
    assert findings(tmp_path, "search/throttle.py", codes=("OG604",)) == [(12, "OG604")]


def test_a_middleware_added_through_a_module_alias(tmp_path):
    _project(tmp_path, ADDED)
    assert findings(tmp_path, "search/throttle.py", codes=("OG604",)) == [(12, "OG604")]


def test_a_class_no_registration_names_is_not_known_to_live_long(tmp_path):
    _project(tmp_path, UNREGISTERED)
    assert findings(tmp_path, "search/throttle.py", codes=("OG604",)) == []


DJANGO_THROTTLE = """
    import time

    from django.http import HttpResponse


    class LoginThrottle:
        def __init__(self, get_response):
            self.get_response = get_response
            self._attempts = {}

        def __call__(self, request):
            if request.path == "/login/" and request.method == "POST":
                ip = request.META.get("REMOTE_ADDR", "")
                now = time.time()
                recent = [t for t in self._attempts.get(ip, []) if now - t < 300]
                if len(recent) >= 5:
                    return HttpResponse("too many attempts", status=429)
                recent.append(now)
                self._attempts[ip] = recent
            return self.get_response(request)
    """

SETTINGS = """
    INSTALLED_APPS = ["django.contrib.auth", "accounts"]
    MIDDLEWARE = [
        "django.middleware.common.CommonMiddleware",
        "accounts.throttle.LoginThrottle",
    ]
    ROOT_URLCONF = "site_urls"
    """


def test_a_django_middleware_named_in_the_settings(tmp_path):
    write(tmp_path, {"accounts/__init__.py": "", "accounts/throttle.py": DJANGO_THROTTLE,
                     "settings.py": SETTINGS})
    assert findings(tmp_path, "accounts/throttle.py", codes=("OG604",)) == [(10, "OG604")]
