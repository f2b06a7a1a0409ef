"""A claim row inserted with ``ON CONFLICT DO NOTHING ... RETURNING`` and read back with ``session.scalar`` answers
whether this replica's row went in, as ``execute`` does: a ticker that tests that answer is claimed."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

CLAIM_RUNS = """
    from sqlalchemy.dialects.postgresql import insert

    from .models import JobRun, Session


    async def start_run(job, run_for):
        stmt = (insert(JobRun).values(job=job, run_for=run_for)
                .on_conflict_do_nothing(index_elements=["job", "run_for"]).returning(JobRun.id))
        async with Session() as session, session.begin():
            inserted = await session.{send}(stmt)
        return inserted is not None
    """

MODELS = """
    from sqlalchemy import Date, Integer, String, UniqueConstraint
    from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class JobRun(Base):
        __tablename__ = "job_runs"
        id: Mapped[int] = mapped_column(Integer, primary_key=True)
        job: Mapped[str] = mapped_column(String)
        run_for = mapped_column(Date)
        __table_args__ = (UniqueConstraint("job", "run_for"),)


    Session = async_sessionmaker(create_async_engine("postgresql+asyncpg://db/app"))
    """

TICKER = """
    import asyncio
    from datetime import date

    import httpx
    from fastapi import FastAPI

    from .runs import start_run

    app = FastAPI()


    async def report_daily():
        while True:
            if await start_run("usage-report", date.today()):
                async with httpx.AsyncClient() as client:
                    await client.post("https://billing.example.com/usage", json={})
            await asyncio.sleep(300)


    @app.on_event("startup")
    async def begin():
        asyncio.create_task(report_daily())
    """


@pytest.mark.parametrize("send", ["scalar", "execute"])
def test_a_claim_row_inserted_and_read_back_with_scalar(tmp_path, send):
    """``session.scalar(insert(...).on_conflict_do_nothing().returning(...))`` sends the insert and reads back
    whether this replica's row went in, as ``execute`` does: the ticker that tests it is claimed."""
    write(tmp_path, {"jobs/__init__.py": "", "jobs/models.py": MODELS, "jobs/runs.py": CLAIM_RUNS.format(send=send),
                     "jobs/app.py": TICKER,
                     "Dockerfile": 'FROM python:3.11\nCMD ["uvicorn", "jobs.app:app", "--workers", "2"]\n'})
    assert findings(tmp_path, "jobs/app.py") == []
