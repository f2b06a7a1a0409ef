"""OG201: a project's own ``repeat_every``-style decorator.

A decorator whose def keeps, in a nested def, a loop that calls the function it was handed and sleeps, with no
way out, makes the decorated function a ticker's job: the process that calls the decorated name (a lifespan, a
start-up hook) runs it on every tick, in every replica.  A retry decorator loops and sleeps too, but returns the
first result: it repeats nothing once the call succeeds.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

ASYNC_TICKER = """\
    import asyncio
    import functools


    def every(*, seconds):
        def decorate(job):
            async def spin():
                while True:
                    try:
                        await job()
                    except Exception:
                        pass
                    await asyncio.sleep(seconds)

            @functools.wraps(job)
            async def begin():
                return asyncio.create_task(spin())

            return begin

        return decorate
"""

THREAD_TICKER = """\
    import threading
    import time


    def every(*, seconds):
        def decorate(job):
            def begin():
                def spin():
                    while True:
                        job()
                        time.sleep(seconds)

                threading.Thread(target=spin, daemon=True).start()

            return begin

        return decorate
"""

RETRY = """\
    import asyncio


    def every(*, seconds):
        def decorate(job):
            async def begin():
                attempts = 0
                while attempts < 5:
                    try:
                        return await job()
                    except ConnectionError:
                        attempts += 1
                        await asyncio.sleep(seconds)

            return begin

        return decorate
"""

JOBS = """\
    import httpx

    from .periodic import every


    @every(seconds=3600)
    {sync}def push_usage():
        {call}
"""

MAIN = """\
    from contextlib import asynccontextmanager

    from fastapi import FastAPI

    from .jobs import push_usage


    @asynccontextmanager
    async def lifespan(app):
        {start}
        yield


    app = FastAPI(lifespan=lifespan)
"""


@pytest.mark.parametrize("periodic, sync, call, start, reported", [
    (ASYNC_TICKER, "async ", 'await httpx.AsyncClient().post("https://billing.example/usage")',
     "await push_usage()", [(7, "OG201")]),
    (THREAD_TICKER, "", 'httpx.post("https://billing.example/usage")', "push_usage()", [(7, "OG201")]),
    (RETRY, "async ", 'await httpx.AsyncClient().post("https://billing.example/usage")',
     "await push_usage()", []),
])
def test_a_decorator_that_repeats_what_it_decorates(tmp_path, periodic, sync, call, start, reported):
    write(tmp_path, {"meter/__init__.py": "", "meter/periodic.py": periodic,
                     "meter/jobs.py": JOBS.replace("{sync}", sync).replace("{call}", call),
                     "meter/main.py": MAIN.replace("{start}", start)})
    assert findings(tmp_path, "meter/jobs.py", codes=("OG201",)) == reported


def test_the_decorated_job_that_claims_first_is_clean(tmp_path):
    jobs = """\
        import httpx
        from onceguard.guards import aclaim_period

        from .periodic import every


        @every(seconds=3600)
        async def push_usage():
            if not await aclaim_period("meter.push_usage", 3600):
                return
            await httpx.AsyncClient().post("https://billing.example/usage")
    """
    write(tmp_path, {"meter/__init__.py": "", "meter/periodic.py": ASYNC_TICKER, "meter/jobs.py": jobs,
                     "meter/main.py": MAIN.replace("{start}", "await push_usage()")})
    assert findings(tmp_path, "meter/jobs.py", codes=("OG201",)) == []
