"""OG103: a lock helper that hands its locked section to the caller (a ``@contextmanager`` around a lock that
waits) is a mutex its callers' blocks queue on.  Request code queues on purpose; a scheduled job that enters it
with a job-wide key has every replica's run wait for the first and then do the work again.  Reported at the lock,
with the job that enters it; the key may be the helper's parameter, fixed by the job.
"""
from __future__ import annotations

import textwrap

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

GATES = """\
    from contextlib import contextmanager

    import redis

    client = redis.Redis(host="redis")


    @contextmanager
    def gate(name: str):
        held = client.lock(f"gates:{name}", timeout=120)
        held.acquire()
        try:
            yield
        finally:
            held.release()
"""

JOBS = """\
    from apscheduler.schedulers.background import BackgroundScheduler

    from yard.gates import gate

    sched = BackgroundScheduler(timezone="UTC")


    def reorder_stock() -> None:
        with gate("reorder"):
            client_total = 1
            print(client_total)


    sched.add_job(reorder_stock, "interval", minutes=10)
    sched.start()
"""

VIEWS = """\
    from flask import Flask

    from yard.gates import gate

    app = Flask(__name__)


    @app.post("/stock/<sku>/count")
    def count(sku: str):
        with gate("counting"):
            return {"sku": sku}
"""


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(text).splitlines(), 1) if needle in line)


def _check(tmp_path, files):
    write(tmp_path, {"yard/__init__.py": "", "yard/gates.py": GATES, **files})
    return findings(tmp_path, "yard/gates.py", codes=("OG103",))


def test_a_scheduled_job_entering_a_waiting_lock_helper_with_a_fixed_name_is_reported(tmp_path):
    assert _check(tmp_path, {"yard/jobs.py": JOBS}) == [(_line(GATES, "held.acquire()"), "OG103")]


def test_request_code_queueing_on_the_helper_is_left_alone(tmp_path):
    assert _check(tmp_path, {"yard/views.py": VIEWS}) == []


def test_a_job_entering_it_with_a_key_of_its_own_making_is_left_alone(tmp_path):
    per_row = JOBS.replace("def reorder_stock() -> None:", 'def reorder_stock(sku: str = "all") -> None:').replace(
        'with gate("reorder"):', 'with gate(f"reorder:{sku}"):')
    assert _check(tmp_path, {"yard/jobs.py": per_row}) == []


def test_a_helper_that_does_not_wait_is_left_alone(tmp_path):
    gates = GATES.replace("held.acquire()", "if not held.acquire(blocking=False):\n            yield False\n"
                          "            return")
    write(tmp_path, {"yard/__init__.py": "", "yard/gates.py": gates, "yard/jobs.py": JOBS})
    assert findings(tmp_path, "yard/gates.py", codes=("OG103",)) == []


PG_GATES = """\
    from contextlib import contextmanager

    import psycopg

    conn = psycopg.connect("postgresql://db/yard", autocommit=True)


    @contextmanager
    def gate(key: int):
        conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
"""


def test_a_postgres_lock_helper_a_job_enters_with_a_fixed_key_is_reported(tmp_path):
    jobs = JOBS.replace('with gate("reorder"):', "with gate(4401):")
    write(tmp_path, {"yard/__init__.py": "", "yard/gates.py": PG_GATES, "yard/jobs.py": jobs})
    assert findings(tmp_path, "yard/gates.py", codes=("OG103",)) == [(_line(PG_GATES, "pg_advisory_lock("), "OG103")]
    views = VIEWS.replace('with gate("counting"):', "with gate(4402):")
    write(tmp_path, {"yard/jobs.py": "", "yard/views.py": views})
    assert findings(tmp_path, "yard/gates.py", codes=("OG103",)) == []


# -- keys written down to a period: the same key on every replica for that day or hour ---------------------
@pytest.mark.parametrize("key", [
    'f"reorder:{day:%Y%m%d}"',
    'f"reorder:{day:%Y-%m-%dT%H}"',
    'day.strftime("reorder:%Y%m%d")',
    'f"reorder:{date.today()}"',
    'f"reorder:{datetime.now(timezone.utc):%Y%m%d%H}"',
], ids=["format-spec", "hour", "strftime", "today", "clock-formatted"])
def test_a_job_entering_with_the_period_it_runs_for_is_reported(tmp_path, key):
    jobs = JOBS.replace("from yard.gates import gate", "from datetime import date, datetime, timezone\n\n"
                        "    from yard.gates import gate").replace(
        "def reorder_stock() -> None:", "def reorder_stock() -> None:\n        day = datetime.now(timezone.utc)").replace(
        'with gate("reorder"):', f"with gate({key}):")
    assert _check(tmp_path, {"yard/jobs.py": jobs}) == [(_line(GATES, "held.acquire()"), "OG103")]


@pytest.mark.parametrize("key", [
    'f"reorder:{day:%Y%m%d%H%M%S}"',  # down to the second: a key per run
    'f"reorder:{order.placed:%Y%m%d}"',  # a record's own date: one key per record
    'f"reorder:{datetime.now()}"',  # a raw clock reading
], ids=["to-the-second", "a-record-date", "raw-clock"])
def test_keys_that_are_not_the_period_are_left_alone(tmp_path, key):
    jobs = JOBS.replace("from yard.gates import gate", "from datetime import datetime\n\n"
                        "    from yard.gates import gate").replace(
        "def reorder_stock() -> None:", "def reorder_stock(order=None) -> None:\n        day = datetime.now()").replace(
        'with gate("reorder"):', f"with gate({key}):")
    assert _check(tmp_path, {"yard/jobs.py": jobs}) == []


# -- a lock object keyed on what its instance holds: one job-wide key per instance made with a fixed value ------
MUTEXES = """\
    from contextlib import contextmanager

    import psycopg

    conn = psycopg.connect("postgresql://db/yard", autocommit=True)


    class Mutex:
        def __init__(self, key: int) -> None:
            self.key = key

        @contextmanager
        def held(self):
            conn.execute("SELECT pg_advisory_lock(%s)", (self.key,))
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (self.key,))
"""

INSTANCE_JOBS = """\
    from apscheduler.schedulers.background import BackgroundScheduler

    from yard import gates as locking

    REORDER = locking.Mutex(key={key})
    sched = BackgroundScheduler(timezone="UTC")


    def reorder_stock() -> None:
        with REORDER.held():
            print("reordered")


    sched.add_job(reorder_stock, "interval", minutes=10)
    sched.start()
"""


def test_a_job_entering_a_lock_object_made_with_a_fixed_key_is_reported(tmp_path):
    write(tmp_path, {"yard/__init__.py": "", "yard/gates.py": MUTEXES,
                     "yard/jobs.py": INSTANCE_JOBS.format(key="0x5150")})
    assert findings(tmp_path, "yard/gates.py", codes=("OG103",)) == [(_line(MUTEXES, "pg_advisory_lock("), "OG103")]


def test_a_lock_object_made_per_call_with_a_key_of_the_callers_making_is_left_alone(tmp_path):
    per_row = INSTANCE_JOBS.format(key="0").replace("REORDER = locking.Mutex(key=0)\n", "").replace(
        "def reorder_stock() -> None:\n        with REORDER.held():",
        "def reorder_stock(sku: int = 0) -> None:\n        with locking.Mutex(key=sku).held():")
    write(tmp_path, {"yard/__init__.py": "", "yard/gates.py": MUTEXES, "yard/jobs.py": per_row})
    assert findings(tmp_path, "yard/gates.py", codes=("OG103",)) == []


def test_a_key_computed_from_the_helpers_parameter_into_a_local_is_fixed_by_the_job(tmp_path):
    gates = PG_GATES.replace("def gate(key: int):", "def gate(name: str):\n        key = zlib.crc32(name.encode())").replace(
        "import psycopg\n", "import zlib\n\n    import psycopg\n")
    jobs = JOBS.replace('with gate("reorder"):', 'with gate("nightly-reorder"):')
    write(tmp_path, {"yard/__init__.py": "", "yard/gates.py": gates, "yard/jobs.py": jobs})
    assert findings(tmp_path, "yard/gates.py", codes=("OG103",)) == [(_line(gates, "pg_advisory_lock("), "OG103")]
