"""A project's context manager that checks a connection out of a pool, yields it and gives it back
(``pool.getconn()`` … ``yield conn`` … ``pool.putconn(conn)``) is a checkout for the ``with`` that enters it:
a session lock taken in one such block and released in another runs on two connections (OG101); taken and
released in one block, on one."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

POOL = """
    from contextlib import contextmanager

    from psycopg2.pool import ThreadedConnectionPool

    pool = ThreadedConnectionPool(1, 5, "postgresql://app@db/app")


    @contextmanager
    def borrowed():
        conn = pool.getconn()
        try:
            yield conn
        finally:
            pool.putconn(conn)
    """

TWO_BLOCKS = """
    from {source} import borrowed


    def nightly(work):
        with borrowed() as conn:
            with conn.cursor() as cur:
                cur.execute("SELECT pg_try_advisory_lock(42)")
                (got,) = cur.fetchone()
        if not got:
            return
        try:
            work()
        finally:
            with borrowed() as conn:
                with conn.cursor() as cur:
                    cur.execute("SELECT pg_advisory_unlock(42)")
    """

ONE_BLOCK = """
    from {source} import borrowed


    def nightly(work):
        with borrowed() as conn:
            with conn.cursor() as cur:
                cur.execute("SELECT pg_try_advisory_lock(42)")
                (got,) = cur.fetchone()
                if not got:
                    return
                try:
                    work()
                finally:
                    cur.execute("SELECT pg_advisory_unlock(42)")
    """


@pytest.mark.parametrize("jobs, expected", [(TWO_BLOCKS, [(17, "OG101")]), (ONE_BLOCK, [])])
def test_a_pool_checkout_behind_a_project_context_manager(tmp_path, jobs, expected):
    write(tmp_path, {"night/__init__.py": "", "night/pool.py": POOL,
                     "night/jobs.py": jobs.format(source="night.pool")})
    assert findings(tmp_path, "night/jobs.py", codes=("OG101",)) == expected
