"""OG105: a lock library's lock taken with ``acquire()`` and released after work that can raise past it.

``lock = r.lock("invoicing", timeout=6 * 3600)`` … ``if not lock.acquire(blocking=False): return`` … the work …
``lock.release()``: an exception in the work skips the release, and every replica skips the job until the lock
expires (for good, without a timeout).  A release in ``finally:`` or a ``with`` block is guaranteed.
"""
from __future__ import annotations

import textwrap

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

JOB = """\
    import redis

    r = redis.Redis(host="redis")


    def invoice_week(issue) -> int:
        lock = r.lock("laundry:invoicing", timeout=6 * 3600)
        if not lock.acquire(blocking=False):
            return 0
        issued = issue()
        lock.release()
        return issued
"""


@pytest.mark.parametrize("job", [
    JOB,
    JOB.replace('import redis\n\n    r = redis.Redis(host="redis")', 'from walrus import Database\n\n    r = Database()').replace(
        "timeout=6 * 3600", "ttl=6 * 3600 * 1000").replace("blocking=False", "block=False"),
    JOB.replace('import redis\n\n    r = redis.Redis(host="redis")', 'import redis\n    import redis_lock\n\n    conn = redis.Redis()').replace(
        'r.lock("laundry:invoicing", timeout=6 * 3600)', 'redis_lock.Lock(conn, "laundry:invoicing", expire=6 * 3600)'),
], ids=["redis-py", "walrus", "python-redis-lock"])
def test_a_release_an_exception_can_skip_is_reported(tmp_path, job):
    write(tmp_path, {"laundry/__init__.py": "", "laundry/jobs.py": job})
    release = next(i for i, line in enumerate(textwrap.dedent(job).splitlines(), 1) if "lock.release()" in line)
    assert findings(tmp_path, "laundry/jobs.py", codes=("OG105",)) == [(release, "OG105")]


def test_a_release_in_finally_is_guaranteed(tmp_path):
    guarded = JOB.replace("""        issued = issue()
        lock.release()
        return issued""", """        try:
            return issue()
        finally:
            lock.release()""")
    write(tmp_path, {"laundry/__init__.py": "", "laundry/jobs.py": guarded})
    assert findings(tmp_path, "laundry/jobs.py", codes=("OG105",)) == []


def test_an_in_process_lock_is_not_a_library_lock(tmp_path):
    local = JOB.replace('r.lock("laundry:invoicing", timeout=6 * 3600)', "threading.Lock()").replace(
        "lock.acquire(blocking=False)", "lock.acquire(False)").replace("import redis\n", "import redis\n    import threading\n")
    write(tmp_path, {"laundry/__init__.py": "", "laundry/jobs.py": local})
    assert findings(tmp_path, "laundry/jobs.py", codes=("OG105",)) == []
