"""OG604: a hand-written limiter kept at module level, asked from another module, whose "no" becomes a 429
through an exception or a returned tuple.

``from shop.limits import resend_limiter`` in the service module, ``if not await resend_limiter.allow(phone):
raise TooManyResends(...)`` there, and the web layer's ``except TooManyResends: return jsonify(...), 429`` (or
an error handler registered for the exception): every replica keeps its own window of hits, so N replicas allow
N times the limit.  Reported where the limiter is bound.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LIMITS = """\
    import time
    from collections import defaultdict, deque


    class Window:
        def __init__(self, limit: int, seconds: float) -> None:
            self.limit = limit
            self.seconds = seconds
            self._hits = defaultdict(deque)

        async def allow(self, key: str) -> bool:
            now = time.monotonic()
            hits = self._hits[key]
            while hits and now - hits[0] > self.seconds:
                hits.popleft()
            if len(hits) >= self.limit:
                return False
            hits.append(now)
            return True


    resend_limiter = Window(limit=3, seconds=3600)
"""

SERVICE = """\
    from shop.limits import resend_limiter


    class TooManyResends(Exception):
        pass


    async def resend_code(phone: str, send) -> None:
        if not await resend_limiter.allow(phone):
            raise TooManyResends(phone)
        await send(phone)
"""

WEB_EXCEPT = """\
    from quart import Quart, jsonify

    from shop.service import TooManyResends, resend_code

    app = Quart(__name__)


    @app.post("/codes/<phone>")
    async def resend(phone: str):
        try:
            await resend_code(phone, print)
        except TooManyResends:
            return jsonify(error="slow down"), 429
        return jsonify(status="sent"), 202
"""

WEB_HANDLER = """\
    from quart import Quart, jsonify

    from shop import service

    app = Quart(__name__)


    @app.errorhandler(service.TooManyResends)
    async def too_many(error):
        return jsonify(error="slow down"), 429


    @app.post("/codes/<phone>")
    async def resend(phone: str):
        await service.resend_code(phone, print)
        return jsonify(status="sent"), 202
"""


def _project(tmp_path, web: str, service: str = SERVICE) -> None:
    write(tmp_path, {"shop/__init__.py": "", "shop/limits.py": LIMITS, "shop/service.py": service,
                     "shop/web.py": web})


@pytest.mark.parametrize("web", [WEB_EXCEPT, WEB_HANDLER], ids=["except-returns-429", "error-handler"])
def test_a_limiter_asked_in_another_module_and_refused_through_an_exception(tmp_path, web):
    _project(tmp_path, web)
    assert findings(tmp_path, "shop/limits.py", codes=("OG604",)) == [(22, "OG604")]


def test_an_exception_answered_otherwise_is_no_rate_limit(tmp_path):
    _project(tmp_path, WEB_EXCEPT.replace("429", "409"))
    assert findings(tmp_path, "shop/limits.py", codes=("OG604",)) == []


def test_a_limiter_in_a_shared_store_is_left_alone(tmp_path):
    shared = LIMITS.replace("self._hits = defaultdict(deque)", "self._redis = None")
    write(tmp_path, {"shop/__init__.py": "", "shop/limits.py": shared.replace(
        """            now = time.monotonic()
            hits = self._hits[key]
            while hits and now - hits[0] > self.seconds:
                hits.popleft()
            if len(hits) >= self.limit:
                return False
            hits.append(now)
            return True""", """            count = await self._redis.incr(f"hits:{key}:{int(time.time() // self.seconds)}")
            return count <= self.limit"""), "shop/service.py": SERVICE, "shop/web.py": WEB_EXCEPT})
    assert findings(tmp_path, "shop/limits.py", codes=("OG604",)) == []


def test_a_returned_tuple_with_429_is_a_refusal_in_the_asking_function(tmp_path):
    web = """\
    from flask import Flask, jsonify

    from shop.limits import resend_limiter

    app = Flask(__name__)


    @app.post("/codes/<phone>")
    async def resend(phone: str):
        if not await resend_limiter.allow(phone):
            return jsonify(error="slow down"), 429
        return jsonify(status="sent"), 202
"""
    write(tmp_path, {"shop/__init__.py": "", "shop/limits.py": LIMITS, "shop/web.py": web})
    assert findings(tmp_path, "shop/limits.py", codes=("OG604",)) == [(22, "OG604")]
