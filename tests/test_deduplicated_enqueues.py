"""A queue that keeps one job per id (arq's ``enqueue_job(..., _job_id=...)`` answers None while a job of that id is
queued, running or has its result kept): a scheduled job that hands its work over under an id every replica
computes alike, and leaves when the answer is None, is claimed once per id.  An id drawn fresh per call is a new
job each time."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SCHEDULER = """
    from apscheduler.schedulers.asyncio import AsyncIOScheduler

    from reports.handoff import queue_weekly_report


    def start(pool) -> AsyncIOScheduler:
        scheduler = AsyncIOScheduler(timezone="UTC")
        scheduler.add_job(queue_weekly_report, "cron", day_of_week="mon", hour=6, args=[pool])
        scheduler.start()
        return scheduler
    """

HANDOFF = """
    import uuid
    from datetime import date

    from arq.connections import ArqRedis


    async def queue_weekly_report(pool: ArqRedis) -> None:
        week = date.today().strftime("%G-W%V")
        queued = await pool.enqueue_job("build_weekly_report", week{job_id})
        if queued is None:
            return
        print("queued", queued.job_id)
    """


@pytest.mark.parametrize("job_id", [', _job_id=f"weekly-report:{week}"', ', _job_id="weekly-report:" + week'])
def test_an_id_every_replica_computes_is_enqueued_once(tmp_path, job_id):
    write(tmp_path, {"reports/__init__.py": "", "reports/schedule.py": SCHEDULER,
                     "reports/handoff.py": HANDOFF.format(job_id=job_id)})
    assert findings(tmp_path, "reports/schedule.py") == []


@pytest.mark.parametrize("job_id", ["", ", _job_id=None"])
def test_an_id_drawn_per_call_is_a_new_job_each_time(tmp_path, job_id):
    write(tmp_path, {"reports/__init__.py": "", "reports/schedule.py": SCHEDULER,
                     "reports/handoff.py": HANDOFF.format(job_id=job_id)})
    assert findings(tmp_path, "reports/schedule.py") == [(9, "OG201")]


HELPER = """
    from arq import ArqRedis


    async def enqueue_for_week(pool: ArqRedis, week: str):
        return await pool.enqueue_job("build_weekly_report", week, _job_id=f"weekly-report:{week}")
    """

HANDOFF_THROUGH_HELPER = """
    from datetime import date

    import httpx

    from reports import queueing


    async def queue_weekly_report(pool) -> None:
        week = date.today().strftime("%G-W%V")
        {body}
        async with httpx.AsyncClient() as client:
            await client.post("https://chat.example.com/hook", json={{"text": f"report {{week}} queued"}})
    """


def test_a_helper_in_another_module_hands_back_the_answer(tmp_path):
    body = "if not await queueing.enqueue_for_week(pool, week):\n            return"
    write(tmp_path, {"reports/__init__.py": "", "reports/schedule.py": SCHEDULER, "reports/queueing.py": HELPER,
                     "reports/handoff.py": HANDOFF_THROUGH_HELPER.format(body=body)})
    assert findings(tmp_path, "reports/schedule.py") == []


ONLY_THE_ENQUEUE = """
    from datetime import date


    async def queue_weekly_report(pool) -> None:
        week = date.today().strftime("%G-W%V")
        await pool.enqueue_job("build_weekly_report", week, _job_id=f"weekly-report:{{week}}"){after}
    """


def test_an_enqueue_that_is_the_whole_job_needs_no_test_of_its_answer(tmp_path):
    write(tmp_path, {"reports/__init__.py": "", "reports/schedule.py": SCHEDULER,
                     "reports/handoff.py": ONLY_THE_ENQUEUE.format(after="")})
    assert findings(tmp_path, "reports/schedule.py") == []


def test_work_after_an_answer_left_unread_runs_on_every_replica(tmp_path):
    after = "\n        await pool.enqueue_job('notify_finance', week)"
    write(tmp_path, {"reports/__init__.py": "", "reports/schedule.py": SCHEDULER,
                     "reports/handoff.py": ONLY_THE_ENQUEUE.format(after=after)})
    assert findings(tmp_path, "reports/schedule.py") == [(9, "OG201")]
