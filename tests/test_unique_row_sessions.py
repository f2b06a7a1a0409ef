"""A job that first stages a row whose columns the model declares unique together (``session.add(Run(...))``) and
sends it in a ``try`` whose duplicate-key handler leaves: the replica whose insert goes in runs the work, every
other one's insert raises and it leaves.  A row with no unique constraint on what the job writes, or a handler
that goes on to the work, claims nothing (OG201)."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """
    from sqlalchemy import Index, String, UniqueConstraint
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class SweepMark(Base):
        __tablename__ = "sweep_marks"
        __table_args__ = ({constraint},)

        id: Mapped[int] = mapped_column(primary_key=True)
        task: Mapped[str] = mapped_column(String(80))
        day: Mapped[str] = mapped_column(String(10))
    """

UNIQUE = 'UniqueConstraint("task", "day", name="uq_sweep_marks")'
UNIQUE_INDEX = 'Index("ix_sweep_marks", "task", "day", unique=True)'
PLAIN_INDEX = 'Index("ix_sweep_marks", "task", "day")'

JOB = """
    import datetime

    import httpx
    from apscheduler.schedulers.blocking import BlockingScheduler
    from sqlalchemy import create_engine
    from sqlalchemy.exc import IntegrityError
    from sqlalchemy.orm import Session

    from {models_import}

    engine = create_engine("postgresql://db/app")


    def first_of_day() -> bool:
        with Session(engine) as session:
            session.add({model}(task="reminders", day=datetime.date.today().isoformat()))
            try:
                session.commit()
            except IntegrityError:
                session.rollback()
                {on_duplicate}
        return True


    def send_reminders():
        if not first_of_day():
            return
        httpx.post("https://notify.example/reminders")


    sched = BlockingScheduler()
    sched.add_job(send_reminders, "cron", hour=7)
    sched.start()
    """

DOCKERFILE = """
    FROM python:3.12-slim
    COPY sweeps ./sweeps
    CMD ["python", "-m", "sweeps.jobs"]
    """

COMPOSE = """
    services:
      sweeps:
        build: .
        deploy:
          replicas: 2
    """


def _project(tmp_path, constraint=UNIQUE, on_duplicate="return False", models_import="sweeps.models import SweepMark",
             model="SweepMark"):
    write(tmp_path, {"sweeps/__init__.py": "", "sweeps/models.py": MODELS.format(constraint=constraint),
                     "sweeps/jobs.py": JOB.format(on_duplicate=on_duplicate, models_import=models_import,
                                                  model=model),
                     "Dockerfile": DOCKERFILE, "docker-compose.yml": COMPOSE})
    return findings(tmp_path, "sweeps/jobs.py", codes=("OG201",))


@pytest.mark.parametrize("constraint", [UNIQUE, UNIQUE_INDEX])
def test_a_unique_row_staged_then_sent_in_a_try_claims_the_day(tmp_path, constraint):
    assert _project(tmp_path, constraint=constraint) == []


def test_the_model_module_imported_whole(tmp_path):
    assert _project(tmp_path, models_import="sweeps import models", model="models.SweepMark") == []


def test_without_a_unique_constraint_every_replica_inserts(tmp_path):
    assert _project(tmp_path, constraint=PLAIN_INDEX) == [(26, "OG201")]


def test_a_duplicate_that_goes_on_claims_nothing(tmp_path):
    assert _project(tmp_path, on_duplicate="pass") == [(26, "OG201")]
