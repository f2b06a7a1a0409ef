"""Rows picked with a SQLAlchemy 2.0 ``select()`` and handed to a worker loop.

- A helper that selects rows by their state (``select(Model).where(Model.status == ...)``, the statement built
  inline or into a name first, ``sa.select``, ``filter_by``, run by ``session.scalars(...)`` or
  ``session.execute(...).scalars().all()``), marks each row and hands the rows back is a pickup: the work on
  the rows is its caller's, so marking them is not all the loop does (OG302).  A statement built into a name is
  reported where it is written.
- A worker loop whose pass calls project functions with each row that a pickup took is a consumer working on
  its rows, not a job every replica repeats: OG201 stays silent when the rows were claimed (skip-locked select,
  a locked select whose rows are marked, conditional ``UPDATE ... RETURNING``) and when they were picked without a claim (OG302 reports the pickup).
"""
from __future__ import annotations

import textwrap

import pytest
from test_handed_jobs import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)


DOCKERFILE = """\
    FROM python:3.12-slim
    COPY labelhouse labelhouse
    CMD ["python", "-m", "labelhouse.worker"]
"""

MODELS = """\
    from sqlalchemy import String
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class Label(Base):
        __tablename__ = "labels"

        id: Mapped[int] = mapped_column(primary_key=True)
        parcel_ref: Mapped[str] = mapped_column(String(32))
        status: Mapped[str] = mapped_column(String(16), default="queued")


    class Printer(Base):
        __tablename__ = "printers"

        id: Mapped[int] = mapped_column(primary_key=True)
        online: Mapped[bool] = mapped_column(default=True)
"""

DB = """\
    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker

    Session = sessionmaker(create_engine("postgresql+psycopg://labels@db/labels"))
"""

PRINTING = """\
    import httpx


    def print_label(label) -> str:
        reply = httpx.post("https://printers.example.org/jobs", json={"parcel": label.parcel_ref}, timeout=60)
        reply.raise_for_status()
        return reply.json()["job"]


    def ping(printer) -> None:
        httpx.post("https://printers.example.org/ping", json={"printer": printer.id}, timeout=5)
"""

FINISH = """\


    def finish(session: Session, label: Label, job: str | None) -> None:
        label = session.merge(label)
        label.status = "printed" if job else "failed"
        session.commit()
"""

# The statement built into a name, then run and listed; each row marked and the rows handed back.
QUEUE_LOCAL = """\
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from labelhouse.models import Label


    def take(session: Session, size: int) -> list[Label]:
        stmt = select(Label).where(Label.status == "queued").order_by(Label.id).limit(size)
        labels = list(session.scalars(stmt))
        for label in labels:
            label.status = "printing"
        session.commit()
        return labels
""" + FINISH

# The same with the statement inline and ``.all()``, no limit.
QUEUE_INLINE = """\
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from labelhouse.models import Label


    def take(session: Session, size: int) -> list[Label]:
        labels = session.scalars(select(Label).where(Label.status == "queued")).all()
        for label in labels:
            label.status = "printing"
        session.commit()
        return labels
""" + FINISH

# ``import sqlalchemy as sa``, ``filter_by``, ``session.execute(stmt).scalars().all()``.
QUEUE_ALIAS = """\
    import sqlalchemy as sa
    from sqlalchemy.orm import Session

    from labelhouse.models import Label


    def take(session: Session, size: int) -> list[Label]:
        stmt = sa.select(Label).filter_by(status="queued").limit(size)
        labels = session.execute(stmt).scalars().all()
        for label in labels:
            label.status = "printing"
        session.flush()
        session.commit()
        return labels
""" + FINISH

# The safe twin: the rows are locked, skipping those another replica holds, marked and committed.
QUEUE_SKIP_LOCKED = """\
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from labelhouse.models import Label


    def take(session: Session, size: int) -> list[Label]:
        stmt = (
            select(Label)
            .where(Label.status == "queued")
            .order_by(Label.id)
            .limit(size)
            .with_for_update(skip_locked=True)
        )
        labels = list(session.scalars(stmt))
        for label in labels:
            label.status = "printing"
        session.commit()
        return labels
""" + FINISH

# A blocking row lock, the rows moved out of the state that selected them before the lock is released: a second
# replica waits, then finds them no longer queued.
QUEUE_LOCKED_MARKED = """\
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from labelhouse.models import Label


    def take(session: Session, size: int) -> list[Label]:
        stmt = select(Label).where(Label.status == "queued").limit(size).with_for_update()
        labels = session.scalars(stmt).all()
        for label in labels:
            label.status = "printing"
        session.commit()
        return labels
""" + FINISH

# Claimed by one conditional statement: only the rows this UPDATE moved come back.
QUEUE_RETURNING = """\
    from sqlalchemy import update
    from sqlalchemy.orm import Session

    from labelhouse.models import Label


    def take(session: Session, size: int) -> list[Label]:
        stmt = update(Label).where(Label.status == "queued").values(status="printing").returning(Label)
        labels = list(session.scalars(stmt))
        session.commit()
        return labels
""" + FINISH

# The same claim in SQL, through a cursor's fetch.
QUEUE_RETURNING_SQL = """\
    from sqlalchemy.orm import Session

    from labelhouse.models import Label


    def take(conn, size: int):
        with conn.cursor() as cur:
            cur.execute(
                "UPDATE labels SET status = 'printing' WHERE status = 'queued' RETURNING id, parcel_ref", (size,)
            )
            rows = cur.fetchall()
        conn.commit()
        return rows
""" + FINISH

WORKER = """\
    import logging
    import time

    from labelhouse import queue
    from labelhouse.db import Session
    from labelhouse.printing import print_label

    log = logging.getLogger(__name__)


    def run() -> None:
        while True:
            with Session() as session:
                batch = queue.take(session, 5)
                if not batch:
                    time.sleep(3)
                    continue
                for label in batch:
                    try:
                        queue.finish(session, label, print_label(label))
                    except Exception:
                        log.exception("label %s failed", label.id)
                        session.rollback()
                        queue.finish(session, label, None)


    if __name__ == "__main__":
        run()
"""


def _project(tmp_path, queue: str, worker: str = WORKER) -> None:
    write(tmp_path, {"Dockerfile": DOCKERFILE, "labelhouse/__init__.py": "", "labelhouse/models.py": MODELS,
                     "labelhouse/db.py": DB, "labelhouse/printing.py": PRINTING, "labelhouse/queue.py": queue,
                     "labelhouse/worker.py": worker})


def _line(text: str, fragment: str) -> int:
    return next(number for number, line in enumerate(textwrap.dedent(text).splitlines(), 1) if fragment in line)


# -- OG302: the pickup --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("queue, selection", [
    pytest.param(QUEUE_LOCAL, "stmt = select(", id="statement-in-a-local"),
    pytest.param(QUEUE_INLINE, "session.scalars(select(", id="inline"),
    pytest.param(QUEUE_ALIAS, "stmt = sa.select(", id="sa-alias-execute-scalars-all"),
])
def test_rows_selected_by_state_marked_and_handed_to_the_loop_are_picked_without_a_claim(tmp_path, queue, selection):
    _project(tmp_path, queue)
    assert findings(tmp_path, "labelhouse/queue.py", codes=("OG302",)) == [(_line(queue, selection), "OG302")]


def test_the_finding_names_the_statement_and_where_it_runs(tmp_path):
    _project(tmp_path, QUEUE_LOCAL)
    from onceguard.config import from_mapping
    from onceguard.engine.check import check_source

    path = tmp_path / "labelhouse" / "queue.py"
    found = [d for d in check_source(path.read_bytes(), str(path), from_mapping({}, root=str(tmp_path)),
                                     cross_file=True) if d.code == "OG302"]
    assert len(found) == 1
    assert "select(Label)" in found[0].message and "session.scalars(stmt)" in found[0].suggestion


def test_a_loop_that_only_marks_rows_it_keeps_is_still_duplicate_work_only(tmp_path):
    # Nothing handed back and nothing else done per row: a second replica repeats a flag flip.
    queue = """\
        from sqlalchemy import select

        from labelhouse.models import Label


        def expire(session) -> None:
            stmt = select(Label).where(Label.status == "queued")
            for label in session.scalars(stmt):
                label.status = "expired"
            session.commit()
    """
    _project(tmp_path, queue)
    assert findings(tmp_path, "labelhouse/queue.py", codes=("OG302",)) == []


def test_a_repository_statement_in_a_local_marked_by_its_caller_is_reported_at_the_call(tmp_path):
    repository = """\
        from sqlalchemy import select

        from labelhouse.models import Label


        def queued(session, size: int):
            stmt = select(Label).where(Label.status == "queued").limit(size)
            return session.scalars(stmt).all()
    """
    worker = """\
        import time

        from labelhouse.db import Session
        from labelhouse.printing import print_label
        from labelhouse.queue import queued


        def run() -> None:
            while True:
                with Session() as session:
                    labels = queued(session, 5)
                    for label in labels:
                        print_label(label)
                        label.status = "printed"
                    session.commit()
                time.sleep(3)


        if __name__ == "__main__":
            run()
    """
    _project(tmp_path, repository, worker)
    assert findings(tmp_path, "labelhouse/worker.py", codes=("OG302", "OG201")) == [
        (_line(worker, "labels = queued("), "OG302")]


@pytest.mark.parametrize("queue", [
    pytest.param(QUEUE_SKIP_LOCKED, id="skip-locked"),
    pytest.param(QUEUE_LOCKED_MARKED, id="locked-and-marked"),
    pytest.param(QUEUE_RETURNING, id="update-returning"),
    pytest.param(QUEUE_RETURNING_SQL, id="sql-update-returning"),
])
def test_rows_taken_with_a_claim_are_no_pickup(tmp_path, queue):
    _project(tmp_path, queue)
    assert findings(tmp_path, "labelhouse/queue.py", codes=("OG302",)) == []


# -- OG201: the worker loop --------------------------------------------------------------------------------------
@pytest.mark.parametrize("queue", [
    pytest.param(QUEUE_SKIP_LOCKED, id="skip-locked"),
    pytest.param(QUEUE_LOCKED_MARKED, id="locked-and-marked"),
    pytest.param(QUEUE_RETURNING, id="update-returning"),
    pytest.param(QUEUE_RETURNING_SQL, id="sql-update-returning"),
])
def test_a_worker_loop_over_rows_it_claimed_is_a_consumer(tmp_path, queue):
    _project(tmp_path, queue)
    assert findings(tmp_path, "labelhouse/worker.py", codes=("OG201", "OG302")) == []


def test_a_worker_loop_over_rows_claimed_in_the_pass_itself_is_a_consumer(tmp_path):
    worker = """\
        import time

        from sqlalchemy import select

        from labelhouse.db import Session
        from labelhouse.models import Label
        from labelhouse.printing import print_label


        def run() -> None:
            while True:
                with Session.begin() as session:
                    stmt = select(Label).where(Label.status == "queued").limit(5).with_for_update(skip_locked=True)
                    for label in session.scalars(stmt).all():
                        print_label(label)
                        label.status = "printed"
                time.sleep(3)


        if __name__ == "__main__":
            run()
    """
    _project(tmp_path, QUEUE_SKIP_LOCKED, worker)
    assert findings(tmp_path, "labelhouse/worker.py", codes=("OG201", "OG302")) == []


def test_the_hazard_is_reported_once_at_the_pickup_not_at_the_loop(tmp_path):
    _project(tmp_path, QUEUE_LOCAL)
    assert findings(tmp_path, "labelhouse/worker.py", codes=("OG201", "OG302")) == []
    assert findings(tmp_path, "labelhouse/queue.py", codes=("OG201", "OG302")) == [
        (_line(QUEUE_LOCAL, "stmt = select("), "OG302")]


def test_a_worker_loop_over_rows_it_only_reads_still_runs_its_work_in_every_replica(tmp_path):
    # Rows read, not taken: every replica mails every online printer on every pass.
    queue = """\
        from sqlalchemy import select

        from labelhouse.models import Printer


        def online(session):
            stmt = select(Printer).where(Printer.online.is_(True))
            return list(session.scalars(stmt))
    """
    worker = """\
        import time

        from labelhouse import queue
        from labelhouse.db import Session
        from labelhouse.printing import ping


        def run() -> None:
            while True:
                with Session() as session:
                    for printer in queue.online(session):
                        ping(printer)
                time.sleep(60)


        if __name__ == "__main__":
            run()
    """
    _project(tmp_path, queue, worker)
    assert findings(tmp_path, "labelhouse/worker.py", codes=("OG201",)) == [(_line(worker, "ping(printer)"), "OG201")]


def test_a_pass_that_picks_some_rows_still_runs_its_other_loops_in_every_replica(tmp_path):
    # The pass marks the labels it picks (OG302 there), and also pings every printer: that loop is a job.
    worker = """\
        import time

        from sqlalchemy import select

        from labelhouse.db import Session
        from labelhouse.models import Label, Printer
        from labelhouse.printing import ping, print_label


        def run() -> None:
            while True:
                with Session() as session:
                    for printer in session.scalars(select(Printer)).all():
                        ping(printer)
                    labels = session.scalars(select(Label).where(Label.status == "queued")).all()
                    for label in labels:
                        print_label(label)
                        label.status = "printed"
                    session.commit()
                time.sleep(3)


        if __name__ == "__main__":
            run()
    """
    _project(tmp_path, QUEUE_SKIP_LOCKED, worker)
    assert findings(tmp_path, "labelhouse/worker.py", codes=("OG201", "OG302")) == [
        (_line(worker, "ping(printer)"), "OG201"), (_line(worker, "labels = session.scalars("), "OG302")]
