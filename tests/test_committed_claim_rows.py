"""OG201: a helper that claims a period by inserting its row (``INSERT ... ON CONFLICT DO NOTHING RETURNING``),
commits, and returns whether its row went in: the commit makes the claim lasting and is no work of its own, so the
job testing the answer leads with a claim.  A helper that rolls its row back, or answers True whatever the
insert returned, claims nothing."""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

#: ``{end}`` ends the helper's transaction, ``{answer}`` is what it returns.
RUNS = """\
    from datetime import date

    from sqlalchemy.dialects.postgresql import insert

    from depot.db import Session, WeeklyRun


    def take_week(session: Session, week: date) -> bool:
        got = session.execute(
            insert(WeeklyRun).values(week=week).on_conflict_do_nothing(index_elements=["week"]).returning(WeeklyRun.id)
        ).scalar_one_or_none()
        session.{end}()
        return {answer}
"""

JOBS = """\
    from datetime import date

    import httpx
    from apscheduler.schedulers.background import BackgroundScheduler

    from depot.db import Session
    from depot.runs import take_week

    sched = BackgroundScheduler(timezone="UTC")


    def restock_report() -> None:
        with Session() as session:
            if not take_week(session, date.today()):
                return
        httpx.post("https://reports.example/restock", json={"week": str(date.today())})


    sched.add_job(restock_report, "cron", day_of_week="mon", hour=6)
    sched.start()
"""


@pytest.mark.parametrize("end, answer, expected", [
    ("commit", "got is not None", []),
    ("commit", "bool(got)", []),
    ("rollback", "got is not None", [(12, "OG201")]),  # the row is taken back: nobody holds the week
    ("commit", "True", [(12, "OG201")]),  # every caller hears it won
])
def test_a_helper_committing_its_claim_row(tmp_path, end, answer, expected):
    write(tmp_path, {"depot/__init__.py": "", "depot/runs.py": RUNS.format(end=end, answer=answer),
                     "depot/jobs.py": JOBS})
    assert findings(tmp_path, "depot/jobs.py") == expected


ASYNC_JOB = """\
    from datetime import date

    import httpx
    from apscheduler.schedulers.asyncio import AsyncIOScheduler
    from sqlalchemy.dialects.postgresql import insert

    from depot.db import AsyncSession, NightlyRun

    sched = AsyncIOScheduler(timezone="UTC")


    async def _claim_night(session: AsyncSession, night: date) -> bool:
        result = await session.execute(
            insert(NightlyRun).values(night=night).on_conflict_do_nothing().returning(NightlyRun.night)
        )
        row = result.scalar_one_or_none()
        await session.commit()
        return row is not None


    async def compact_journals() -> None:
        async with AsyncSession() as session:
            if not await _claim_night(session, date.today()):
                return
            async with httpx.AsyncClient() as client:
                await client.post("https://books.example/compact")


    sched.add_job(compact_journals, "cron", hour=1)
"""


@pytest.mark.parametrize("cross_file", [True, False])
def test_an_awaited_commit_in_a_helper_of_the_module(tmp_path, cross_file):
    write(tmp_path, {"depot/__init__.py": "", "depot/nightly.py": ASYNC_JOB})
    assert findings(tmp_path, "depot/nightly.py", cross_file=cross_file) == []
