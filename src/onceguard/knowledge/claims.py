"""What a claim looks like (reference/frameworks.md §3, §5, §6 and the scheduled-work guide).

A claim is the first thing a scheduled function must do so that only one
replica goes on: a claim function, a try-lock, ``SET NX`` with an expiry,
a Redis lock, or a row claim.
"""
from __future__ import annotations

from typing import Dict, FrozenSet, Tuple

#: Functions that are claims by name, whatever module they come from.
CLAIM_FUNCTION_NAMES: FrozenSet[str] = frozenset({
    "claim_period", "claim_once", "run_exclusive", "run_once", "locked_run",
})
CLAIM_FUNCTION_PREFIXES: Tuple[str, ...] = ("claim_", "try_claim", "acquire_lease")

#: PostgreSQL functions that return whether the lock was taken (checked via pglast).
TRY_LOCK_FUNCTIONS: FrozenSet[str] = frozenset({
    "pg_try_advisory_lock", "pg_try_advisory_xact_lock",
    "pg_try_advisory_lock_shared", "pg_try_advisory_xact_lock_shared",
})

# -- Redis ---------------------------------------------------------------------------------
#: ``r.set(key, token, nx=True, ex=...)``: the method, the flag and the expiry keywords.
REDIS_SET_METHOD = "set"
REDIS_SETNX_METHOD = "setnx"
#: coredis spells the flag ``set(key, value, condition=PureToken.NX, ex=...)``.
REDIS_CONDITION_KEYWORD = "condition"
REDIS_NX_TOKEN = "NX"
#: ``client.register_script(text)``: a Lua script; one that compares the key with the caller's token and then
#: extends or sets it answers true for the key's holder alone (a lease renewed only by its owner).
REGISTER_SCRIPT_METHOD = "register_script"
OWNER_SCRIPT_WRITES: FrozenSet[str] = frozenset({"pexpire", "expire", "set", "psetex", "setex"})
REDIS_NX_KEYWORD = "nx"
REDIS_EXPIRY_KEYWORDS: FrozenSet[str] = frozenset({"ex", "px", "exat", "pxat"})
#: A project's cache wrapper passing ``nx=True`` on: the expiry keywords such wrappers take.
WRAPPER_EXPIRY_KEYWORDS: FrozenSet[str] = REDIS_EXPIRY_KEYWORDS | frozenset({
    "ttl", "timeout", "expire", "expiry", "expires", "expiration",
})
#: ``client.lock(name, ...)`` (redis-py, django-redis ``cache.lock``) and lock classes.
REDIS_LOCK_METHOD = "lock"
LOCK_CLASSES: FrozenSet[str] = frozenset({
    "redis.lock.Lock", "redis.asyncio.lock.Lock", "redis_lock.Lock", "pottery.Redlock",
    "pottery.redlock.Redlock",
})
#: In-process locks: never a claim across replicas.
IN_PROCESS_LOCKS: FrozenSet[str] = frozenset({
    "threading.Lock", "threading.RLock", "asyncio.Lock", "multiprocessing.Lock", "anyio.Lock",
    "threading.Semaphore", "asyncio.Semaphore",
})
LOCK_ACQUIRE_METHOD = "acquire"
#: ``acquire(blocking=False)`` (redis-py, python-redis-lock, pottery), ``acquire(block=False)`` (walrus,
#: sqlalchemy-dlock): the keywords that, false, make an acquire try once and answer.
NO_WAIT_KEYWORDS: FrozenSet[str] = frozenset({"blocking", "block"})
#: huey: ``@huey.lock_task("name")`` / ``with huey.lock_task("name"):`` raises when another holder has it.
HUEY_LOCK_METHOD = "lock_task"
#: Django's cache ``add`` is ``SET NX`` with an expiry on shared backends (django-redis, memcached).
CACHE_ADD_METHOD = "add"
DJANGO_CACHES: FrozenSet[str] = frozenset({"django.core.cache.cache", "django.core.cache.caches"})

#: Decorators that make a generator a context manager: what it yields is what ``with ... as`` binds.
CONTEXT_MANAGER_DECORATORS: FrozenSet[str] = frozenset({
    "contextlib.contextmanager", "contextlib.asynccontextmanager",
})

#: Exceptions raised when a lock is not obtained: their ``except`` branch is the "skip" branch.
LOCK_FAILED_EXCEPTIONS: FrozenSet[str] = frozenset({
    "LockError", "LockNotOwnedError", "TaskLockedException", "NotAcquired", "ExtendFailed",
    "redis.exceptions.LockError", "redis.exceptions.LockNotOwnedError", "huey.exceptions.TaskLockedException",
})

# -- queues that keep a job id once ----------------------------------------------------------
#: ``enqueue_job(..., _job_id=...)`` (arq): a job whose id is already queued, running or has its result kept is
#: not enqueued again and the call returns None, so a per-period id lets one replica's enqueue in and answers
#: the others with None.  Method -> the keyword carrying the id.
DEDUPLICATING_ENQUEUES: Dict[str, str] = {"enqueue_job": "_job_id"}

# -- row claims ------------------------------------------------------------------------------
#: ``with_for_update(skip_locked=True)`` (SQLAlchemy), ``select_for_update(skip_locked=True)`` (Django).
ROW_LOCK_METHODS: FrozenSet[str] = frozenset({"with_for_update", "select_for_update"})
SKIP_LOCKED_KEYWORD = "skip_locked"
#: A conditional transition: Django ``.filter(...).update(...)``, SQLAlchemy ``update(M).where(...)``.
ORM_FILTER_METHODS: FrozenSet[str] = frozenset({"filter", "where", "filter_by", "exclude"})
ORM_UPDATE_METHOD = "update"
SQLALCHEMY_UPDATE: FrozenSet[str] = frozenset({"sqlalchemy.update", "sqlalchemy.sql.update", "sqlmodel.update",
                                             "sqlalchemy.sql.expression.update"})
#: SQLAlchemy's dialect inserts that can skip a row already present (``insert(Run).values(day=d)
#: .on_conflict_do_nothing()``): sent and read back, the caller whose row went in gets it.
SQLALCHEMY_CONFLICT_INSERTS: FrozenSet[str] = frozenset({
    "sqlalchemy.dialects.postgresql.insert", "sqlalchemy.dialects.sqlite.insert",
    "sqlalchemy.dialects.postgresql.dml.insert",
})
SQLALCHEMY_SKIP_CONFLICT = "on_conflict_do_nothing"
#: Methods that send a statement object and hand back its result.
STATEMENT_SENDS: FrozenSet[str] = frozenset({"execute", "exec", "scalar"})  # (``scalar``: RETURNING read back)

#: Methods that read back the result of the statement the cursor just executed.
FETCH_METHODS: FrozenSet[str] = frozenset({
    "fetchone", "fetchval", "scalar", "scalar_one", "scalar_one_or_none", "first", "one", "one_or_none",
    "fetchall", "fetchrow",
})

# -- logging (OG203 and the preamble allowed before a claim) ----------------------------------
LOG_METHODS: FrozenSet[str] = frozenset({
    "debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log", "msg",
})
LOUD_LOG_METHODS: FrozenSet[str] = frozenset({"warning", "warn", "error", "exception", "critical", "fatal"})
#: Loud levels whose call can be rewritten to ``.debug`` without changing anything but the level.
FIXABLE_LOG_METHODS: FrozenSet[str] = frozenset({"warning", "warn", "error", "critical", "fatal"})
LOUD_LEVEL_NAMES: FrozenSet[str] = frozenset({"WARNING", "WARN", "ERROR", "CRITICAL", "FATAL"})
PRINT_FUNCTIONS: FrozenSet[str] = frozenset({"print"})
#: Calls that return a logger (``logging.getLogger``, ``LoggerAdapter``, structlog's ``get_logger``, Celery's
#: ``get_task_logger``, ``logger.getChild``): a name bound to one is a logger whatever it is called.
LOGGER_FACTORY_NAMES: FrozenSet[str] = frozenset({
    "getLogger", "LoggerAdapter", "get_logger", "get_task_logger", "getChild",
})

# -- prefilter -------------------------------------------------------------------------------
#: Words a claim's code contains; each tuple below must occur whole (cheapest rejection first).
CLAIM_WORDS: Tuple[Tuple[bytes, ...], ...] = (
    (b"claim",), (b"run_once",), (b"run_exclusive",), (b"locked_run",), (b"acquire",), (b"advisory",),
    (b"nx=",), (b"lock(",), (b"LockError",), (b"LockNotOwned",), (b"TaskLocked",), (b"NotAcquired",),
    (b"ExtendFailed",), (b"skip_locked",), (b"SKIP LOCKED",), (b"skip locked",), (b"rowcount",),
    (b"core.cache", b".add("), (b"_job_id=",), (b".filter(", b".update("), (b".where(", b".update("),
)
LOUD_LOG_CALL_WORDS: Tuple[bytes, ...] = (
    b".warning(", b".warn(", b".error(", b".exception(", b".critical(", b".fatal(", b".log(",
)
#: OG203 speaks only where a claim's failure branch logs loudly: both must be in the file.
LOUD_SKIP_TRIGGERS = tuple(claim + (log,) for claim in CLAIM_WORDS for log in LOUD_LOG_CALL_WORDS)

# -- onceguard's own guards ------------------------------------------------------------------
#: ``onceguard.guards``: claims by qualified name, with no configuration (sync and asyncio twins).
GUARD_FUNCTIONS: FrozenSet[str] = frozenset(
    f"onceguard.guards.{prefix}{name}"
    for name in ("claim_period", "claim_once", "run_once", "run_exclusive", "acquire")
    for prefix in ("", "a")
)
#: Every guard that claims through the configured backend: the claims above, the decorator and the
#: context managers (OG205 asks whether the project ever configures that backend).
GUARD_ENTRY_POINTS: FrozenSet[str] = GUARD_FUNCTIONS | frozenset({
    "onceguard.guards.claimed_period", "onceguard.guards.exclusive", "onceguard.guards.aexclusive",
})
#: The call that chooses the guards' backend.
GUARDS_CONFIGURE = "onceguard.guards.configure"
#: A module that calls the guards names the package somewhere.
GUARDS_TRIGGERS = (b"onceguard",)
