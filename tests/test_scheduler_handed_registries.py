"""OG201: a project's registry of jobs handed to a library scheduler one entry at a time.

``@nightly(trigger)`` appends (name, trigger, function) to a module-level list; an ``install(scheduler)``
function walks the list and hands each function to the scheduler's registration method (APScheduler's
``add_job`` / ``add_schedule``).  Every decorated function is that scheduler's job, as if registered by hand:
run by every replica's scheduler unless the scheduler coordinates them (APScheduler 4 with a shared data store)
or the job claims its period.  A list handed to something that is no scheduler registers nothing.
"""
from __future__ import annotations

import textwrap

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

PLAN = """\
    from typing import Any, Callable

    from apscheduler import AsyncScheduler

    _ROSTER: list[tuple[str, Any, Callable]] = []


    def nightly(trigger: Any, *, key: str) -> Callable:
        def keep(fn: Callable) -> Callable:
            _ROSTER.append((key, trigger, fn))
            return fn

        return keep


    async def install(scheduler: AsyncScheduler) -> None:
        for key, trigger, fn in _ROSTER:
            await scheduler.add_schedule(fn, trigger, id=key)
"""

# The list's entries are records, and the scheduler is APScheduler 3's, made in the module.
PLAN_RECORDS = """\
    from dataclasses import dataclass
    from typing import Any, Callable

    from apscheduler.schedulers.asyncio import AsyncIOScheduler

    sched = AsyncIOScheduler()


    @dataclass
    class Slot:
        trigger: Any
        run: Callable


    SLOTS: list[Slot] = []


    def nightly(trigger: Any, *, key: str) -> Callable:
        def keep(fn: Callable) -> Callable:
            SLOTS.append(Slot(trigger, fn))
            return fn

        return keep


    async def install(scheduler: Any = None) -> None:
        for slot in SLOTS:
            sched.add_job(slot.run, slot.trigger)
        sched.start()
"""

# APScheduler 4 with a data store every replica shares: the schedules are coordinated.
PLAN_SHARED_STORE = PLAN.replace(
    "from apscheduler import AsyncScheduler\n",
    "from apscheduler import AsyncScheduler\n    from apscheduler.datastores.sqlalchemy import SQLAlchemyDataStore\n",
).replace(
    """    async def install(scheduler: AsyncScheduler) -> None:
        for key, trigger, fn in _ROSTER:""",
    """    async def install(url: str) -> None:
        scheduler = AsyncScheduler(SQLAlchemyDataStore(url))
        for key, trigger, fn in _ROSTER:""")

# The same walk, handing each function to an object that only records names.
PLAN_NOT_A_SCHEDULER = PLAN.replace(
    "    async def install(scheduler: AsyncScheduler) -> None:",
    """    class Catalogue:
        def add_schedule(self, fn: Callable, trigger: Any, id: str) -> None:
            print(id, fn.__name__, trigger)


    async def install(scheduler: Catalogue) -> None:""").replace(
    "            await scheduler.add_schedule(fn, trigger, id=key)",
    "            scheduler.add_schedule(fn, trigger, id=key)")

REPORTS = """\
    import httpx
    from apscheduler.triggers.cron import CronTrigger

    from ledgerly.roster import nightly


    @nightly(CronTrigger(hour=3), key="statements")
    async def mail_statements() -> None:{claim}
        async with httpx.AsyncClient() as client:
            await client.post("https://mail.example/send", json={{"template": "statement"}})
"""

CLAIM = """
        if not await claim_night("statements"):
            return"""

CLAIMS = """\
    import asyncpg

    POOL: asyncpg.Pool


    async def claim_night(name: str) -> bool:
        won = await POOL.fetchval(
            "INSERT INTO nightly_runs (name, night) VALUES ($1, current_date) ON CONFLICT DO NOTHING RETURNING name",
            name)
        return won is not None
"""

APP = """\
    from contextlib import asynccontextmanager

    from apscheduler import AsyncScheduler
    from fastapi import FastAPI

    from ledgerly import roster, reports  # noqa: F401 (declares the jobs)


    @asynccontextmanager
    async def lifespan(app: FastAPI):
        async with AsyncScheduler() as scheduler:
            await roster.install(scheduler)
            await scheduler.start_in_background()
            yield


    app = FastAPI(lifespan=lifespan)
"""


def _check(tmp_path, plan=PLAN, claim=""):
    reports = REPORTS.format(claim=claim)
    if claim:
        reports = "from ledgerly.claims import claim_night\n" + textwrap.dedent(reports)
    write(tmp_path, {"ledgerly/__init__.py": "", "ledgerly/roster.py": plan, "ledgerly/reports.py": reports,
                     "ledgerly/claims.py": CLAIMS, "ledgerly/app.py": APP})
    line = next(i for i, text in enumerate(textwrap.dedent(reports).splitlines(), 1) if "async def mail" in text)
    return findings(tmp_path, "ledgerly/reports.py"), line


@pytest.mark.parametrize("plan", [PLAN, PLAN_RECORDS], ids=["tuples-aps4", "records-aps3"])
def test_a_function_put_in_a_registry_a_scheduler_is_handed_is_its_job(tmp_path, plan):
    found, line = _check(tmp_path, plan=plan)
    assert found == [(line, "OG201")]


def test_the_job_that_claims_its_night_first_is_clean(tmp_path):
    found, _ = _check(tmp_path, claim=CLAIM)
    assert found == []


def test_a_scheduler_whose_store_every_replica_shares_coordinates_the_handed_jobs(tmp_path):
    found, _ = _check(tmp_path, plan=PLAN_SHARED_STORE)
    assert found == []


def test_a_registry_handed_to_something_that_is_no_scheduler_registers_nothing(tmp_path):
    found, _ = _check(tmp_path, plan=PLAN_NOT_A_SCHEDULER)
    assert found == []


def test_the_hand_off_is_named_in_the_finding(tmp_path):
    from onceguard.config import from_mapping
    from onceguard.engine.check import check_source

    _check(tmp_path)
    path = tmp_path / "ledgerly" / "reports.py"
    found = [d for d in check_source(path.read_bytes(), str(path), from_mapping({}, root=str(tmp_path)),
                                     cross_file=True) if d.code == "OG201"]
    assert len(found) == 1
    assert any(place.path.endswith("roster.py") and "handed to the scheduler" in place.message
               for place in found[0].related)


# -- an APScheduler 4 scheduler handed to the registering function: the project's constructions decide ---------
_APS4_FACTORY = """\
    from apscheduler import AsyncScheduler
    from apscheduler.datastores.sqlalchemy import SQLAlchemyDataStore
    {memory_import}

    from .db import engine


    def build_scheduler() -> AsyncScheduler:
        return AsyncScheduler({store})
"""

_APS4_REGISTER = """\
    from apscheduler import AsyncScheduler
    from apscheduler.triggers.interval import IntervalTrigger

    from .reminders import send_reminders


    async def register(scheduler: AsyncScheduler) -> None:
        await scheduler.add_schedule(send_reminders, IntervalTrigger(minutes=30), id="reminders")
"""


@pytest.mark.parametrize("store, memory_import, reported", [
    ("data_store=SQLAlchemyDataStore(engine)", "", []),
    ("data_store=MemoryDataStore()", "from apscheduler.datastores.memory import MemoryDataStore", [(8, "OG201")]),
])
def test_a_handed_aps4_scheduler_is_judged_by_the_schedulers_the_project_makes(tmp_path, store, memory_import,
                                                                                reported):
    write(tmp_path, {
        "svc/__init__.py": "",
        "svc/db.py": "from sqlalchemy.ext.asyncio import create_async_engine\n\nengine = create_async_engine('postgresql+asyncpg://db/app')\n",
        "svc/reminders.py": "import httpx\n\n\nasync def send_reminders():\n    httpx.post('https://mail.example.com/send')\n",
        "svc/schedules.py": _APS4_FACTORY.replace("{store}", store).replace("{memory_import}", memory_import),
        "svc/register.py": _APS4_REGISTER,
    })
    assert findings(tmp_path, "svc/register.py") == reported
