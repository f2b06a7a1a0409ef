"""OG606 and a failed insert's handler: a read in an ``except`` handler whose every path leaves the function
(``raise``, ``return``, a framework's ``abort``) is followed by nothing the rest of the work writes, so it is no
read of a read-then-write with a write after the ``try``.  A read and a write inside the handler itself, or a
handler that falls through to the rest of the work, still are."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """\
    from sqlalchemy.exc import IntegrityError
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class Label(Base):
        __tablename__ = "labels"
        id: Mapped[int] = mapped_column(primary_key=True)
        title: Mapped[str] = mapped_column(unique=True)
        uses: Mapped[int] = mapped_column(default=0)
"""

STORE = """\
    from flask import abort
    from sqlalchemy import select
    from sqlalchemy.exc import IntegrityError

    from .models import Label


    def insert_label(session, title):
        label = Label(title=title)
        try:
            session.add(label)
            session.flush()
        except IntegrityError:
            session.rollback()
            {handler}
        return label
"""

VIEW = """\
    import threading

    from .store import insert_label

    _labels_lock = threading.Lock()


    def create_label(session, title):
        with _labels_lock:
            label = insert_label(session, title)
            session.commit()
            return label
"""

LEAVING = {
    "abort": """taken = session.scalars(select(Label).where(Label.title == title)).first()
            abort(409, f"label {taken.id} exists")""",
    "raise": """taken = session.scalars(select(Label).where(Label.title == title)).first()
            raise ValueError(taken.id)""",
    "branches": """taken = session.scalars(select(Label).where(Label.title == title)).first()
            if taken is not None:
                abort(409)
            else:
                raise""",
}


@pytest.mark.parametrize("handler", sorted(LEAVING))
def test_a_conflict_read_in_a_handler_that_leaves_is_no_read_before_the_commit(tmp_path, handler):
    store = STORE.replace("{handler}", LEAVING[handler])
    write(tmp_path, {"tags/__init__.py": "", "tags/models.py": MODELS, "tags/store.py": store, "tags/view.py": VIEW})
    assert findings(tmp_path, "tags/view.py", codes=("OG606",)) == []


def test_a_handler_that_falls_through_still_reads_before_the_commit(tmp_path):
    # The handler hands back the row that won; the caller's commit runs after the read.
    falls_through = """label = session.scalars(select(Label).where(Label.title == title)).first()"""
    store = STORE.replace("{handler}", falls_through)
    write(tmp_path, {"tags/__init__.py": "", "tags/models.py": MODELS, "tags/store.py": store, "tags/view.py": VIEW})
    assert findings(tmp_path, "tags/view.py", codes=("OG606",)) == [(9, "OG606")]


def test_a_read_and_a_write_inside_a_leaving_handler_still_count(tmp_path):
    counts_inside = """taken = session.scalars(select(Label).where(Label.title == title)).first()
            taken.uses = taken.uses + 1
            session.commit()
            return taken"""
    store = STORE.replace("{handler}", counts_inside)
    write(tmp_path, {"tags/__init__.py": "", "tags/models.py": MODELS, "tags/store.py": store, "tags/view.py": VIEW})
    assert findings(tmp_path, "tags/view.py", codes=("OG606",)) == [(9, "OG606")]
