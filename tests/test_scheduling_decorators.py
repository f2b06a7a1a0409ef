"""OG201 and OG607 across a project's own helpers.

A decorator of the project that hands the function it decorates to a library scheduler -- itself, or through a
wrapper that calls it (``schedule.every(m).minutes.do(runner)``) -- makes each decorated function that
scheduler's job: judged where it is decorated, by its own leading claim, not the wrapper's call of an unknown
callable.  A worker loop that calls a helper which only pumps the scheduler (``schedule.run_pending()``) runs
those jobs, each judged where it is registered; the pass itself does no work of its own.

A Flask-Caching ``Cache`` whose configuration (a config class's ``CACHE_TYPE``) names the in-memory backend is
a per-process store like a cachetools cache, also when another module imports it and keeps job statuses there
under keys its callers mint.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

TIMERS = """\
    import functools
    import logging

    import schedule

    log = logging.getLogger(__name__)


    def every(minutes):
        def decorator(func):
            @functools.wraps(func)
            def runner():
                try:
                    return func()
                except Exception:
                    log.exception("job %s failed", func.__name__)

            schedule.every(minutes).minutes.do({handed})
            return func

        return decorator


    def pump():
        schedule.run_pending()
"""

WORKER = """\
    import time

    from . import totals  # noqa: F401  (registers the jobs)
    from .timers import pump


    def main():
        while True:
            pump()
            time.sleep(1)


    if __name__ == "__main__":
        main()
"""

COMPOSE = """\
    services:
      worker:
        image: example/app
        command: python -m app.worker
        deploy:
          replicas: 2
"""

UNCLAIMED = """\
    from . import client
    from .timers import every


    @every(minutes=60)
    def push_totals():
        client.post_totals()
"""

CLAIMED = """\
    from . import client
    from .broker import redis_client
    from .timers import every


    @every(minutes=60)
    def push_totals():
        lock = redis_client.lock("push-totals", timeout=600)
        if not lock.acquire(blocking=False):
            return
        try:
            client.post_totals()
        finally:
            lock.release()
"""


def _project(tmp_path, job: str, handed: str) -> None:
    write(tmp_path, {
        "app/__init__.py": "",
        "app/timers.py": TIMERS.replace("{handed}", handed),
        "app/totals.py": job,
        "app/worker.py": WORKER,
        "app/client.py": "import httpx\n\n\ndef post_totals():\n    httpx.post('http://ledger/totals', json={})\n",
        "app/broker.py": "import redis\n\nredis_client = redis.Redis()\n",
        "docker-compose.yml": COMPOSE,
    })


@pytest.mark.parametrize("handed", ["runner", "func"])
def test_a_function_decorated_with_a_scheduling_decorator_is_its_job(tmp_path, handed):
    _project(tmp_path, UNCLAIMED, handed)
    assert findings(tmp_path, "app/totals.py") == [(6, "OG201")]
    # the wrapper is no job of its own, and the loop's pump only runs what is registered
    assert findings(tmp_path, "app/timers.py") == []
    assert findings(tmp_path, "app/worker.py") == []


@pytest.mark.parametrize("handed", ["runner", "func"])
def test_a_decorated_job_that_claims_its_run_is_left_alone(tmp_path, handed):
    _project(tmp_path, CLAIMED, handed)
    assert findings(tmp_path, "app/totals.py") == []
    assert findings(tmp_path, "app/timers.py") == []
    assert findings(tmp_path, "app/worker.py") == []


def test_a_pass_that_calls_a_helper_doing_more_than_pumping_is_still_a_job(tmp_path):
    _project(tmp_path, CLAIMED, "runner")
    write(tmp_path, {"app/timers.py": TIMERS.replace("{handed}", "runner").replace(
        "        schedule.run_pending()\n", "        schedule.run_pending()\n        client.post_totals()\n").replace(
        "    import schedule\n", "    import schedule\n\n    from . import client\n")})
    assert findings(tmp_path, "app/worker.py") == [(9, "OG201")]


JOBS = """\
    import threading
    import uuid

    from .extensions import cache


    def _set_status(job_id, **status):
        cache.set(f"job:{job_id}", status)


    def _run(job_id):
        _set_status(job_id, state="finished")


    def submit():
        job_id = uuid.uuid4().hex
        _set_status(job_id, state="queued")
        threading.Thread(target=_run, args=(job_id,), daemon=True).start()
        return job_id


    def status(job_id):
        return cache.get(f"job:{job_id}")
"""

APP = """\
    from flask import Flask

    from .config import Settings
    from .extensions import cache


    def create_app():
        app = Flask(__name__)
        app.config.from_object(Settings)
        cache.init_app(app)
        return app
"""


@pytest.mark.parametrize("backend, reported", [("SimpleCache", [(8, "OG607")]), ("RedisCache", [])])
def test_a_flask_cache_configured_in_memory_is_a_per_process_job_store(tmp_path, backend, reported):
    write(tmp_path, {
        "app/__init__.py": "",
        "app/extensions.py": "from flask_caching import Cache\n\ncache = Cache()\n",
        "app/config.py": f"class Settings:\n    CACHE_TYPE = \"{backend}\"\n    CACHE_DEFAULT_TIMEOUT = 3600\n",
        "app/app.py": APP,
        "app/jobs.py": JOBS,
    })
    assert findings(tmp_path, "app/jobs.py", codes=("OG607",)) == reported


def test_a_flask_cache_whose_backend_the_environment_chooses_is_not_judged(tmp_path):
    write(tmp_path, {
        "app/__init__.py": "",
        "app/extensions.py": "from flask_caching import Cache\n\ncache = Cache()\n",
        "app/config.py": "import os\n\n\nclass Settings:\n    CACHE_TYPE = os.environ.get(\"CACHE_TYPE\", \"SimpleCache\")\n",
        "app/app.py": APP,
        "app/jobs.py": JOBS,
    })
    assert findings(tmp_path, "app/jobs.py", codes=("OG607",)) == []


def test_a_cachelib_cache_keeping_statuses_under_keys_the_callers_mint(tmp_path):
    write(tmp_path, {
        "app/__init__.py": "",
        "app/jobs.py": JOBS.replace("from .extensions import cache\n",
                                    "from cachelib import SimpleCache\n\n    cache = SimpleCache()\n"),
    })
    assert findings(tmp_path, "app/jobs.py", codes=("OG607",)) == [(6, "OG607")]


ASYNC_STATUS = """\
    import asyncio
    import uuid

    from aiocache import SimpleMemoryCache
    from fastapi import FastAPI

    app = FastAPI()
    _status = SimpleMemoryCache()


    async def _run(job_id):
        await _status.set(job_id, {"state": "done"})


    @app.post("/exports")
    async def start_export():
        job_id = uuid.uuid4().hex
        await _status.set(job_id, {"state": "queued"})
        asyncio.create_task(_run(job_id))
        return {"job_id": job_id}


    @app.get("/exports/{job_id}")
    async def export_status(job_id: str):
        return await _status.get(job_id)
"""


@pytest.mark.parametrize("made, reported", [("SimpleMemoryCache()", [(8, "OG607")]),
                                            ("RedisCache(endpoint='redis')", [])])
def test_an_aiocache_memory_cache_as_a_job_status_store(tmp_path, made, reported):
    source = ASYNC_STATUS.replace("SimpleMemoryCache()", made).replace(
        "from aiocache import SimpleMemoryCache", "from aiocache import RedisCache, SimpleMemoryCache")
    write(tmp_path, {"app/__init__.py": "", "app/jobs.py": source})
    assert findings(tmp_path, "app/jobs.py", codes=("OG607",)) == reported
