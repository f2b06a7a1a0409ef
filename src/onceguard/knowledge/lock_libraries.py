"""Lock libraries and their real semantics: what blocks by default, what turns waiting off, what a context
manager hands back.  Verified against each library's documentation (reference/frameworks.md §5, and the
projects' own READMEs for django-pglocks, sqlalchemy-dlock and asyncpg-lock).

A library lock that waits is, in job code, the same hazard as ``pg_advisory_lock`` (OG103): the second
replica queues behind the first and then runs the job again.  A non-blocking one whose answer is dropped
guards nothing (OG106).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from .redis_clients import Arg


@dataclass(frozen=True)
class LockApi:
    library: str
    key: Arg
    #: Arguments that, false (or ``0`` for a wait bound), make taking the lock not wait.
    no_wait: Tuple[Arg, ...] = ()
    #: Arguments that bound the wait; only ``0`` means "do not wait" (a bounded wait still queues).
    wait_bound: Tuple[Arg, ...] = ()
    #: ``with lock(...) as acquired`` gives a flag to test (django-pglocks), rather than raising or waiting.
    yields_acquired: bool = False
    #: Entering the ``with`` takes the lock (waiting by default) rather than giving an unlocked object.
    with_takes_lock: bool = True
    #: The ``acquire`` method's own waiting arguments, and whether it waits by default.
    acquire_no_wait: Tuple[Arg, ...] = ()
    acquire_wait_bound: Tuple[Arg, ...] = ()
    #: A method that takes the lock, runs a callable and releases it (asyncpg-lock ``guard.run(key, fn)``).
    runs_callable: Optional[str] = None
    #: Arguments that, true, make taking the lock fail at once instead of waiting (portalocker's
    #: ``fail_when_locked=True``).
    fails_when: Tuple[Arg, ...] = ()
    #: Taking the lock without waiting raises when another holds it (filelock's ``Timeout``, portalocker's
    #: ``AlreadyLocked``): the work after it runs only for the holder, with no answer to read.
    raises_when_held: bool = False


#: Lock constructors / context managers by qualified name.
CONSTRUCTORS: Dict[str, LockApi] = {
    # django-pglocks: advisory_lock(lock_id, shared=False, wait=True, using=None); a session lock unless a
    # transaction is open; ``with advisory_lock(k, wait=False) as acquired`` runs the body either way.
    "django_pglocks.advisory_lock": LockApi("django-pglocks", Arg("lock_id", 0), no_wait=(Arg("wait", 2),),
                                            yields_acquired=True),
    # sqlalchemy-dlock: create_sadlock(connection_or_session, key, ...); ``with`` acquires and waits;
    # ``acquire(block=True, timeout=None)``.
    "sqlalchemy_dlock.create_sadlock": LockApi("sqlalchemy-dlock", Arg("key", 1),
                                               acquire_no_wait=(Arg("block", 0),),
                                               acquire_wait_bound=(Arg("timeout", 1),)),
    "sqlalchemy_dlock.create_async_sadlock": LockApi("sqlalchemy-dlock", Arg("key", 1),
                                                     acquire_no_wait=(Arg("block", 0),),
                                                     acquire_wait_bound=(Arg("timeout", 1),)),
    # redis-py: Lock(redis, name, timeout=None, sleep=0.1, blocking=True, blocking_timeout=None, ...);
    # acquire(sleep=None, blocking=None, blocking_timeout=None, token=None).
    "redis.lock.Lock": LockApi("redis-py", Arg("name", 1), no_wait=(Arg("blocking", 4),),
                               wait_bound=(Arg("blocking_timeout", 5),),
                               acquire_no_wait=(Arg("blocking", 1),), acquire_wait_bound=(Arg("blocking_timeout", 2),)),
    "redis.asyncio.lock.Lock": LockApi("redis-py", Arg("name", 1), no_wait=(Arg("blocking", 4),),
                                       wait_bound=(Arg("blocking_timeout", 5),),
                                       acquire_no_wait=(Arg("blocking", 1),),
                                       acquire_wait_bound=(Arg("blocking_timeout", 2),)),
    # python-redis-lock: Lock(redis_client, name, expire=None, id=None, auto_renewal=False, strict=True,
    # signal_expire=1000, blocking=True); acquire(blocking=True, timeout=None).
    "redis_lock.Lock": LockApi("python-redis-lock", Arg("name", 1), no_wait=(Arg("blocking", 7),),
                               acquire_no_wait=(Arg("blocking", 0),), acquire_wait_bound=(Arg("timeout", 1),)),
    # pottery: Redlock(*, key, masters, ..., context_manager_blocking=True, context_manager_timeout=-1);
    # acquire(*, blocking=True, timeout=-1).
    "pottery.Redlock": LockApi("pottery", Arg("key"), no_wait=(Arg("context_manager_blocking"),),
                               wait_bound=(Arg("context_manager_timeout"),),
                               acquire_no_wait=(Arg("blocking"),), acquire_wait_bound=(Arg("timeout"),)),
    # asyncpg-lock: AdvisoryLockGuard(connect=...).run(key, func): runs func once it holds the lock, so every
    # caller waits its turn and runs.
    "asyncpg_lock.AdvisoryLockGuard": LockApi("asyncpg-lock", Arg("key", 0), with_takes_lock=False,
                                              runs_callable="run"),
    # File locks, one per path (on a volume every replica mounts, a lock across them). portalocker: Lock(filename,
    # mode="a", timeout=None (its 5 s default), check_interval=0.25, fail_when_locked=False, ...); acquire(timeout=
    # None, check_interval=None, fail_when_locked=None).
    "portalocker.Lock": LockApi("portalocker", Arg("filename", 0), wait_bound=(Arg("timeout", 2),),
                                fails_when=(Arg("fail_when_locked", 4),),
                                acquire_wait_bound=(Arg("timeout", 0),), raises_when_held=True),
    "portalocker.RLock": LockApi("portalocker", Arg("filename", 0), wait_bound=(Arg("timeout", 2),),
                                 fails_when=(Arg("fail_when_locked", 4),),
                                 acquire_wait_bound=(Arg("timeout", 0),), raises_when_held=True),
    # filelock: FileLock(lock_file, timeout=-1 (wait for ever), ...); acquire(timeout=None, poll_interval=0.05, *,
    # poll_intervall=None, blocking=True).
    "filelock.FileLock": LockApi("filelock", Arg("lock_file", 0), wait_bound=(Arg("timeout", 1),),
                                 acquire_no_wait=(Arg("blocking"),), acquire_wait_bound=(Arg("timeout", 0),),
                                 raises_when_held=True),
    "filelock.SoftFileLock": LockApi("filelock", Arg("lock_file", 0), wait_bound=(Arg("timeout", 1),),
                                     acquire_no_wait=(Arg("blocking"),), acquire_wait_bound=(Arg("timeout", 0),),
                                     raises_when_held=True),
}

#: Libraries of file locks: most guard a short section of file work (a unique name, a move) that every caller
#: must pass through in turn; only one holding the whole work of its function is a job's lock.
FILE_LOCK_LIBRARIES = frozenset({"portalocker", "filelock"})

#: ``client.lock(name, timeout=None, sleep=0.1, blocking=True, blocking_timeout=None, ...)`` on a redis-py
#: client (and django-redis ``cache.lock``): the same Lock as ``redis.lock.Lock``, the client not passed.
CLIENT_LOCK_METHOD = "lock"
CLIENT_LOCK = LockApi("redis-py", Arg("name", 0), no_wait=(Arg("blocking", 3),),
                      wait_bound=(Arg("blocking_timeout", 4),),
                      acquire_no_wait=(Arg("blocking", 1),), acquire_wait_bound=(Arg("blocking_timeout", 2),))

#: walrus: ``db.lock(name, ttl=None, lock_id=None)`` makes walrus's own Lock, whose ``acquire(block=True)``
#: waits (a blocking pop) by default and whose ``with`` waits; ``acquire(block=False)`` answers at once.
WALRUS_CLIENT_LOCK = LockApi("walrus", Arg("name", 0), acquire_no_wait=(Arg("block", 0),))
#: Client libraries whose ``.lock(...)`` is not redis-py's.
CLIENT_LOCKS_BY_LIBRARY: Dict[str, LockApi] = {"walrus": WALRUS_CLIENT_LOCK}

ACQUIRE = "acquire"

#: Calls that pause a loop: a loop that retries a lock around one of these is waiting for it.
SLEEP_CALLS = frozenset({"time.sleep", "asyncio.sleep", "gevent.sleep", "trio.sleep", "anyio.sleep"})

#: Prefilter: a file must mention one of these for the lock-library checks to have anything to say.
TRIGGERS = (b"advisory_lock", b"create_sadlock", b"create_async_sadlock", b"redis_lock", b"Redlock",
            b"AdvisoryLockGuard", (b"redis", b"lock("), (b"redis", b"Lock("), (b"cache", b".lock("),
            (b"portalocker", b"Lock("), (b"filelock", b"FileLock("),
            (b"while", b"sleep(", b"redis"),
            # A lock a helper of the project makes (``guard = lock_for("export"); guard.acquire()``), whose
            # client lives in another module: the file shows only the acquire.
            b".acquire(")
