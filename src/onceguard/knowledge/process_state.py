"""State a process keeps to itself: its locks, its in-memory caches, its containers (OG606-OG608).

Each replica (and each worker process of one replica) has its own copy of everything listed here.  The
rules ask ``analysis.process_state`` where such state is made and who writes and reads it; these tables say
what makes it, and which calls on it coordinate (a lock, a counter) rather than remember derivable data.
"""
from __future__ import annotations

from typing import Dict, FrozenSet, Tuple

# -- OG606: locks that exclude only the threads or coroutines of one process ---------------------------------
#: Constructors of a lock that lives in this process's memory.  Semaphores are left out on purpose: they cap
#: how much of a local resource (a GPU, a connection pool) this process uses, which is per-process by design.
PROCESS_LOCK_CONSTRUCTORS: FrozenSet[str] = frozenset({
    "threading.Lock", "threading.RLock", "threading.Condition",
    "asyncio.Lock", "asyncio.Condition", "asyncio.locks.Lock",
    "multiprocessing.Lock", "multiprocessing.RLock",
    "anyio.Lock", "trio.Lock", "gevent.lock.RLock",
})

#: Methods that write through a database session or connection (SQLAlchemy, Django, asyncpg, DB-API).
DATABASE_WRITE_METHODS: FrozenSet[str] = frozenset({
    "add", "add_all", "merge", "bulk_save_objects", "bulk_insert_mappings", "bulk_update_mappings",
    "save", "bulk_create", "bulk_update", "get_or_create", "update_or_create",
})
#: ``commit`` proves the receiver is a session: a set has ``add`` too, but nothing to commit.
SESSION_PROOF_METHODS: FrozenSet[str] = frozenset({"commit", "flush", "execute", "scalars", "scalar", "refresh"})
#: Methods that send SQL; their SQL text says whether they read or write.
SQL_METHODS: FrozenSet[str] = frozenset({"execute", "exec", "executemany", "exec_driver_sql", "fetch", "fetchrow",
                                         "fetchval", "scalar", "scalars"})
SQL_WRITE_WORDS: Tuple[str, ...] = ("INSERT", "UPDATE", "DELETE", "UPSERT", "MERGE", "REPLACE")
#: Work that the database serialises across every process: rows read with a lock, a transaction-level
#: advisory lock (upper case: the SQL is compared upper-cased).
SQL_SERIALISING_WORDS: Tuple[str, ...] = ("FOR UPDATE", "FOR NO KEY UPDATE", "PG_ADVISORY_XACT_LOCK",
                                          "PG_TRY_ADVISORY_XACT_LOCK")
ROW_LOCKING_METHODS: FrozenSet[str] = frozenset({"select_for_update", "with_for_update"})
#: Django's async manager methods and the class methods of ORMs whose model classes make rows (Tortoise
#: ``await Workspace.create(...)``): writes.
MODEL_CREATE_METHODS: FrozenSet[str] = frozenset({
    "create", "acreate", "bulk_create", "abulk_create", "get_or_create", "aget_or_create", "update_or_create",
    "aupdate_or_create", "aupdate", "adelete", "asave",
})
#: Methods that read rows: the "check" of a check-then-act on the database.
DATABASE_READ_METHODS: FrozenSet[str] = frozenset({
    "first", "one", "one_or_none", "scalar_one", "scalar_one_or_none", "exists", "count", "get", "filter_by",
    "fetchone", "fetchall", "fetchrow", "fetchval", "scalars", "scalar", "all", "find_first", "find_unique",
    "find_many", "aget", "aexists", "acount", "afirst", "alast",
})
#: Calls and methods that read a file's content (the "read" of a read-modify-write of a file).
FILE_READ_CALLS: FrozenSet[str] = frozenset({"json.load", "pickle.load", "yaml.safe_load", "yaml.load",
                                             "tomllib.load", "csv.reader", "csv.DictReader"})
FILE_READ_METHODS: FrozenSet[str] = frozenset({"read_text", "read_bytes", "read", "readlines"})
#: Calls and methods that (re)write a file.
FILE_WRITE_CALLS: FrozenSet[str] = frozenset({"json.dump", "pickle.dump", "yaml.dump", "yaml.safe_dump",
                                              "os.replace", "os.rename", "shutil.move", "shutil.copyfile"})
FILE_WRITE_METHODS: FrozenSet[str] = frozenset({"write_text", "write_bytes", "write", "writelines"})
#: ``open(path, mode)`` modes that write.
WRITE_MODES: Tuple[str, ...] = ("w", "a", "x", "+")
#: Outbound calls that change something elsewhere: mail, HTTP methods that are not reads.
OUTBOUND_MODULES: Tuple[str, ...] = ("smtplib.", "django.core.mail.")
OUTBOUND_HTTP_METHODS: FrozenSet[str] = frozenset({"post", "put", "patch", "delete"})
HTTP_CLIENT_MODULES: Tuple[str, ...] = ("requests.", "httpx.", "aiohttp.")

# -- OG607: caches that live in one process ----------------------------------------------------------------
#: Constructors of an in-memory cache (the process's own dict with expiry).
PROCESS_CACHE_CONSTRUCTORS: FrozenSet[str] = frozenset({
    "cachetools.TTLCache", "cachetools.LRUCache", "cachetools.LFUCache", "cachetools.TLRUCache",
    "cachetools.FIFOCache", "cachetools.RRCache", "cachetools.MRUCache", "cachetools.Cache",
    "cachelib.SimpleCache", "cachelib.simple.SimpleCache", "cachelib.NullCache",
    "flask_caching.backends.SimpleCache", "flask_caching.backends.simplecache.SimpleCache",
    "flask_caching.backends.NullCache", "flask_caching.backends.nullcache.NullCache",
    "django.core.cache.backends.locmem.LocMemCache",
    # aiocache's in-memory backend: each process keeps its own entries.
    "aiocache.SimpleMemoryCache", "aiocache.backends.memory.SimpleMemoryCache",
})
#: Cache factories that pick their backend by an argument (aiocache's ``Cache(Cache.MEMORY)``): factory -> the
#: backend attribute named -> the class it builds.
BACKEND_FACTORIES: Dict[str, Dict[str, str]] = {
    "aiocache.Cache": {"MEMORY": "aiocache.SimpleMemoryCache", "REDIS": "aiocache.RedisCache",
                       "MEMCACHED": "aiocache.MemcachedCache"},
}
#: Caches whose ``add`` raises when the key is present instead of answering (aiocache): the exception it raises.
ADD_RAISES: Dict[str, str] = {"aiocache.SimpleMemoryCache": "ValueError"}
#: Flask-Caching ``CACHE_TYPE`` values whose store is this process's memory (or nothing at all).
FLASK_PROCESS_CACHE_TYPES: FrozenSet[str] = frozenset({
    "simple", "SimpleCache", "null", "NullCache", "flask_caching.backends.SimpleCache",
    "flask_caching.backends.NullCache", "flask_caching.backends.simplecache.SimpleCache",
})
FLASK_CACHE_CONSTRUCTORS: FrozenSet[str] = frozenset({"flask_caching.Cache", "flask_cache.Cache"})
#: Flask-Caching ``CACHE_TYPE`` values that keep what is set in this process's memory (a NullCache keeps
#: nothing, on any replica: no store at all, not a per-replica one).
FLASK_MEMORY_CACHE_TYPES: FrozenSet[str] = frozenset({
    "simple", "SimpleCache", "flask_caching.backends.SimpleCache", "flask_caching.backends.simplecache.SimpleCache",
})
#: The configuration key naming a Flask-Caching backend.
FLASK_CACHE_TYPE_SETTING = "CACHE_TYPE"
#: Django cache backends that are private to a process (or to a host's disk, or store nothing).
DJANGO_PROCESS_BACKENDS: FrozenSet[str] = frozenset({
    "django.core.cache.backends.locmem.LocMemCache", "django.core.cache.backends.filebased.FileBasedCache",
    "django.core.cache.backends.dummy.DummyCache",
})
#: The Django cache objects a module uses.
DJANGO_CACHE_NAMES: FrozenSet[str] = frozenset({"django.core.cache.cache", "django.core.cache.caches"})
#: Cache calls that coordinate: an ``add`` whose result is tested is a lock or a once-only marker; an
#: ``incr``/``decr`` is a counter (a rate limit, a quota).  A ``get``/``set`` pair of derivable data is a
#: read-through cache and is not among them.
COORDINATION_METHODS: FrozenSet[str] = frozenset({"add", "incr", "decr", "inc", "dec", "incr_version"})
#: Names of Django settings modules' cache setting, looked for in the project's text.
DJANGO_CACHES_SETTING = "CACHES"
#: What makes a module a Django settings module (where the ``CACHES`` default is decided).
DJANGO_APPS_SETTING = "INSTALLED_APPS"

# -- OG608: module and instance state used as shared memory ------------------------------------------------
#: Calls whose result is the time now: stored in state, they are a "last done at" watermark.
CLOCK_CALLS: FrozenSet[str] = frozenset({
    "time.time", "time.monotonic", "time.time_ns", "datetime.datetime.now", "datetime.datetime.utcnow",
    "datetime.now", "datetime.utcnow", "django.utils.timezone.now", "loop.time",
})
#: Methods that put a member into a set-like state: a "seen" marker.
MARK_METHODS: FrozenSet[str] = frozenset({"add", "append"})
#: Methods that store a value under a key (a cache's ``set(key, value)``): the value is what is kept.
KEYED_SET_METHODS: FrozenSet[str] = frozenset({"set"})
#: Calls that only report (a warning shown to whoever runs the process).
WARNING_CALLS: FrozenSet[str] = frozenset({"warnings.warn", "warnings.warn_explicit"})
#: Methods that take a member out again: state that tracks work in flight, not what was done.
UNMARK_METHODS: FrozenSet[str] = frozenset({"discard", "remove", "pop"})
#: Values that are objects of this process (a queue, an event, a task, a socket): a container of them is a
#: registry of the process's own things (OG604/OG605 speak about broadcasting through them).
PROCESS_OBJECT_CONSTRUCTORS: FrozenSet[str] = frozenset({
    "asyncio.Event", "asyncio.Queue", "asyncio.Future", "asyncio.create_task", "asyncio.ensure_future",
    "threading.Event", "threading.Thread", "queue.Queue", "queue.SimpleQueue", "asyncio.Lock", "threading.Lock",
    "asyncio.get_event_loop.create_future", "weakref.ref", "asyncio.Semaphore", "threading.Semaphore",
    "asyncio.BoundedSemaphore", "threading.BoundedSemaphore", "asyncio.Condition", "threading.Condition",
})
#: Empty or literal containers and counters a module or an instance starts with.
CONTAINER_FACTORIES: FrozenSet[str] = frozenset({
    "dict", "list", "set", "collections.defaultdict", "collections.OrderedDict", "collections.Counter",
    "collections.deque", "defaultdict", "OrderedDict", "Counter", "deque",
})

#: In-memory caches that are mappings (``cache[key] = value``, ``key in cache``): a dict whose entries expire,
#: made empty whatever sizes its arguments give.
MAPPING_CACHE_FACTORIES: FrozenSet[str] = frozenset({
    "cachetools.TTLCache", "cachetools.LRUCache", "cachetools.LFUCache", "cachetools.TLRUCache",
    "cachetools.FIFOCache", "cachetools.RRCache", "cachetools.MRUCache", "cachetools.Cache",
})

#: Byte strings that let the prefilter keep a file that may hold such state.
#: (an import under another name, ``from threading import Lock as L``, is the only spelling without ``Lock(``)
#: (``Lock)`` and ``Lock]``: locks kept per key, ``defaultdict(asyncio.Lock)``, ``dict[str, asyncio.Lock]``)
LOCK_TRIGGERS = (b"Lock(", b"Condition(", b"Lock as ", b"Condition as ", b"Lock)", b"Lock]")
CACHE_TRIGGERS = (b"TTLCache", b"LRUCache", b"LFUCache", b"TLRUCache", b"FIFOCache", b"RRCache",
                  b"SimpleCache", b"NullCache", b"LocMemCache", b"CACHE_TYPE", b"SimpleMemoryCache", b".MEMORY",
                  (b"django.core.cache", b".add("), (b"django.core.cache", b".incr("),
                  (b"django.core.cache", b".decr("),
                  # a count read and written back changed (``used = cache.get(k, 0)`` ... ``cache.set(k, used + 1)``)
                  (b"django.core.cache", b".get(", b".set(", b" + "),
                  # a process memo cleared by request code, as if every replica's were
                  b".cache_clear")
#: OG608 needs both an empty container made somewhere in the file and a write that accumulates into state (a
#: count, a clock reading, a member added, an item set): every pair is a trigger.
STATE_CONTAINER_BYTES = (b"= {}", b"set()", b"defaultdict(", b"Counter(", b"{} for ", b"dict()", b"OrderedDict(",
                         b"defaultdict as ", b"Counter as ", b"OrderedDict as ", b"TTLCache(", b"LRUCache(",
                         b"LFUCache(", b"FIFOCache(", b"RRCache(", b"MRUCache(", b"cachetools")
STATE_WRITE_BYTES = (b"+= ", b"+ 1", b"time()", b"now(", b".add(", b"] = ")
STATE_TRIGGERS = tuple((container, write) for container in STATE_CONTAINER_BYTES for write in STATE_WRITE_BYTES) + (
    # a mapping the module ships with entries, one of which a function sets at run time (``_FLAGS[name] = on``)
    (b"= {\n", b"] = "),
)

#: Calls that mint a key no other process can compute (a one-time token, a job id): an entry stored under one
#: is meant to be found again by whoever is handed the key -- a later request, served by any replica.
MINTED_KEY_CALLS: FrozenSet[str] = frozenset({
    "uuid.uuid4", "uuid.uuid1", "secrets.token_hex", "secrets.token_urlsafe", "secrets.token_bytes", "os.urandom",
})
#: Calls that draw a secret a value is made of (a one-time code): stored as an entry's value, it is handed out
#: (mailed, texted) and checked when it comes back, by whichever replica serves that request.
MINTED_VALUE_CALLS: FrozenSet[str] = MINTED_KEY_CALLS | frozenset({
    "secrets.randbelow", "secrets.choice", "random.SystemRandom",
})
#: Queues a process makes for its own threads or tasks: what one puts, another of the same process takes.
IN_PROCESS_QUEUES: FrozenSet[str] = frozenset({
    "queue.Queue", "queue.SimpleQueue", "queue.LifoQueue", "queue.PriorityQueue", "asyncio.Queue",
    "asyncio.LifoQueue", "asyncio.PriorityQueue", "multiprocessing.Queue", "multiprocessing.JoinableQueue",
    "multiprocessing.SimpleQueue", "gevent.queue.Queue", "gevent.queue.JoinableQueue",
})
QUEUE_PUTS: FrozenSet[str] = frozenset({"put", "put_nowait"})
QUEUE_TAKES: FrozenSet[str] = frozenset({"get", "get_nowait"})

#: Events that live in one process (OG608 ``request_flags``): set or cleared there, seen only there.
EVENT_CLASSES: FrozenSet[str] = frozenset({
    "threading.Event", "asyncio.Event", "gevent.event.Event", "eventlet.event.Event", "trio.Event", "anyio.Event",
})
#: Calls that flip an event's state, and those that test it to decide (``wait()`` signals a thread: not a test).
EVENT_FLIPS: FrozenSet[str] = frozenset({"set", "clear"})
EVENT_TESTS: FrozenSet[str] = frozenset({"is_set", "isSet"})
#: What a request waits on until another call hands it an outcome (OG608 ``waiting_registries``).
WAITER_CLASSES: FrozenSet[str] = frozenset({
    "asyncio.Future", "asyncio.Event", "asyncio.Queue", "concurrent.futures.Future", "threading.Event", "queue.Queue",
})
