"""Process-local state reached one step further than the container.

- OG604: a module-level sliding window whose function answers how long to wait (not yes or no), and whose caller
  refuses with 429 when that answer is set.
- OG607: a `cachetools.TTLCache` on an object the app keeps for its life, holding one-time codes drawn with
  `secrets` by a function of the module: the code is mailed and checked later by whichever replica serves it.
- OG605: a list of per-client queues filled by a helper that a stream handler calls, the queue read by the
  generator the handler defines and hands to its response.
- OG201 (clean): an event-loop heartbeat that re-arms itself and only records a metric on an OpenTelemetry
  histogram, read through a property whose declared type is the instrument.

Beside each, the spelling that is not the hazard.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

QUOTA = """\
    import time
    from collections import defaultdict, deque

    _windows = defaultdict(deque)


    def take(key: str, limit: int = 100, window: float = 60.0):
        now = time.monotonic()
        seen = _windows[key]
        while seen and seen[0] <= now - window:
            seen.popleft()
        if len(seen) >= limit:
            return seen[0] + window - now
        seen.append(now)
        return None
"""

MIDDLEWARE = """\
    from django.http import JsonResponse

    from gate import quota


    class QuotaMiddleware:
        def __init__(self, get_response):
            self.get_response = get_response

        def __call__(self, request):
            wait = quota.take(request.headers.get("X-Key", ""))
            if {test}:
                return JsonResponse({"detail": "slow down"}, status=429)
            return self.get_response(request)
"""


@pytest.mark.parametrize("test, expected", [("wait is not None", [(4, "OG604")]), ("request.method == 'TRACE'", [])])
def test_a_limiter_answering_how_long_to_wait(tmp_path, test, expected):
    write(tmp_path, {"gate/__init__.py": "", "gate/quota.py": QUOTA,
                     "gate/middleware.py": MIDDLEWARE.replace("{test}", test)})
    assert findings(tmp_path, "gate/quota.py", codes=("OG604",)) == expected


CODES = """\
    import secrets

    from cachetools import TTLCache


    def draw() -> str:
        return {draw}


    class Codes:
        def __init__(self) -> None:
            self._pending = TTLCache(maxsize=10_000, ttl=300)

        def issue(self, email: str) -> str:
            code = draw()
            self._pending[email] = code
            return code

        def check(self, email: str, code: str) -> bool:
            return self._pending.pop(email, None) == code
"""

APP = """\
    from aiohttp import web

    from signin.codes import Codes

    CODES = web.AppKey("codes", Codes)


    async def request_code(request: web.Request) -> web.Response:
        body = await request.json()
        request.app[CODES].issue(body["email"])
        return web.json_response({"sent": True})


    async def verify(request: web.Request) -> web.Response:
        body = await request.json()
        if not request.app[CODES].check(body["email"], body["code"]):
            raise web.HTTPUnauthorized()
        return web.json_response({"ok": True})


    def make_app() -> web.Application:
        app = web.Application()
        app[CODES] = Codes()
        app.add_routes([web.post("/code", request_code), web.post("/verify", verify)])
        return app
"""


@pytest.mark.parametrize("draw, expected", [('f"{secrets.randbelow(1_000_000):06d}"', [(12, "OG607")]),
                                            ('"static"', [])])
def test_one_time_codes_drawn_here_and_checked_later(tmp_path, draw, expected):
    write(tmp_path, {"signin/__init__.py": "", "signin/codes.py": CODES.replace("{draw}", draw),
                     "signin/app.py": APP})
    assert findings(tmp_path, "signin/codes.py", codes=("OG607",)) == expected


HUB = """\
    import asyncio

    _listeners: list = []


    def listen() -> asyncio.Queue:
        queue = asyncio.Queue(maxsize=100)
        _listeners.append(queue)
        return queue


    async def announce(event: dict) -> None:
        for queue in list(_listeners):
            queue.put_nowait(event)
"""

ROUTES = """\
    from quart import Blueprint, make_response, request

    from board import hub

    bp = Blueprint("board", __name__)


    @bp.get("/events")
    async def events():
        inbox = hub.listen()

        async def stream():
            while True:
                item = {read}
                yield f"data: {item}\\n\\n".encode()

        return await make_response(stream(), {"Content-Type": "text/event-stream"})


    @bp.post("/events")
    async def post_event():
        await hub.announce(await request.get_json())
        return {"ok": True}, 202
"""


@pytest.mark.parametrize("read, expected", [("await inbox.get()", [(13, "OG605")]), ('"ping"', [])])
def test_a_stream_generator_defined_in_the_handler_reads_the_queue(tmp_path, read, expected):
    write(tmp_path, {"board/__init__.py": "", "board/hub.py": HUB, "board/routes.py": ROUTES.replace("{read}", read)})
    assert findings(tmp_path, "board/hub.py", codes=("OG605",)) == expected


METRICS = """\
    from opentelemetry import metrics
    from opentelemetry.metrics import Histogram


    class Instruments:
        def __init__(self) -> None:
            self._meter = metrics.get_meter("watch")

        @property
        def lag_ms(self) -> {declared}:
            return self._meter.create_histogram("lag_ms")
"""

WATCH = """\
    import asyncio
    import time

    from watch.metrics import Instruments


    class LoopWatch:
        def __init__(self) -> None:
            self._due = time.monotonic()

        def start(self) -> None:
            asyncio.get_running_loop().call_soon(self._beat)

        def _beat(self) -> None:
            now = time.monotonic()
            Instruments().lag_ms.record(max(0.0, now - self._due) * 1000)
            self._due = now + 1.0
            asyncio.get_running_loop().call_later(1.0, self._beat)


    async def main() -> None:
        LoopWatch().start()
        await asyncio.Event().wait()


    if __name__ == "__main__":
        asyncio.run(main())
"""


@pytest.mark.parametrize("declared, expected", [("Histogram", []), ("object", [(14, "OG201")])])
def test_a_heartbeat_that_only_records_its_own_metric(tmp_path, declared, expected):
    write(tmp_path, {"watch/__init__.py": "", "watch/metrics.py": METRICS.replace("{declared}", declared),
                     "watch/loop.py": WATCH, "Dockerfile": 'FROM python:3.11\nCMD ["python", "-m", "watch.loop"]\n'})
    assert findings(tmp_path, "watch/loop.py", codes=("OG201",)) == expected


STATE_APP = """\
    from starlette.applications import Starlette
    from starlette.middleware import Middleware

    from geo.middleware import RateLimitMiddleware


    def create_app() -> Starlette:
        app = Starlette(routes=[], middleware=[Middleware(RateLimitMiddleware, per_minute=60)])
        app.state.rate = {}
        return app
"""

STATE_MIDDLEWARE = """\
    import time

    from starlette.middleware.base import BaseHTTPMiddleware
    from starlette.responses import JSONResponse


    class RateLimitMiddleware(BaseHTTPMiddleware):
        def __init__(self, app, per_minute: int) -> None:
            super().__init__(app)
            self.per_minute = per_minute

        async def dispatch(self, request, call_next):
            window = int(time.time() // 60)
            counters = request.app.state.rate
            key = (request.client.host, window)
            counters[key] = counters.get(key, 0) + 1
            if counters[key] > self.per_minute:
                return JSONResponse({"detail": "slow down"}, status_code={status})
            return await call_next(request)
"""


@pytest.mark.parametrize("status, expected", [("429", [(9, "OG604")]), ("200", [])])
def test_counters_kept_in_the_application_state(tmp_path, status, expected):
    write(tmp_path, {"geo/__init__.py": "", "geo/app.py": STATE_APP,
                     "geo/middleware.py": STATE_MIDDLEWARE.replace("{status}", status)})
    assert findings(tmp_path, "geo/app.py", codes=("OG604",)) == expected


BUCKET = """\
    import time


    class TokenBucket:
        def __init__(self, rate: float, capacity: int) -> None:
            self.rate, self.capacity = rate, capacity
            self.tokens: dict = {}

        def consume(self, key: str) -> bool:
            now = time.monotonic()
            level, at = self.tokens.get(key, (self.capacity, now))
            level = min(self.capacity, level + (now - at) * self.rate)
            if level < 1:
                return False
            self.tokens[key] = (level - 1, now)
            return True
"""

MEMO_DEPS = """\
    from functools import lru_cache

    from quotes.bucket import TokenBucket


    @lru_cache
    def get_limiter() -> TokenBucket:
        return TokenBucket(rate=5, capacity=10)
"""

QUOTE_ROUTES = """\
    from fastapi import APIRouter, Depends, HTTPException

    from quotes.bucket import TokenBucket
    from quotes.deps import get_limiter

    router = APIRouter()
    REFUSED = HTTPException(status_code={status}, detail="slow down")


    @router.post("/quotes")
    async def quote(limiter: TokenBucket = Depends(get_limiter)) -> dict:
        if not limiter.consume("client"):
            raise REFUSED
        return {"price": 1}
"""


@pytest.mark.parametrize("status, expected", [("429", [(8, "OG604")]), ("403", [])])
def test_a_memoised_limiter_refused_through_a_module_level_exception(tmp_path, status, expected):
    write(tmp_path, {"quotes/__init__.py": "", "quotes/bucket.py": BUCKET, "quotes/deps.py": MEMO_DEPS,
                     "quotes/routes.py": QUOTE_ROUTES.replace("{status}", status)})
    assert findings(tmp_path, "quotes/deps.py", codes=("OG604",)) == expected
