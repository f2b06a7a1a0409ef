"""A context manager of the project that yields a claim's answer is a claim helper (OG201).

``with exclusive(key) as got: if not got: return`` leads the job with a claim when ``exclusive`` is a
``@contextmanager`` (or ``@asynccontextmanager``) that takes a try-lock, a Redis ``SET NX`` or a non-blocking
lock and yields whether it got it, wherever it is defined and however it is imported.  One that yields
something else (a connection, a ``True`` nothing decides), a blocking lock, and a job that never tests what the
``with`` bound stay reported.
"""
from __future__ import annotations

import ast
import textwrap

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

DB = """\
    from psycopg_pool import ConnectionPool

    pool = ConnectionPool("postgresql://db/ledger")
"""

#: The lock helper: a transaction-level try-lock held while the ``with`` block runs, its answer yielded.
LOCKS = """\
    from contextlib import contextmanager

    from ledger.db import pool


    @contextmanager
    def exclusive(key: int):
        with pool.connection() as conn:
            with conn.transaction():
                row = conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (key,)).fetchone()
                got = bool(row and row[0])
                yield got
"""

JOBS = """\
    from apscheduler.schedulers.background import BackgroundScheduler

    from ledger.db import pool
    from ledger.locks import exclusive

    sched = BackgroundScheduler(timezone="UTC")


    def post_interest():
        with exclusive(7001) as got:
            if not got:
                return
            with pool.connection() as conn:
                conn.execute("INSERT INTO postings (account_id, amount) SELECT id, balance * rate FROM accounts")


    sched.add_job(post_interest, "interval", hours=1)
    sched.start()
"""


def _check(tmp_path, jobs=JOBS, locks=LOCKS):
    files = {"ledger/__init__.py": "", "ledger/db.py": DB, "ledger/locks.py": locks, "ledger/jobs.py": jobs}
    for text in files.values():
        ast.parse(textwrap.dedent(text))  # a broken variant would be silently clean
    write(tmp_path, files)
    return findings(tmp_path, "ledger/jobs.py")


def _reported(jobs=JOBS):
    """The finding at the job's ``def``."""
    lines = textwrap.dedent(jobs).splitlines()
    return [(next(i for i, line in enumerate(lines, 1) if line.startswith(("def post_interest", "async def"))),
             "OG201")]


# -- the answer yielded and tested ----------------------------------------------------------------------------
def test_a_context_manager_yielding_its_try_locks_answer_leads_the_job_with_a_claim(tmp_path):
    assert _check(tmp_path) == []


def test_the_work_inside_if_got_is_claimed_too(tmp_path):
    inside = JOBS.replace("""            if not got:
                return
            with pool.connection() as conn:
                conn.execute(""", """            if got:
                with pool.connection() as conn:
                    conn.execute(""")
    assert "if got:" in inside
    assert _check(tmp_path, jobs=inside) == []


def test_the_context_manager_in_the_jobs_own_module(tmp_path):
    helper = textwrap.dedent(LOCKS).split("from ledger.db import pool\n")[1].lstrip()
    own = textwrap.dedent(JOBS).replace("from ledger.locks import exclusive\n", "from contextlib import contextmanager\n") \
        .replace("sched = BackgroundScheduler", helper + "\n\nsched = BackgroundScheduler")
    assert "def exclusive" in own
    assert _check(tmp_path, jobs=own, locks="") == []


@pytest.mark.parametrize("imported, used", [
    ("from ledger.locks import exclusive as only_one", "only_one"),
    ("import ledger.locks as locking", "locking.exclusive"),
    ("from ledger import locks", "locks.exclusive"),
    ("from .locks import exclusive", "exclusive"),
])
def test_the_context_manager_however_it_is_imported(tmp_path, imported, used):
    spelled = JOBS.replace("from ledger.locks import exclusive", imported).replace("with exclusive(", f"with {used}(")
    assert _check(tmp_path, jobs=spelled) == []


def test_the_answer_read_off_a_cursor_and_yielded_directly(tmp_path):
    locks = LOCKS.replace("""            row = conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (key,)).fetchone()
                got = bool(row and row[0])
                yield got""", """            cur = conn.cursor()
                cur.execute("SELECT pg_try_advisory_xact_lock(%s)", (key,))
                yield cur.fetchone()[0]""")
    assert "yield cur.fetchone()[0]" in locks
    assert _check(tmp_path, locks=locks) == []


def test_constants_the_answer_decides(tmp_path):
    locks = LOCKS.replace("""            got = bool(row and row[0])
                yield got""", """            if not row[0]:
                    yield False
                    return
                yield True""")
    assert "yield True" in locks
    assert _check(tmp_path, locks=locks) == []


ASYNC_LOCKS = """\
    from contextlib import asynccontextmanager

    from psycopg_pool import AsyncConnectionPool

    pool = AsyncConnectionPool("postgresql://db/ledger")


    @asynccontextmanager
    async def exclusive(key: int):
        async with pool.connection() as conn:
            async with conn.transaction():
                cur = await conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (key,))
                row = await cur.fetchone()
                yield bool(row and row[0])
"""

ASYNC_JOBS = """\
    import httpx
    from apscheduler.schedulers.asyncio import AsyncIOScheduler

    from ledger.locks import exclusive

    sched = AsyncIOScheduler(timezone="UTC")


    async def post_interest():
        async with exclusive(7001) as got:
            if not got:
                return
            async with httpx.AsyncClient() as client:
                await client.post("https://bank.example.org/interest", json={"run": "hourly"})


    def start():
        sched.add_job(post_interest, "interval", hours=1)
        sched.start()
"""


def test_an_async_context_manager_entered_with_async_with(tmp_path):
    assert _check(tmp_path, jobs=ASYNC_JOBS, locks=ASYNC_LOCKS) == []


def test_the_async_job_that_ignores_the_answer_is_reported(tmp_path):
    ignored = ASYNC_JOBS.replace("""            if not got:
                return
""", "")
    assert _check(tmp_path, jobs=ignored, locks=ASYNC_LOCKS) == _reported(ignored)


REDIS_LOCKS = """\
    from contextlib import contextmanager

    import redis

    r = redis.Redis()


    @contextmanager
    def exclusive(key: int):
        lock = r.lock(f"ledger:{key}", timeout=600)
        got = lock.acquire(blocking=False)
        try:
            yield got
        finally:
            if got:
                lock.release()
"""


def test_a_redis_locks_non_blocking_acquire_yielded(tmp_path):
    assert _check(tmp_path, locks=REDIS_LOCKS) == []


def test_a_redis_set_nx_yielded_as_it_comes(tmp_path):
    locks = REDIS_LOCKS.replace("""    lock = r.lock(f"ledger:{key}", timeout=600)
        got = lock.acquire(blocking=False)
        try:
            yield got
        finally:
            if got:
                lock.release()""", """    yield r.set(f"ledger:{key}", "me", nx=True, ex=600)""")
    assert "nx=True" in locks
    assert _check(tmp_path, locks=locks) == []


def test_a_context_manager_handing_on_another_claiming_one(tmp_path):
    outer = textwrap.dedent(LOCKS) + textwrap.dedent("""\


        @contextmanager
        def ledger_turn(name: str):
            with exclusive(len(name)) as mine:
                yield mine
    """)
    jobs = JOBS.replace("import exclusive", "import ledger_turn").replace("exclusive(7001)", 'ledger_turn("interest")')
    assert _check(tmp_path, jobs=jobs, locks=outer) == []


def test_a_plain_helper_returning_a_local_computed_from_the_answer(tmp_path):
    """The same reading for returns: ``got = bool(row and row[0]); return got``."""
    locks = textwrap.dedent(LOCKS).replace("@contextmanager\n", "").replace("yield got", "return got")
    jobs = JOBS.replace("""        with exclusive(7001) as got:
            if not got:
                return
            with pool.connection() as conn:
                conn.execute(""", """        if not exclusive(7001):
            return
        if True:
            with pool.connection() as conn:
                conn.execute(""")
    assert "if not exclusive(7001):" in jobs
    assert _check(tmp_path, jobs=jobs, locks=locks) == []


# -- still reported --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("yielded", [
    "conn",  # the connection, not the answer
    "True",  # nothing decides it
])
def test_a_context_manager_yielding_something_else_claims_nothing(tmp_path, yielded):
    locks = LOCKS.replace("yield got", f"yield {yielded}")
    assert _check(tmp_path, locks=locks) == _reported()


def test_an_unconditional_true_after_an_untested_try_lock_claims_nothing(tmp_path):
    locks = LOCKS.replace("""            row = conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (key,)).fetchone()
                got = bool(row and row[0])
                yield got""", """            conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (key,))
                yield True""")
    assert "yield True" in locks
    assert _check(tmp_path, locks=locks) == _reported()


def test_a_blocking_lock_yielded_is_no_claim(tmp_path):
    locks = LOCKS.replace("pg_try_advisory_xact_lock", "pg_advisory_xact_lock")
    assert _check(tmp_path, locks=locks) == _reported()


def test_a_job_that_never_tests_what_the_with_bound_is_reported(tmp_path):
    ignored = JOBS.replace("""            if not got:
                return
""", "")
    assert _check(tmp_path, jobs=ignored) == _reported(ignored)


def test_rows_read_on_the_connection_that_took_an_untested_try_lock_are_no_answer(tmp_path):
    """``if not rows: return`` tests the rows, not the lock: the job still runs in every replica."""
    untested = JOBS.replace("""        with exclusive(7001) as got:
            if not got:
                return
            with pool.connection() as conn:
""", """        with pool.connection() as conn:
            conn.execute("SELECT pg_try_advisory_xact_lock(7001)")
            rows = conn.execute("SELECT id FROM accounts WHERE rate > 0").fetchall()
            if not rows:
                return
            if True:
""")
    assert "rows = conn" in untested
    assert _check(tmp_path, jobs=untested) == _reported(untested)


def test_a_generator_without_the_contextmanager_decorator_is_no_context(tmp_path):
    plain = LOCKS.replace("    @contextmanager\n", "")
    assert _check(tmp_path, locks=plain) == _reported()


# -- the program's own loop, its helper in another module (the shape of a worker process) -------------------------
ROLLUP = """\
    from ledger.db import pool
    from ledger.locks import exclusive


    def settle_last_hour() -> bool:
        with exclusive(4242) as acquired:
            if not acquired:
                return False
            with pool.connection() as conn:
                conn.execute("INSERT INTO settlements (hour, total) SELECT date_trunc('hour', now()), sum(amount) FROM postings")
            return True
"""

WORKER = """\
    import time

    from ledger import rollup


    def main() -> None:
        while True:
            rollup.settle_last_hour()
            time.sleep(60)


    if __name__ == "__main__":
        main()
"""

DOCKERFILE = """\
    FROM python:3.12-slim
    COPY . /srv
    WORKDIR /srv
    CMD ["python", "-m", "ledger.worker"]
"""


@pytest.mark.parametrize("locks, reported", [(LOCKS, []), (LOCKS.replace("yield got", "yield conn"), [(8, "OG201")])])
def test_a_worker_loops_job_claiming_through_the_context_manager(tmp_path, locks, reported):
    write(tmp_path, {"ledger/__init__.py": "", "ledger/db.py": DB, "ledger/locks.py": locks,
                     "ledger/rollup.py": ROLLUP, "ledger/worker.py": WORKER, "Dockerfile": DOCKERFILE})
    assert findings(tmp_path, "ledger/worker.py") == reported


# -- OG203: the skip taken when the claim the ``with`` bound was not won ---------------------------------------
LOUD_SKIP = JOBS.replace(
    "import BackgroundScheduler\n",
    "import BackgroundScheduler\n    import logging\n\n    log = logging.getLogger(__name__)\n",
).replace(
    "            if not got:\n                return\n",
    "            if not got:\n                log.warning(\"interest posting skipped: another node has it\")\n"
    "                return\n",
)


def _skip_log_line(jobs: str) -> int:
    ast.parse(textwrap.dedent(jobs))  # a broken variant would be silently clean
    return next(i for i, line in enumerate(textwrap.dedent(jobs).splitlines(), 1) if "log.warning" in line)


@pytest.mark.parametrize("jobs", [LOUD_SKIP, LOUD_SKIP.replace("got", "acquired_it")])
def test_a_loud_log_where_the_with_bound_claim_failed_is_reported(tmp_path, jobs):
    files = {"ledger/__init__.py": "", "ledger/db.py": DB, "ledger/locks.py": LOCKS, "ledger/jobs.py": jobs}
    write(tmp_path, files)
    assert findings(tmp_path, "ledger/jobs.py", codes=("OG203",)) == [(_skip_log_line(jobs), "OG203")]


@pytest.mark.parametrize("jobs", [
    LOUD_SKIP.replace("log.warning", "log.debug"),
    # the manager yields a connection: a falsy one is a failure worth a warning, not a lost claim
    LOUD_SKIP,
])
def test_a_quiet_skip_or_a_with_that_binds_no_claim_is_not_reported(tmp_path, jobs):
    ast.parse(textwrap.dedent(jobs))
    locks = LOCKS if "log.debug" in jobs else LOCKS.replace("yield got", "yield conn")
    files = {"ledger/__init__.py": "", "ledger/db.py": DB, "ledger/locks.py": locks, "ledger/jobs.py": jobs}
    write(tmp_path, files)
    assert findings(tmp_path, "ledger/jobs.py", codes=("OG203",)) == []


# -- a class whose __enter__ answers the claim ------------------------------------------------------------------
CLASS_LOCKS = """\
    import redis

    client = redis.Redis(host="redis")


    class Exclusive:
        def __init__(self, key: int) -> None:
            self.name = f"ledger:{key}"

        def take(self) -> bool:
            return bool(client.set(self.name, "1", nx=True, ex=600))

        def __enter__(self) -> bool:
            self.won = self.take()
            return self.won

        def __exit__(self, *exc) -> None:
            if self.won:
                client.delete(self.name)
"""


@pytest.mark.parametrize("enter, reported", [
    ("self.won = self.take()\n            return self.won", False),
    ("self.won = True\n            return self.won", True),  # nothing claimed: the answer is a constant
])
def test_a_class_whose_enter_returns_its_claims_answer_leads_the_job(tmp_path, enter, reported):
    locks = CLASS_LOCKS.replace("self.won = self.take()\n            return self.won", enter)
    jobs = JOBS.replace("from ledger.locks import exclusive", "from ledger.locks import Exclusive").replace(
        "with exclusive(7001) as got:", "with Exclusive(7001) as got:")
    assert _check(tmp_path, jobs=jobs, locks=locks) == (_reported(jobs) if reported else [])
