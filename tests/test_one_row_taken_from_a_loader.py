"""OG302 for the one row a worker takes next: a repository selects the oldest row in a state (SQLAlchemy
``.first()``) and returns it, and the caller moves it on through a helper that only sets the new state and
commits, then does the work with the row.  Two replicas asking together get the same row, so both mark it and
both do the work; the finding is on the selection, with the caller's mark as the related place."""
from __future__ import annotations

import textwrap

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """
    from sqlalchemy import String
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class Export(Base):
        __tablename__ = "exports"

        id: Mapped[int] = mapped_column(primary_key=True)
        status: Mapped[str] = mapped_column(String(20), default="queued")
        target: Mapped[str] = mapped_column(String(200))
    """

QUEUE = """
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from .models import Export


    class ExportQueue:
        def __init__(self, db: Session) -> None:
            self.db = db

        def oldest_queued(self) -> Export | None:
            return self.db.scalars(
                select(Export).where(Export.status == "queued").order_by(Export.id){lock}
            ).first()

        def begin(self, export: Export) -> None:
            export.status = "exporting"
            self.db.commit()
    """

RUNNER = """
    from sqlalchemy.orm import Session

    from .queue import ExportQueue
    from .sftp import push


    def run_one(engine) -> bool:
        with Session(engine) as db:
            queue = ExportQueue(db)
            export = queue.oldest_queued()
            if export is None:
                return False
            queue.begin(export)
            push(export.target)
            return True
    """

SFTP = """
    import requests


    def push(target: str) -> None:
        requests.put(f"https://files.example.net/{target}", data=b"...", timeout=30)
    """

# The loader a function of its module, imported by name; the session handed in.
FUNCTION_QUEUE = """
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from .models import Export


    def oldest_queued(db: Session) -> Export | None:
        query = select(Export).where(Export.status == "queued").order_by(Export.id).limit(1){lock}
        return db.execute(query).scalar_one_or_none()


    def begin(db: Session, export: Export) -> None:
        export.status = "exporting"
        db.commit()
    """

FUNCTION_RUNNER = """
    from sqlalchemy.orm import Session

    from .queue import begin, oldest_queued
    from .sftp import push


    def run_one(engine) -> bool:
        with Session(engine) as db:
            export = oldest_queued(db)
            if export is None:
                return False
            begin(db, export)
            push(export.target)
            return True
    """

LOCK = ".with_for_update(skip_locked=True)"


def _line(source: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if text in line)


def _check(tmp_path, queue: str, runner: str):
    write(tmp_path, {"exports/__init__.py": "", "exports/models.py": MODELS, "exports/queue.py": queue,
                     "exports/runner.py": runner, "exports/sftp.py": SFTP})
    return findings(tmp_path, "exports/queue.py", codes=("OG302",))


@pytest.mark.parametrize("queue, runner, selection", [
    (QUEUE, RUNNER, "return self.db.scalars("),
    (FUNCTION_QUEUE, FUNCTION_RUNNER, "query = select(Export)"),
], ids=["repository-method", "module-function"])
def test_the_row_a_caller_takes_and_marks_through_a_helper(tmp_path, queue, runner, selection):
    queue = queue.format(lock="")
    assert _check(tmp_path, queue, runner) == [(_line(queue, selection), "OG302")]


@pytest.mark.parametrize("queue, runner", [(QUEUE, RUNNER), (FUNCTION_QUEUE, FUNCTION_RUNNER)],
                         ids=["repository-method", "module-function"])
def test_the_row_selected_with_skip_locked_is_clean(tmp_path, queue, runner):
    assert _check(tmp_path, queue.format(lock=LOCK), runner) == []


def test_a_caller_that_only_marks_the_row_is_clean(tmp_path):
    runner = RUNNER.replace("            push(export.target)\n", "")
    assert _check(tmp_path, QUEUE.format(lock=""), runner) == []


def test_a_row_picked_with_first_and_marked_in_place(tmp_path):
    worker = """
        from sqlalchemy import select
        from sqlalchemy.orm import Session

        from .models import Export
        from .sftp import push


        def run_one(db: Session) -> None:
            export = db.execute(select(Export).where(Export.status == "queued").limit(1)).scalars().first()
            if export is None:
                return
            export.status = "exporting"
            db.commit()
            push(export.target)
        """
    write(tmp_path, {"exports/__init__.py": "", "exports/models.py": MODELS, "exports/worker.py": worker,
                     "exports/sftp.py": SFTP})
    assert findings(tmp_path, "exports/worker.py", codes=("OG302",)) == [(10, "OG302")]
