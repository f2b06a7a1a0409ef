"""Start-up and jobs spelled through methods and lambdas.

``FastAPI(lifespan=self._lifespan)`` in a class that owns the app runs that method at every replica's start-up,
as a module-level ``lifespan`` function would (OG401 for what it migrates).  ``scheduler.add_job(lambda:
reporter.post_summary(), ...)`` in ``def start(reporter: Reporter)`` schedules ``Reporter.post_summary``: the
lambda's free names are the def's, annotations included (OG201).
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

OWNER = """\
    from contextlib import asynccontextmanager

    from fastapi import FastAPI
    from sqlalchemy import create_engine

    from .models import Base


    class Service:
        def __init__(self, url: str) -> None:
            self.url = url
            self.api = FastAPI(lifespan=self._lifespan)

        @asynccontextmanager
        async def _lifespan(self, api: FastAPI):
            Base.metadata.create_all(create_engine(self.url))
            yield


    app = Service("postgresql://db/app").api
"""

MODELS = "from sqlalchemy.orm import DeclarativeBase\n\n\nclass Base(DeclarativeBase):\n    pass\n"


def test_a_lifespan_method_of_the_class_owning_the_app_runs_at_start_up(tmp_path):
    write(tmp_path, {"svc/__init__.py": "", "svc/models.py": MODELS, "svc/main.py": OWNER,
                     "Dockerfile": "FROM python:3.12\nCMD [\"uvicorn\", \"svc.main:app\"]\n"})
    assert findings(tmp_path, "svc/main.py", codes=("OG401",)) == [(16, "OG401")]


JOBS = """\
    from apscheduler.schedulers.background import BackgroundScheduler

    from .reporting import Reporter


    def start(reporter: Reporter) -> BackgroundScheduler:
        clock = BackgroundScheduler(timezone="UTC")
        clock.add_job({job}, "cron", minute=5)
        clock.start()
        return clock
"""

REPORTING = """\
    import httpx


    class Reporter:
        def post_summary(self) -> None:
            httpx.post("https://hooks.example.com/summary", json={"ok": True})
"""

APP = """\
    from flask import Flask

    from .jobs import start
    from .reporting import Reporter


    def create_app():
        app = Flask(__name__)
        start(Reporter())
        return app
"""


@pytest.mark.parametrize("job", ["lambda: reporter.post_summary()", "reporter.post_summary"])
def test_a_job_written_as_a_lambda_calling_a_method_of_an_annotated_parameter(tmp_path, job):
    write(tmp_path, {"ops/__init__.py": "", "ops/jobs.py": JOBS.replace("{job}", job), "ops/reporting.py": REPORTING,
                     "ops/app.py": APP, "Procfile": "web: gunicorn 'ops.app:create_app()' --workers 2\n"})
    assert findings(tmp_path, "ops/jobs.py") == [(8, "OG201")]
