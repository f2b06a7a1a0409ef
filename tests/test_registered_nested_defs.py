"""Start-up reach through a def nested in a function that runs at start-up.

A router factory called at import defines an endpoint and hands it to the router (``router.add_api_route(...)``,
or through a helper of its module that only does that): a request runs it, not start-up.  The same nested def
called by the factory, or handed to ``run_sync``, runs when the factory runs.  OG610 (a start-up reset of rows
picked by state) is the rule that asks.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SERVICE = """\
    from sqlalchemy import update

    from .models import Job


    async def fail_running(session):
        await session.execute(update(Job).where(Job.status == "running").values(status="failed"))
        await session.commit()
"""

MODELS = """\
    from sqlalchemy import Column, Integer, String
    from sqlalchemy.orm import declarative_base

    Base = declarative_base()


    class Job(Base):
        __tablename__ = "jobs"
        id = Column(Integer, primary_key=True)
        status = Column(String)
"""

ROUTING = """\
    from fastapi import APIRouter

    from .db import Session
    from .service import fail_running


    def _add(router, path, endpoint):
        router.add_api_route(path, endpoint, methods=["POST"])


    def make_router():
        router = APIRouter()

        async def reset_jobs():
            async with Session() as session:
                await fail_running(session)

        {registration}
        return router


    router = make_router()
"""

DB = """\
    from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

    Session = async_sessionmaker(create_async_engine("postgresql+asyncpg://app@db/app"))
"""


@pytest.mark.parametrize("registration, reported", [
    ('router.add_api_route("/jobs/reset", reset_jobs, methods=["POST"])', []),
    ('_add(router, "/jobs/reset", reset_jobs)', []),
    ("import asyncio\n        asyncio.run(reset_jobs())", [(7, "OG610")]),
])
def test_an_endpoint_a_factory_registers_runs_on_request(tmp_path, registration, reported):
    write(tmp_path, {"jobs/__init__.py": "", "jobs/models.py": MODELS, "jobs/db.py": DB, "jobs/service.py": SERVICE,
                     "jobs/routing.py": ROUTING.replace("{registration}", registration)})
    assert findings(tmp_path, "jobs/service.py", codes=("OG610",)) == reported
