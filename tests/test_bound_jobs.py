"""A job bound to a name before it is handed to the project's ticker (``job = partial(report, redis)``, then
``every_hour(job)``) is that function: its own leading claim makes it safe, and without one the finding names
it, as when the partial is written in the call."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

REPORTING = """\
    import asyncio
    from datetime import datetime, timezone

    import httpx


    async def report(redis, now):
        {claim}
        usage = await redis.hgetall("usage")
        async with httpx.AsyncClient() as client:
            await client.post("https://billing.example.com/usage", json=usage)


    async def every_hour(job):
        while True:
            await asyncio.sleep(3600)
            await job(datetime.now(timezone.utc))
"""

CLAIM = """if not await redis.set(f"usage:{now:%Y%m%d%H}", 1, nx=True, ex=7200):
            return"""

APP = """\
    import asyncio
    from contextlib import asynccontextmanager
    from functools import partial

    from fastapi import FastAPI
    from redis.asyncio import Redis

    from .reporting import every_hour, report


    @asynccontextmanager
    async def lifespan(app):
        redis = Redis.from_url("redis://cache")
        {bind}
        task = asyncio.create_task(every_hour(job))
        yield
        task.cancel()


    app = FastAPI(lifespan=lifespan)
"""

BINDINGS = {
    "partial": "job = partial(report, redis)",
    "lambda": "job = lambda now: report(redis, now)",
}


@pytest.mark.parametrize("binding", sorted(BINDINGS))
def test_a_bound_job_with_its_own_claim(tmp_path, binding):
    write(tmp_path, {"meter/__init__.py": "", "meter/reporting.py": REPORTING.replace("{claim}", CLAIM),
                     "meter/app.py": APP.replace("{bind}", BINDINGS[binding])})
    assert findings(tmp_path, "meter/app.py") == []


@pytest.mark.parametrize("binding", sorted(BINDINGS))
def test_a_bound_job_without_a_claim(tmp_path, binding):
    write(tmp_path, {"meter/__init__.py": "", "meter/reporting.py": REPORTING.replace("{claim}", "pass"),
                     "meter/app.py": APP.replace("{bind}", BINDINGS[binding])})
    assert findings(tmp_path, "meter/app.py") == [(15, "OG201")]
