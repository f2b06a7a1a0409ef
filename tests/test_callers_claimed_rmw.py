"""OG301: a row read, changed in Python and written back in a function that every caller the project shows runs
only after winning a claim that excludes the other runners (a Redis lock taken without waiting, a SET NX lease):
one runner at a time reads and writes it, as when the claim is won in the function itself.  One caller without
the claim is enough for two runners to race."""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class ExportMark(Base):
        __tablename__ = "export_marks"

        feed: Mapped[str] = mapped_column(primary_key=True)
        batch: Mapped[int] = mapped_column()
    """

ADVANCE = """
    from sqlalchemy.orm import Session, sessionmaker

    from .models import ExportMark


    def next_batch(factory: sessionmaker) -> int:
        with factory() as session, session.begin():
            mark = session.get(ExportMark, "orders")
            mark.batch = mark.batch + 1
            return mark.batch
    """

# the loop runs it only while it holds a Redis lock taken without waiting (made by a helper of another module)
LOCKED_LOOP = """
    import time

    from redis import Redis

    from .advance import next_batch
    from .locks import export_lock


    def run_forever(client: Redis, factory) -> None:
        while True:
            lock = export_lock(client)
            if lock.acquire(blocking=False):
                try:
                    next_batch(factory)
                finally:
                    lock.release()
            time.sleep(60)
    """

LOCKS = """
    from redis import Redis


    def export_lock(client: Redis):
        return client.lock("exports:orders", timeout=300)
    """

# the same, claimed with a SET NX lease and a leave when it is not won
LEASED_LOOP = """
    import secrets
    import time

    import redis

    from . import advance

    client = redis.Redis()


    def tick(factory) -> None:
        if not client.set("exports:orders", secrets.token_hex(8), nx=True, px=300_000):
            return
        advance.next_batch(factory)


    def run_forever(factory) -> None:
        while True:
            tick(factory)
            time.sleep(60)
    """

# a second caller runs it with no claim at all
UNCLAIMED_ROUTE = """
    from flask import Flask

    from .advance import next_batch

    app = Flask(__name__)


    @app.post("/exports/next")
    def bump():
        return {"batch": next_batch(app.extensions["sessions"])}
    """


@pytest.mark.parametrize("files, expected", [
    ({"exp/loop.py": LOCKED_LOOP, "exp/locks.py": LOCKS}, []),
    ({"exp/loop.py": LEASED_LOOP}, []),
    ({"exp/loop.py": LOCKED_LOOP, "exp/locks.py": LOCKS, "exp/web.py": UNCLAIMED_ROUTE}, [(10, "OG301")]),
])
def test_a_change_every_caller_runs_under_a_claim(tmp_path, files, expected):
    write(tmp_path, {"exp/__init__.py": "", "exp/models.py": MODELS, "exp/advance.py": ADVANCE, **files})
    assert findings(tmp_path, "exp/advance.py", codes=("OG301",)) == expected
