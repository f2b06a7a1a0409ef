"""OG201: a registry a decorator fills, walked by a function its callers hand it to (``install(scheduler,
collect())``, ``collect`` returning ``list(_PLAN.values())``): every decorated function is the scheduler's job.
Handed to the scheduler wrapped by a project function whose returned def claims first (``add_job(guarded(name,
fn))``), each run is claimed; a wrapper that only times the run claims nothing."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

PLAN = """\
    from dataclasses import dataclass
    from typing import Callable

    from apscheduler.schedulers.background import BackgroundScheduler
    from apscheduler.triggers.cron import CronTrigger

    from ledger.wrappers import {wrapper}


    @dataclass(frozen=True)
    class Entry:
        key: str
        cron: str
        run: Callable


    _PLAN: dict[str, Entry] = {{}}


    def every(cron: str, *, key: str) -> Callable:
        def keep(fn: Callable) -> Callable:
            _PLAN[key] = Entry(key, cron, fn)
            return fn

        return keep


    def collect() -> list[Entry]:
        return list(_PLAN.values())


    def install(scheduler: BackgroundScheduler, entries: list[Entry]) -> None:
        for entry in entries:
            scheduler.add_job({wrapper}(entry.key, entry.run), CronTrigger.from_crontab(entry.cron), id=entry.key)
"""

WRAPPERS = """\
    import time

    import redis

    client = redis.Redis()


    def guarded(key, fn):
        def run():
            if not client.set(f"run:{key}", "1", nx=True, ex=3000):
                return
            fn()

        return run


    def timed(key, fn):
        def run():
            started = time.monotonic()
            fn()
            print(key, time.monotonic() - started)

        return run
"""

JOBS = """\
    import requests

    from ledger.plan import every


    @every("0 * * * *", key="statements")
    def send_statements():
        requests.post("https://mail.example.org/statements")
"""

APP = """\
    from contextlib import asynccontextmanager

    from apscheduler.schedulers.asyncio import AsyncIOScheduler
    from fastapi import FastAPI

    import ledger.jobs  # noqa: F401 (registers the jobs)
    from ledger.plan import collect, install as install_jobs


    @asynccontextmanager
    async def lifespan(app: FastAPI):
        scheduler = AsyncIOScheduler()
        install_jobs(scheduler, {handed})
        scheduler.start()
        yield


    app = FastAPI(lifespan=lifespan)
"""


@pytest.mark.parametrize("wrapper, handed, expected", [
    ("timed", "collect()", [(7, "OG201")]),
    ("timed", "entries=collect()", [(7, "OG201")]),
    ("guarded", "collect()", []),
])
def test_a_registry_its_walker_is_handed(tmp_path, wrapper, handed, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'ledger'\n", "ledger/__init__.py": "",
                     "ledger/plan.py": PLAN.format(wrapper=wrapper), "ledger/wrappers.py": WRAPPERS,
                     "ledger/jobs.py": JOBS, "ledger/app.py": APP.format(handed=handed)})
    assert findings(tmp_path, "ledger/jobs.py", codes=("OG201",)) == expected
