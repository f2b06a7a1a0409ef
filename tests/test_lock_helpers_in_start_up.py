"""Lock helpers as start-up and job code spell them.

- OG101: a helper whose ``with engine.connect()`` block ends right after the session lock it takes: the lock is
  meant for the caller's work after the block, and goes back to the pool with the connection.
- OG103: a blocking lock around one-off start-up work (a lifespan's backfill that re-checks whether it is done)
  is the replicas waiting their turn, as for migrations; the same lock in a scheduled job is reported.
- OG106: a try-lock helper of a module imported with ``from . import locks``, called as a statement.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

HELPERS = """\
    from sqlalchemy import create_engine, text

    engine = create_engine("postgresql+psycopg://app@db/fleet", pool_size=5)


    def take() -> None:
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(7)"))


    def give_back() -> None:
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_unlock(7)"))
"""


def test_a_helper_whose_block_ends_right_after_the_lock(tmp_path):
    write(tmp_path, {"fleet/__init__.py": "", "fleet/locks.py": HELPERS})
    assert [code for _, code in findings(tmp_path, "fleet/locks.py", codes=("OG101",))] == ["OG101"]


BACKFILL = """\
    from contextlib import asynccontextmanager

    from fastapi import FastAPI
    from sqlalchemy import create_engine, text

    engine = create_engine("postgresql+psycopg://app@db/fleet")


    def backfill() -> None:
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(42)"))
            try:
                done = conn.execute(text("SELECT 1 FROM data_migrations WHERE name = 'v2'")).first()
                if done is None:
                    conn.execute(text("INSERT INTO readings SELECT * FROM legacy_readings"))
                    conn.execute(text("INSERT INTO data_migrations (name) VALUES ('v2')"))
                    conn.commit()
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(42)"))


    {start}
"""

LIFESPAN = """@asynccontextmanager
    async def lifespan(app: FastAPI):
        backfill()
        yield


    app = FastAPI(lifespan=lifespan)"""

SCHEDULED = """from apscheduler.schedulers.background import BackgroundScheduler

    sched = BackgroundScheduler(timezone="UTC")
    sched.add_job(backfill, "interval", minutes=10)
    sched.start()"""


LOOPED = """@asynccontextmanager
    async def lifespan(app: FastAPI):
        import threading
        import time

        def every_ten_minutes() -> None:
            while True:
                backfill()
                time.sleep(600)

        threading.Thread(target=every_ten_minutes, daemon=True).start()
        yield


    app = FastAPI(lifespan=lifespan)"""


@pytest.mark.parametrize("start, expected", [(LIFESPAN, []), (SCHEDULED, ["OG103"]), (LOOPED, ["OG103"])],
                         ids=["start-up", "job", "start-up-loop"])
def test_a_blocking_lock_around_one_off_start_up_work(tmp_path, start, expected):
    write(tmp_path, {"fleet/__init__.py": "", "fleet/boot.py": BACKFILL.format(start=start)})
    assert [code for _, code in findings(tmp_path, "fleet/boot.py", codes=("OG103",))] == expected


LOCKS = """\
    from sqlalchemy import text


    def try_acquire(conn, name: str) -> bool:
        return bool(conn.execute(text("SELECT pg_try_advisory_lock(hashtext(:n))"), {"n": name}).scalar())
"""

REPORT = """\
    from . import locks


    def run_report(conn) -> None:
        {call}
        conn.execute("INSERT INTO reports (day) VALUES (current_date)")
"""


@pytest.mark.parametrize("call, expected", [
    ('locks.try_acquire(conn, "report")', ["OG106"]),
    ('if not locks.try_acquire(conn, "report"):\n            return', []),
], ids=["dropped", "tested"])
def test_a_try_lock_helper_of_a_module_imported_from_its_package(tmp_path, call, expected):
    write(tmp_path, {"grain/__init__.py": "", "grain/locks.py": LOCKS, "grain/reports.py": REPORT.format(call=call)})
    assert [code for _, code in findings(tmp_path, "grain/reports.py", codes=("OG106",))] == expected
