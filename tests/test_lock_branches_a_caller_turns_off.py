"""OG103: a lock helper that waits or tries as its caller asks (``if wait: <blocking lock> else: <try-lock>``) waits
only for the callers that leave ``wait`` true.  A scheduled job that hands it ``wait=False`` (and reads the answer)
never reaches the blocking branch: nothing queues; the same job leaving the default is reported as before.  A flag
read the other way round (``if skip_if_busy: <try> else: <wait>``) and a helper keyed on its parameter, judged by
its callers, are read alike.
"""
from __future__ import annotations

import textwrap

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SEMAPHORES = """\
    import zlib
    from contextlib import contextmanager

    import psycopg

    conn = psycopg.connect("postgresql://db/harbor")


    @contextmanager
    def berth(name: str, *, wait: bool = True):
        key = zlib.crc32(name.encode())
        with conn.transaction():
            if wait:
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (key,))
                got = True
            else:
                got = conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (key,)).fetchone()[0]
            yield got
"""

JOBS = """\
    from apscheduler.schedulers.background import BackgroundScheduler

    from harbor.semaphores import berth

    sched = BackgroundScheduler(timezone="UTC")


    def assign_cranes() -> None:
        with berth("cranes"{extra}) as got:
            if not got:
                return
            print("cranes assigned")


    sched.add_job(assign_cranes, "interval", minutes=5)
    sched.start()
"""


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(text).splitlines(), 1) if needle in line)


def _check(tmp_path, jobs: str, semaphores: str = SEMAPHORES):
    write(tmp_path, {"harbor/__init__.py": "", "harbor/semaphores.py": semaphores, "harbor/jobs.py": jobs})
    return findings(tmp_path, "harbor/semaphores.py", codes=("OG103",))


def test_a_job_that_asks_the_helper_not_to_wait_never_reaches_its_blocking_branch(tmp_path):
    assert _check(tmp_path, JOBS.format(extra=", wait=False")) == []


@pytest.mark.parametrize("extra", ["", ", wait=True"], ids=["default", "explicit"])
def test_a_job_that_lets_it_wait_is_reported(tmp_path, extra):
    assert _check(tmp_path, JOBS.format(extra=extra)) == [(_line(SEMAPHORES, "pg_advisory_xact_lock("), "OG103")]


def test_a_flag_read_the_other_way_round(tmp_path):
    # ``if skip_if_busy: <try> else: <wait>``: the blocking branch is the ``else``, which ``True`` turns off
    flipped = SEMAPHORES.replace("*, wait: bool = True", "skip_if_busy: bool = False").replace(
        "            if wait:\n                conn.execute(\"SELECT pg_advisory_xact_lock(%s)\", (key,))\n"
        "                got = True\n            else:\n"
        "                got = conn.execute(\"SELECT pg_try_advisory_xact_lock(%s)\", (key,)).fetchone()[0]\n",
        "            if skip_if_busy:\n"
        "                got = conn.execute(\"SELECT pg_try_advisory_xact_lock(%s)\", (key,)).fetchone()[0]\n"
        "            else:\n                conn.execute(\"SELECT pg_advisory_xact_lock(%s)\", (key,))\n"
        "                got = True\n")
    assert "skip_if_busy:" in flipped
    assert _check(tmp_path, JOBS.format(extra=", True"), flipped) == []
    assert _check(tmp_path, JOBS.format(extra=""), flipped) == [(_line(flipped, "pg_advisory_xact_lock("), "OG103")]


# -- a helper keyed on its parameter, judged by its callers: the same for a caller that turns the wait off --------
HOLDS = """\
    import psycopg

    conn = psycopg.connect("postgresql://db/harbor", autocommit=True)
    TIDE_TABLES = 7_100_001


    def hold(key: int, block: bool = True) -> bool:
        if block:
            conn.execute("SELECT pg_advisory_lock(%s)", (key,))
            return True
        return conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]


    def release(key: int) -> None:
        conn.execute("SELECT pg_advisory_unlock(%s)", (key,))


    def refresh_tide_tables() -> None:
        if not hold(TIDE_TABLES{extra}):
            return
        try:
            print("tides refreshed")
        finally:
            release(TIDE_TABLES)
"""


def test_every_caller_of_a_keyed_helper_turning_the_wait_off(tmp_path):
    write(tmp_path, {"harbor/__init__.py": "", "harbor/holds.py": HOLDS.format(extra=", block=False")})
    assert findings(tmp_path, "harbor/holds.py", codes=("OG103",)) == []
    holds = HOLDS.format(extra="")
    write(tmp_path, {"harbor/holds.py": holds})
    assert findings(tmp_path, "harbor/holds.py", codes=("OG103",)) == [(_line(holds, "pg_advisory_lock("), "OG103")]
