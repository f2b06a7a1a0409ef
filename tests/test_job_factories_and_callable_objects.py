"""Jobs a factory makes, jobs that are objects, claims that hand back rows, and seeding that skips what exists.

- ``schedule.every().day.do(make_job(run))``: the job is the def the project's factory returns.
- A callable object handed as the job (``run_on_schedule(expr, SweepJob(pool))``, or closed over by a factory's
  def): ``SweepJob.__call__`` runs, and a claim leading it claims the run.
- ``for row in await repo.claim_due(...)``: a loop over what a claim hands back works only on what this
  replica won.
- Start-up seeding that leaves when the row exists (``if ...exists(): continue``) and creates it after.
"""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SCHEDULER = """\
    import time

    import schedule

    from .billing import MonthClose


    def nightly(run):
        def job():
            run()

        return job


    def main():
        schedule.every().day.at("02:00").do(nightly(MonthClose()))
        while True:
            schedule.run_pending()
            time.sleep(30)


    if __name__ == "__main__":
        main()
"""

BILLING = """\
    import httpx

    from .claims import claim_day


    class MonthClose:
        def __call__(self) -> None:
            {lead}
            httpx.post("https://ledger.example/close")
"""

CLAIMS = """\
    import datetime as dt

    import redis

    r = redis.Redis(host="cache")


    def claim_day(name: str) -> bool:
        return bool(r.set(f"{name}:{dt.date.today()}", 1, nx=True, ex=86_400))
"""


@pytest.mark.parametrize("lead, expected", [
    ("pass", [(9, "OG201")]),
    ('if not claim_day("month-close"):\n                return', []),
])
def test_a_factory_job_calling_a_handed_object(tmp_path, lead, expected):
    write(tmp_path, {
        "pyproject.toml": "[project]\nname = 'books'\n",
        "Dockerfile": 'FROM python:3.12\nCMD ["python", "-m", "books.scheduler"]\n',
        "deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nspec:\n  replicas: 2\n  template:\n    spec:\n"
                       "      containers:\n        - name: s\n"
                       "          command: [\"python\", \"-m\", \"books.scheduler\"]\n",
        "books/__init__.py": "", "books/scheduler.py": SCHEDULER, "books/claims.py": CLAIMS,
        "books/billing.py": BILLING.format(lead=lead),
    })
    assert findings(tmp_path, "books/scheduler.py") == expected


TICKER = """\
    import asyncio

    from aiohttp import web

    from .sweeps import SweepJob


    async def every(seconds: float, job) -> None:
        while True:
            await asyncio.sleep(seconds)
            await job()


    async def background(app: web.Application):
        task = asyncio.create_task(every(60, SweepJob(app["pool"])))
        yield
        task.cancel()


    def make_app() -> web.Application:
        app = web.Application()
        app.cleanup_ctx.append(background)
        return app
"""

SWEEPS = """\
    import httpx


    class SweepJob:
        def __init__(self, pool) -> None:
            self.pool = pool

        async def __call__(self) -> None:
            {lead}
            await httpx.AsyncClient().post("https://hooks.example/sweep")
"""


@pytest.mark.parametrize("lead, expected", [
    ("pass", [(8, "OG201")]),
    ('if not await self.pool.fetchval("SELECT pg_try_advisory_xact_lock(42)"):\n                return', []),
])
def test_a_callable_object_handed_to_a_ticker(tmp_path, lead, expected):
    write(tmp_path, {
        "pyproject.toml": "[project]\nname = 'sweeper'\n",
        "Dockerfile": 'FROM python:3.12\nCMD ["python", "-m", "aiohttp.web", "sweeper.app:make_app"]\n',
        "sweeper/__init__.py": "", "sweeper/app.py": TICKER, "sweeper/sweeps.py": SWEEPS.format(lead=lead),
    })
    assert findings(tmp_path, "sweeper/app.py") == expected


LOOP = """\
    import asyncio

    import httpx
    from fastapi import FastAPI

    from .repo import Notices

    app = FastAPI()


    async def send_due(notices: Notices) -> int:
        sent = 0
        for notice in await notices.{method}(50):
            await httpx.AsyncClient().post("https://push.example/send", json=notice)
            sent += 1
        return sent


    async def notify_loop(notices: Notices) -> None:
        while True:
            await send_due(notices)
            await asyncio.sleep(30)


    @app.on_event("startup")
    async def start() -> None:
        asyncio.create_task(notify_loop(Notices(None)))
"""

REPO = """\
    class Notices:
        def __init__(self, pool) -> None:
            self.pool = pool

        async def {method}(self, limit: int):
            rows = await self.pool.fetch(
                "WITH due AS (SELECT id FROM notices WHERE sent_at IS NULL LIMIT $1{lock}) "
                "UPDATE notices n SET sent_at = now() FROM due WHERE n.id = due.id RETURNING n.id, n.body",
                limit,
            )
            return [dict(row) for row in rows]
"""


@pytest.mark.parametrize("method", ["take_due", "claim_due"])
def test_a_loop_over_rows_a_claim_hands_back(tmp_path, method):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'notes'\n", "notes/__init__.py": "",
                     "notes/app.py": LOOP.format(method=method),
                     "notes/repo.py": REPO.format(lock=" FOR UPDATE SKIP LOCKED", method=method)})
    assert findings(tmp_path, "notes/app.py") == []


READY = """\
    from django.apps import AppConfig


    class PlansConfig(AppConfig):
        name = "plans"

        def ready(self):
            from .seed import ensure_plans

            ensure_plans()
"""

SEED = """\
    from .models import Plan

    WANTED = ("free", "team", "enterprise")


    def ensure_plans():
        for name in WANTED:
            if Plan.objects.filter(name=name).exists():
                {skip}
            Plan.objects.create(name=name)
"""


@pytest.mark.parametrize("skip, expected", [
    ("continue", [(8, "OG603")]),
    ("print(name)", []),  # no skip: the create is not the missing row's branch
])
def test_seeding_that_skips_rows_already_there(tmp_path, skip, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'plans'\n", "plans/__init__.py": "",
                     "plans/apps.py": READY, "plans/seed.py": SEED.format(skip=skip),
                     "plans/models.py": "from django.db import models\n\n\nclass Plan(models.Model):\n"
                                        "    name = models.CharField(max_length=40)\n"})
    assert findings(tmp_path, "plans/seed.py", codes=("OG603",)) == expected
