"""OG201: a project's own registry run as one loop per entry, and a claim made by inserting a unique row.

``@every(minutes=5)`` appends a record holding the function to a module-level list; start-up makes one task per
entry (``[create_task(_run(entry)) for entry in ENTRIES]``, or a ``for`` statement starting a thread each), and
each task's never-ending loop calls its entry's function and sleeps.  Every decorated function is a job, run on
every replica that starts the tasks.  A job that begins by inserting the period's row with ``ON CONFLICT DO
NOTHING`` and leaves when no row came back has claimed the period.
"""
from __future__ import annotations

import textwrap

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

CADENCE = """\
    import asyncio
    from dataclasses import dataclass
    from typing import Awaitable, Callable


    @dataclass
    class Entry:
        period_s: float
        run: Callable[[], Awaitable[None]]


    ENTRIES: list[Entry] = []


    def every(*, minutes: float = 0) -> Callable:
        def keep(fn):
            ENTRIES.append(Entry(minutes * 60, fn))
            return fn

        return keep


    async def _repeat(entry: Entry) -> None:
        while True:
            await entry.run()
            await asyncio.sleep(entry.period_s)


    def launch() -> list:
        return [asyncio.create_task(_repeat(entry)) for entry in ENTRIES]
"""

THREADED = CADENCE.replace("import asyncio\n", "import threading\n    import time\n").replace(
    """    async def _repeat(entry: Entry) -> None:
        while True:
            await entry.run()
            await asyncio.sleep(entry.period_s)


    def launch() -> list:
        return [asyncio.create_task(_repeat(entry)) for entry in ENTRIES]
""", """    def _repeat(entry: Entry) -> None:
        while True:
            entry.run()
            time.sleep(entry.period_s)


    def launch() -> None:
        for entry in ENTRIES:
            threading.Thread(target=_repeat, args=(entry,), daemon=True).start()
""")

JOBS = """\
    import asyncpg

    from fleet.cadence import every

    POOL: asyncpg.Pool


    @every(minutes=15)
    async def bill_parking() -> None:
        async with POOL.acquire() as conn:{claim}
            await conn.execute("INSERT INTO charges (plate, cents) SELECT plate, 250 FROM parked WHERE overdue")
"""

CLAIM = """
            won = await conn.fetchval(
                "INSERT INTO billing_runs (slot) VALUES (date_trunc('hour', now())) "
                "ON CONFLICT (slot) DO NOTHING RETURNING slot")
            if won is None:
                return"""


APP = """\
    from contextlib import asynccontextmanager

    from fastapi import FastAPI

    from fleet import cadence, jobs  # noqa: F401 (registers the jobs)


    @asynccontextmanager
    async def lifespan(app: FastAPI):
        cadence.launch()
        yield


    app = FastAPI(lifespan=lifespan)
"""


def _job_line(jobs: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(jobs).splitlines(), 1) if "async def bill_parking" in line)


def _check(tmp_path, cadence=CADENCE, claim=""):
    jobs = JOBS.format(claim=claim)
    write(tmp_path, {"fleet/__init__.py": "", "fleet/cadence.py": cadence, "fleet/jobs.py": jobs, "fleet/app.py": APP})
    return findings(tmp_path, "fleet/jobs.py"), _job_line(jobs)


@pytest.mark.parametrize("cadence", [CADENCE, THREADED], ids=["tasks", "threads"])
def test_a_function_registered_into_a_registry_run_one_loop_per_entry_is_a_job(tmp_path, cadence):
    found, line = _check(tmp_path, cadence=cadence)
    assert found == [(line, "OG201")]


def test_a_job_that_leads_with_a_unique_insert_it_tests_is_claimed(tmp_path):
    found, _ = _check(tmp_path, claim=CLAIM)
    assert found == []


def test_a_unique_insert_whose_answer_is_dropped_claims_nothing(tmp_path):
    dropped = CLAIM.replace("won = await conn.fetchval(", "await conn.fetchval(").replace(
        "\n            if won is None:\n                return", "")
    found, line = _check(tmp_path, claim=dropped)
    assert found == [(line, "OG201")]


# The registering decorator stores a wrapper of the function (timing and logging around it), not the function.
WRAPPED = CADENCE.replace("""    def every(*, minutes: float = 0) -> Callable:
        def keep(fn):
            ENTRIES.append(Entry(minutes * 60, fn))
            return fn
""", """    def every(*, minutes: float = 0) -> Callable:
        def keep(fn):
            async def timed() -> None:
                started = asyncio.get_running_loop().time()
                await fn()
                print(fn.__name__, asyncio.get_running_loop().time() - started)

            ENTRIES.append(Entry(minutes * 60, timed))
            return fn
""")


def test_a_registry_of_wrappers_around_the_functions_repeats_each_function(tmp_path):
    assert WRAPPED != CADENCE
    found, line = _check(tmp_path, cadence=WRAPPED)
    assert found == [(line, "OG201")]
