"""OG103: a file lock on a fixed path that waits, in job code.

A lock file on a volume every replica mounts excludes them all, and waiting for it queues each job behind the
one before, as a blocking ``pg_advisory_lock`` does: portalocker's ``Lock`` waits its ``timeout`` (5 s unless
given), filelock's ``FileLock`` waits for ever by default.  Told not to wait (``fail_when_locked=True``,
``timeout=0``), it is a try-lock.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

JOB = """\
    {imports}

    from catalog.feed import apply_change

    LOCK_PATH = "/shared/locks/feed.lock"


    def refresh_product(product_id: int) -> None:
        with {lock}:
            apply_change(product_id)
"""


@pytest.mark.parametrize("imports, lock, expected", [
    ("import portalocker", "portalocker.Lock(LOCK_PATH, timeout=600)", [(9, "OG103")]),
    ("import portalocker", "portalocker.Lock(LOCK_PATH)", [(9, "OG103")]),
    ("from filelock import FileLock", "FileLock(LOCK_PATH)", [(9, "OG103")]),
    ("import portalocker", "portalocker.Lock(LOCK_PATH, fail_when_locked=True)", []),
    ("from filelock import FileLock", "FileLock(LOCK_PATH, timeout=0)", []),
])
def test_a_file_lock_that_waits_in_a_job(tmp_path, imports, lock, expected):
    write(tmp_path, {"catalog/__init__.py": "",
                     "catalog/jobs.py": JOB.replace("{imports}", imports).replace("{lock}", lock)})
    assert findings(tmp_path, "catalog/jobs.py", codes=("OG103",)) == expected
