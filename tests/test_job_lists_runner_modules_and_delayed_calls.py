"""Three ways start-up work hides one step further away than its registration.

- OG201: a list of ``(job, trigger arguments)`` written out in another module, which the lifespan loops over to
  hand each job to APScheduler: each job of the list is scheduled in every replica.
- OG403: a runner module named for the verb (``db/migrate.py``) whose upgrade helper a start-up hook hands to a
  thread: the name does not make it an operator's one-off; its caller does.
- OG201: a timer of the event loop that re-arms itself through the class's own methods (``_arm`` calls
  ``loop.call_later(delay, self._fire)``, ``_fire`` starts ``self._tick()``, whose ``finally`` calls ``_arm``).

Beside each, the safe spelling: the job claims first; the runner only an operator's script calls; a one-shot delay.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

JOB = """\
    import httpx

    from onceguard.guards import claim_period


    async def post_summary() -> None:
        {claim}
        await httpx.AsyncClient().post("https://hooks.example.org/summary", json={{}})
"""

JOB_LIST = """\
    from relay.jobs import post_summary

    PLANNED = [
        (post_summary, {"hour": 6, "minute": 30}),
    ]
"""

LIFESPAN = """\
    from contextlib import asynccontextmanager

    from apscheduler.schedulers.asyncio import AsyncIOScheduler
    from fastapi import FastAPI

    from relay.planned import PLANNED


    @asynccontextmanager
    async def lifespan(app: FastAPI):
        scheduler = AsyncIOScheduler(timezone="UTC")
        for job, when in PLANNED:
            scheduler.add_job(job, "cron", **when)
        scheduler.start()
        yield
        scheduler.shutdown()


    app = FastAPI(lifespan=lifespan)
"""


@pytest.mark.parametrize("claim, expected", [
    ("pass", [(13, "OG201")]),
    ("if not claim_period('relay.summary', 86400):\n            return", []),
])
def test_a_job_list_written_in_another_module(tmp_path, claim, expected):
    write(tmp_path, {"relay/__init__.py": "", "relay/jobs.py": JOB.format(claim=claim),
                     "relay/planned.py": JOB_LIST, "relay/main.py": LIFESPAN})
    assert findings(tmp_path, "relay/main.py", codes=("OG201",)) == expected


RUNNER = """\
    import asyncio

    from alembic import command
    from alembic.config import Config


    def upgrade_to_head() -> None:
        command.upgrade(Config("alembic.ini"), "head")


    async def apply_migrations() -> None:
        await asyncio.to_thread(upgrade_to_head)
"""

STARLETTE_APP = """\
    from starlette.applications import Starlette

    from shelf.db.migrate import apply_migrations

    app = Starlette(routes=[], on_startup=[apply_migrations])
"""

OPERATOR_SCRIPT = """\
    import asyncio

    from shelf.db.migrate import apply_migrations

    if __name__ == "__main__":
        asyncio.run(apply_migrations())
"""

ENV = """\
    from alembic import context
    from sqlalchemy import engine_from_config, pool

    config = context.config


    def run_migrations_online() -> None:
        connectable = engine_from_config(config.get_section(config.config_ini_section, {}), poolclass=pool.NullPool)
        with connectable.connect() as connection:
            context.configure(connection=connection)
            with context.begin_transaction():
                context.run_migrations()


    run_migrations_online()
"""


@pytest.mark.parametrize("caller, expected", [
    ({"shelf/app.py": STARLETTE_APP}, [(12, "OG403")]),
    ({"scripts/upgrade.py": OPERATOR_SCRIPT}, []),
])
def test_a_runner_module_named_migrate_is_judged_by_its_callers(tmp_path, caller, expected):
    write(tmp_path, {"shelf/__init__.py": "", "shelf/db/__init__.py": "", "shelf/db/migrate.py": RUNNER,
                     "alembic.ini": "[alembic]\nscript_location = migrations\n", "migrations/env.py": ENV,
                     **caller})
    assert findings(tmp_path, "migrations/env.py", codes=("OG403",)) == expected


HEARTBEAT = """\
    import asyncio

    import httpx


    class Watch:
        def __init__(self, interval: float) -> None:
            self._interval = interval

        def start(self) -> None:
            self._arm(0)

        def _arm(self, delay: float) -> None:
            asyncio.get_running_loop().call_later(delay, self._fire)

        def _fire(self) -> None:
            asyncio.get_running_loop().create_task(self._tick())

        async def _tick(self) -> None:
            try:
                await httpx.AsyncClient().post("https://pager.example.org/alerts", json={})
            finally:
                {again}


    async def main() -> None:
        Watch(60).start()
        await asyncio.Event().wait()


    if __name__ == "__main__":
        asyncio.run(main())
"""


@pytest.mark.parametrize("again, expected", [("self._arm(self._interval)", [(16, "OG201")]), ("pass", [])])
def test_an_event_loop_timer_that_re_arms_through_the_class(tmp_path, again, expected):
    write(tmp_path, {"pager/__init__.py": "", "pager/watch.py": HEARTBEAT.replace("{again}", again),
                     "Dockerfile": 'FROM python:3.11\nCMD ["python", "-m", "pager.watch"]\n'})
    assert findings(tmp_path, "pager/watch.py", codes=("OG201",)) == expected
