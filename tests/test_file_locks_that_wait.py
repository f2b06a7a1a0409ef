"""OG103: a file lock on a fixed path that waits, holding a scheduled job's work.

A lock file on a volume every replica mounts excludes them all, and a job waiting for it queues behind the run
before and then runs again, as with a blocking ``pg_advisory_lock``: portalocker's ``Lock`` waits its ``timeout``
(5 s unless given), filelock's ``FileLock`` for ever by default.  Told not to wait (``fail_when_locked=True``,
``timeout=0``) it is a try-lock.  A file lock around a section of a larger function (a unique file name, a move)
is a mutex every caller passes in turn, and left alone.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

JOB = """\
    import logging

    {imports}
    from celery import shared_task

    from catalog.feed import rebuild_feed

    LOCK_PATH = "/shared/locks/feed.lock"
    log = logging.getLogger(__name__)


    @shared_task
    def rebuild() -> None:
        with {lock}:
            rebuild_feed()
        log.info("feed rebuilt")
"""


@pytest.mark.parametrize("imports, lock, expected", [
    ("import portalocker", "portalocker.Lock(LOCK_PATH, timeout=600)", [(14, "OG103")]),
    ("import portalocker", "portalocker.Lock(LOCK_PATH)", [(14, "OG103")]),
    ("from filelock import FileLock", "FileLock(LOCK_PATH)", [(14, "OG103")]),
    ("import portalocker", "portalocker.Lock(LOCK_PATH, fail_when_locked=True)", []),
    ("from filelock import FileLock", "FileLock(LOCK_PATH, timeout=0)", []),
])
def test_a_file_lock_that_waits_in_a_job(tmp_path, imports, lock, expected):
    write(tmp_path, {"catalog/__init__.py": "",
                     "catalog/jobs.py": JOB.replace("{imports}", imports).replace("{lock}", lock)})
    assert findings(tmp_path, "catalog/jobs.py", codes=("OG103",)) == expected


SECTION = """\
    import shutil

    from celery import shared_task
    from filelock import FileLock

    MEDIA_LOCK = "/shared/media.lock"


    @shared_task
    def archive(path: str, target: str) -> str:
        name = target
        with FileLock(MEDIA_LOCK):
            shutil.move(path, name)
        return notify(name)
"""


def test_a_file_lock_around_a_section_of_the_work_is_a_mutex(tmp_path):
    write(tmp_path, {"media/__init__.py": "", "media/tasks.py": SECTION})
    assert findings(tmp_path, "media/tasks.py", codes=("OG103",)) == []


TRY_ONCE = """\
    from filelock import FileLock, Timeout

    from catalog.feed import rebuild_feed


    def rebuild() -> None:
        lock = FileLock("/shared/locks/feed.lock")
        try:
            lock.acquire(timeout=0)
        except Timeout:
            return
        try:
            rebuild_feed()
        finally:
            lock.release()
"""


def test_a_file_lock_taken_without_waiting_raises_when_held(tmp_path):
    # (its acquire has no answer to read: it raises when another holds the lock, and the work is the holder's)
    write(tmp_path, {"catalog/__init__.py": "", "catalog/jobs.py": TRY_ONCE})
    assert findings(tmp_path, "catalog/jobs.py", codes=("OG103", "OG106")) == []
