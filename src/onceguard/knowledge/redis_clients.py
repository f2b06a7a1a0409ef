"""Redis clients and the shapes of their lock and counter calls (reference/frameworks.md §5, §6.4).

A receiver counts as Redis only when it was built by one of these
constructors, is one of these objects, or is annotated with one of these
types; anything else (a parameter called ``redis`` with no annotation) is
unknown and the rules stay silent.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, FrozenSet, Optional, Tuple

#: A raw Redis client: commands go straight to the server, ``set`` takes ``nx``/``ex``/``px``.
REDIS = "redis"
#: A Django cache (``django.core.cache.cache``, ``caches[alias]``): ``add`` is SET NX, ``timeout`` the expiry.
DJANGO_CACHE = "django-cache"
#: Flask-Caching / cachelib: ``set(key, value, timeout=None)``; ``None`` is the default timeout, ``0`` never expires.
CACHE = "cache"
#: A class of the project that wraps one of the above (``ScopedCache(cache, scope)``, a ``RedisCache`` helper):
#: its commands are named by the verbs of its method names (``async_set_cache``, ``delete``).
WRAPPER = "wrapper"

#: qualified constructor -> (kind, library)
CONSTRUCTORS: Dict[str, Tuple[str, str]] = {
    "redis.Redis": (REDIS, "redis-py"),
    "redis.StrictRedis": (REDIS, "redis-py"),
    "redis.client.Redis": (REDIS, "redis-py"),
    "redis.client.StrictRedis": (REDIS, "redis-py"),
    "redis.Redis.from_url": (REDIS, "redis-py"),
    "redis.StrictRedis.from_url": (REDIS, "redis-py"),
    "redis.from_url": (REDIS, "redis-py"),
    "redis.cluster.RedisCluster": (REDIS, "redis-py"),
    "redis.RedisCluster": (REDIS, "redis-py"),
    "redis.cluster.RedisCluster.from_url": (REDIS, "redis-py"),
    "redis.asyncio.Redis": (REDIS, "redis.asyncio"),
    "redis.asyncio.StrictRedis": (REDIS, "redis.asyncio"),
    "redis.asyncio.client.Redis": (REDIS, "redis.asyncio"),
    "redis.asyncio.from_url": (REDIS, "redis.asyncio"),
    "redis.asyncio.Redis.from_url": (REDIS, "redis.asyncio"),
    "redis.asyncio.cluster.RedisCluster": (REDIS, "redis.asyncio"),
    "redis.asyncio.RedisCluster": (REDIS, "redis.asyncio"),
    "aioredis.Redis": (REDIS, "aioredis"),
    "aioredis.from_url": (REDIS, "aioredis"),
    "aioredis.Redis.from_url": (REDIS, "aioredis"),
    "django_redis.get_redis_connection": (REDIS, "django-redis"),
    # walrus: ``Database(...)`` / ``Database.from_url(url)`` is a redis-py client with helpers of its own
    # (``Walrus`` is the same class); its ``lock()`` is walrus's own Lock (lock_libraries.WALRUS_CLIENT_LOCK).
    "walrus.Database": (REDIS, "walrus"),
    "walrus.Database.from_url": (REDIS, "walrus"),
    # valkey-py: redis-py under another name, sync and asyncio
    "valkey.Valkey": (REDIS, "valkey"),
    "valkey.StrictValkey": (REDIS, "valkey"),
    "valkey.Valkey.from_url": (REDIS, "valkey"),
    "valkey.from_url": (REDIS, "valkey"),
    "valkey.asyncio.Valkey": (REDIS, "valkey.asyncio"),
    "valkey.asyncio.Valkey.from_url": (REDIS, "valkey.asyncio"),
    "valkey.asyncio.from_url": (REDIS, "valkey.asyncio"),
    # coredis: ``Redis(...)`` / ``Redis.from_url(url)``, the same commands (``set(..., condition=PureToken.NX)``)
    "coredis.Redis": (REDIS, "coredis"),
    "coredis.Redis.from_url": (REDIS, "coredis"),
    "coredis.RedisCluster": (REDIS, "coredis"),
    "coredis.RedisCluster.from_url": (REDIS, "coredis"),
    "walrus.Walrus": (REDIS, "walrus"),
    "walrus.Walrus.from_url": (REDIS, "walrus"),
    "flask_caching.Cache": (CACHE, "flask-caching"),
}

#: Module-level objects that are clients by themselves.
OBJECTS: Dict[str, Tuple[str, str]] = {
    "django.core.cache.cache": (DJANGO_CACHE, "django"),
}

#: ``caches["default"]``: subscripting these gives a Django cache.
CACHE_MAPPINGS: FrozenSet[str] = frozenset({"django.core.cache.caches"})

#: Type annotations -> (kind, library), for ``def __init__(self, client: Redis)``.
ANNOTATIONS: Dict[str, Tuple[str, str]] = {
    "redis.Redis": (REDIS, "redis-py"),
    "redis.StrictRedis": (REDIS, "redis-py"),
    "redis.client.Redis": (REDIS, "redis-py"),
    "redis.cluster.RedisCluster": (REDIS, "redis-py"),
    "redis.asyncio.Redis": (REDIS, "redis.asyncio"),
    "redis.asyncio.client.Redis": (REDIS, "redis.asyncio"),
    "aioredis.Redis": (REDIS, "aioredis"),
    "walrus.Database": (REDIS, "walrus"),
    "coredis.Redis": (REDIS, "coredis"),
    "coredis.RedisCluster": (REDIS, "coredis"),
    "valkey.Valkey": (REDIS, "valkey"),
    "valkey.asyncio.Valkey": (REDIS, "valkey.asyncio"),
    "django.core.cache.backends.base.BaseCache": (DJANGO_CACHE, "django"),
}

#: Classes a project subclasses to get a client of its own (``class AppCache(Cache)``).
CLIENT_BASES: Dict[str, Tuple[str, str]] = {
    **ANNOTATIONS,
    "flask_caching.Cache": (CACHE, "flask-caching"),
    "redis.client.StrictRedis": (REDIS, "redis-py"),
    "redis.asyncio.StrictRedis": (REDIS, "redis.asyncio"),
    "cachelib.BaseCache": (CACHE, "cachelib"),
    "cachelib.RedisCache": (CACHE, "cachelib"),
    "cachelib.redis.RedisCache": (CACHE, "cachelib"),
    "flask_caching.backends.RedisCache": (CACHE, "flask-caching"),
    "flask_caching.backends.rediscache.RedisCache": (CACHE, "flask-caching"),
}

#: A wrapper's method is a command by the words of its name: ``async_delete_cache`` deletes.
VERBS: Dict[str, FrozenSet[str]] = {
    "get": frozenset({"get"}),
    "exists": frozenset({"exists"}),
    "set": frozenset({"set"}),
    "add": frozenset({"add"}),
    "delete": frozenset({"delete", "del", "unlink"}),
}
#: The other words a wrapper's command may carry (``async_set_cache``, ``delete_key``); a method with any
#: other word (``add_error``, ``get_absolute_url``) is something else.
VERB_COMPANIONS: FrozenSet[str] = frozenset({"async", "cache", "cached", "key", "value", "item", "entry"})
#: The exact command names of the known clients, by what they do.
COMMANDS: Dict[str, str] = {
    "get": "get", "aget": "get", "exists": "exists", "has_key": "exists", "ahas_key": "exists",
    "set": "set", "aset": "set", "add": "add", "aadd": "add", "setnx": "setnx",
    "delete": "delete", "adelete": "delete", "unlink": "delete",
    # a hash kept as a lease (``HGETALL`` to see who holds it, ``HSET`` of owner and deadline): read and written as
    # a whole key, and HSET has no NX
    "hget": "hread", "hgetall": "hread", "hexists": "hread", "hmget": "hread",
    "hset": "hset", "hmset": "hset",
}
#: What a read of a hash is, for the reads a lease's acquire checks first.
HASH_READ = "hread"
#: What a write of hash fields is: a plain write, whatever is there.
HASH_WRITE = "hset"
#: Keywords that give a wrapper's write an expiry.
WRAPPER_EXPIRY: FrozenSet[str] = frozenset({"ex", "px", "exat", "pxat", "ttl", "timeout", "expire", "expires", "expiry"})

#: Django cache backends that keep their keys in one process or on one host: a key there is never another
#: replica's lock.
PER_PROCESS_CACHE_BACKENDS: FrozenSet[str] = frozenset({
    "django.core.cache.backends.locmem.LocMemCache",
    "django.core.cache.backends.filebased.FileBasedCache",
    "django.core.cache.backends.dummy.DummyCache",
})
#: Names a Django settings module defines (one of them is enough to recognise one).
DJANGO_SETTINGS_MARKERS: FrozenSet[str] = frozenset({"INSTALLED_APPS", "ROOT_URLCONF", "MIDDLEWARE"})

#: ``client.eval(script, numkeys, *keys_and_args)``: a Lua script sent with its keys after their count.  A script
#: registered on a client (``claims.REGISTER_SCRIPT_METHOD``) is called with its keys as ``keys=[...]`` or first.
EVAL_METHODS: FrozenSet[str] = frozenset({"eval", "eval_ro"})
SCRIPT_KEYS = "keys"
#: What a compare-and-delete script does to its key once it holds the caller's token: the owner gives it back.
SCRIPT_RELEASES: FrozenSet[str] = frozenset({"del", "unlink"})

#: Words in a function's name that say it releases what it deletes.
RELEASE_WORDS: FrozenSet[str] = frozenset({"release", "unlock"})


@dataclass(frozen=True)
class Arg:
    """Where an argument of a command sits: its keyword and, when it may be passed positionally, its index."""

    keyword: str
    position: Optional[int] = None


# -- acquiring -------------------------------------------------------------------------------------
#: ``set(name, value, ex=None, px=None, nx=False, xx=False, keepttl=False, get=False, exat=None, pxat=None)``
SET_KEY = Arg("name", 0)
SET_VALUE = Arg("value", 1)
SET_EXPIRY: Tuple[Arg, ...] = (Arg("ex", 2), Arg("px", 3), Arg("exat", 8), Arg("pxat", 9))
SET_NX = Arg("nx", 4)
#: coredis: ``set(key, value, ex=..., condition=PureToken.NX)``.
SET_CONDITION = "condition"

#: Django cache ``set(key, value, timeout=DEFAULT_TIMEOUT, version=None)`` and ``add(...)`` alike;
#: django-redis adds ``nx=False``.  An omitted timeout is the backend default (300 s): it expires.
CACHE_KEY = Arg("key", 0)
CACHE_VALUE = Arg("value", 1)
CACHE_TIMEOUT = Arg("timeout", 2)
CACHE_NX = Arg("nx", None)

#: Two-step acquire: the key is taken first, the expiry set by a second command.
SETNX = "setnx"
EXPIRY_COMMANDS: FrozenSet[str] = frozenset({"expire", "pexpire", "expireat", "pexpireat"})
#: ``pipe = r.pipeline()`` queues commands that ``pipe.execute()`` sends together (redis-py, sync and asyncio).
PIPELINE_FACTORY = "pipeline"
PIPELINE_SEND = "execute"
CACHE_ADD: FrozenSet[str] = frozenset({"add", "aadd"})
CACHE_SET: FrozenSet[str] = frozenset({"set", "aset"})

#: Lock objects whose TTL is an argument: method on a client (redis-py ``lock``, django-redis ``cache.lock``)
#: -> the argument that sets the expiry.  ``None`` or missing = the lock never expires.
LOCK_METHODS: Dict[str, Arg] = {"lock": Arg("timeout", 1)}
#: The same method on a client library whose locks take their expiry otherwise: walrus ``db.lock(name,
#: ttl=None)`` (milliseconds).
LOCK_METHODS_BY_LIBRARY: Dict[str, Dict[str, Arg]] = {"walrus": {"lock": Arg("ttl", 1)}}
#: The unit of those expiries where it is not seconds.
LOCK_EXPIRY_UNITS: Dict[str, str] = {"walrus": "milliseconds"}
#: Lock classes built from a client: qualified name -> the expiry argument.
LOCK_CLASSES: Dict[str, Arg] = {
    "redis_lock.Lock": Arg("expire", 2),
    "redis.lock.Lock": Arg("timeout", 2),
    "redis.asyncio.lock.Lock": Arg("timeout", 2),
}

#: Methods of those lock objects that only look at the key (EXISTS, GET): a lock built for them is never held.
LOCK_INSPECTORS: FrozenSet[str] = frozenset({"locked", "owned"})

# -- releasing -------------------------------------------------------------------------------------
#: Commands that drop a key whatever its value.
DELETE_COMMANDS: FrozenSet[str] = frozenset({"delete", "unlink", "adelete"})
#: ``execute_command("DEL", key)``: raw command names that delete.
RAW_DELETE: FrozenSet[str] = frozenset({"DEL", "UNLINK"})

#: Words in a key (split on ``:``, ``_``, ``-``, ``.``, ``/`` and camelCase) that make it a lock by its own
#: name.  Not "locked": ``locked:{user_id}`` is an account lockout flag, not a mutex.
LOCK_KEY_WORDS: FrozenSet[str] = frozenset({"lock", "locks", "mutex"})
#: Words that name a lock in a key only as its last word (``lease:{id}``, ``scheduler:leader``, ``leader-election``).
LOCK_KEY_NOUNS: FrozenSet[str] = frozenset({"lease", "leases", "leader", "election"})

#: Clock readings: a release under ``if time.monotonic() < deadline:`` runs only while the lease it took is
#: still its own (the deadline is the TTL from the acquire, less a margin).
CLOCK_CALLS: FrozenSet[str] = frozenset({
    "time.monotonic", "time.time", "time.perf_counter", "time.monotonic_ns", "time.time_ns",
    "datetime.datetime.now", "datetime.datetime.utcnow", "django.utils.timezone.now",
})

# -- read-modify-write ---------------------------------------------------------------------------------
#: reading command -> (key argument, field argument or None)
READS: Dict[str, Tuple[Arg, Optional[Arg]]] = {
    "get": (Arg("name", 0), None),
    "aget": (Arg("key", 0), None),  # Django async cache
    "hget": (Arg("name", 0), Arg("key", 1)),
    "zscore": (Arg("name", 0), Arg("value", 1)),  # a sorted set member's score
}
#: writing command -> (key argument, field argument or None, value argument)
WRITES: Dict[str, Tuple[Arg, Optional[Arg], Arg]] = {
    "set": (Arg("name", 0), None, Arg("value", 1)),
    "aset": (Arg("key", 0), None, Arg("value", 1)),
    "setex": (Arg("name", 0), None, Arg("value", 2)),
    "psetex": (Arg("name", 0), None, Arg("value", 2)),
    "hset": (Arg("name", 0), Arg("key", 1), Arg("value", 2)),
}
#: RedisJSON's commands, asked of ``client.json()``: ``JSON.SET key path obj`` writes the document it is handed.
JSON_MODULE = "json"
JSON_WRITES: Dict[str, Tuple[Arg, Optional[Arg], Arg]] = {"set": (Arg("name", 0), None, Arg("obj", 2))}
#: A whole hash read (``HGETALL``) and written back whole (``HSET key mapping=...``, ``HMSET key mapping``).
WHOLE_HASH_READS: Dict[str, Arg] = {"hgetall": Arg("name", 0)}
WHOLE_HASH_WRITES: Dict[str, Arg] = {"hset": Arg("mapping", 3), "hmset": Arg("mapping", 1)}
#: A write of members' scores handed as a mapping (``ZADD key {member: score}``): each entry writes one member's
#: score, the member standing where a hash write's field does -> (key argument, mapping argument).
MEMBER_MAPPING_WRITES: Dict[str, Tuple[Arg, Arg]] = {"zadd": (Arg("name", 0), Arg("mapping", 1))}
#: The keyword that makes each score of such a write an increment (``ZADD ... INCR``): nothing read is written back.
MEMBER_MAPPING_INCREMENT = "incr"
#: Django cache spells the key argument ``key``; the positions are the same.
CACHE_KEY_KEYWORD = "key"

#: The atomic counter command to suggest for each write.
ATOMIC_COUNTER: Dict[str, str] = {
    "set": "INCRBY (`r.incrby(key, amount)`)",
    "setex": "INCRBY followed by EXPIRE in one pipeline",
    "psetex": "INCRBY followed by PEXPIRE in one pipeline",
    "hset": "HINCRBY (`r.hincrby(name, field, amount)`)",
    "zadd": "ZINCRBY (`r.zincrby(name, amount, member)`)",
}


# -- read-then-clear (OG609) ------------------------------------------------------------------------------
#: Commands that read a whole collection key: list, set, hash, sorted set (and their scans).
READ_ALL_COMMANDS: FrozenSet[str] = frozenset({
    "lrange", "smembers", "sscan_iter", "hgetall", "hkeys", "hvals", "hscan_iter",
    "zrange", "zrevrange", "zrangebyscore", "zrevrangebyscore", "zscan_iter",
})
#: Commands that take one member out of a collection key (``srem(key, member)``): what was done for the member is
#: marked by its leaving the collection.
MEMBER_REMOVALS: FrozenSet[str] = frozenset({"srem", "hdel", "lrem", "zrem"})
#: Commands that clear a key whatever was added to it since it was read.
CLEAR_COMMANDS: FrozenSet[str] = frozenset({"delete", "unlink"})
#: ``ltrim(key, start, end)``: empties the list when ``start > end`` (``ltrim(key, 1, 0)``).
TRIM_COMMAND = "ltrim"
#: Commands that move a key to another name in one step: reading the new name is reading a private copy.
RENAME_COMMANDS: FrozenSet[str] = frozenset({"rename", "renamenx"})
#: What to use instead, by the kind of collection read.
ATOMIC_DRAIN: Dict[str, str] = {
    "list": "pop what you process: `items = r.lpop(key, count)` in a loop until it returns nothing",
    "set": "pop what you process: `members = r.spop(key, count)` in a loop until it returns nothing",
    "hash": "`RENAME` the key to a private name first (`r.rename(key, f\"{key}:{token}\")`), then read and delete that",
    "zset": "pop what you process: `r.zpopmin(key, count)` in a loop until it returns nothing",
}
READ_KIND: Dict[str, str] = {
    "lrange": "list", "smembers": "set", "sscan_iter": "set", "hgetall": "hash", "hkeys": "hash", "hvals": "hash",
    "hscan_iter": "hash", "zrange": "zset", "zrevrange": "zset", "zrangebyscore": "zset",
    "zrevrangebyscore": "zset", "zscan_iter": "zset",
}
READ_THEN_CLEAR_TRIGGERS = tuple(
    (read.encode() + b"(", clear) for read in sorted(READ_ALL_COMMANDS) for clear in (b"delete(", b"unlink(", b"ltrim(")
)

# -- prefilter ------------------------------------------------------------------------------------------
# A Redis client (or the Django cache) must be visible for these rules to speak, so its import is in the
# file; each tuple lists words that must all occur.
_CLIENT_WORDS = (b"redis", b"Redis", b"valkey", b"Valkey", b"core.cache", b"cache.", b"Cache(")
LEASE_TRIGGERS = (b"setnx", b"SETNX") + tuple(
    (client, call) for client in _CLIENT_WORDS for call in (b"set(", b"set_", b"add(", b"lock(", b"Lock(")
) + (
    # A client the project wraps under a name of its own: GET, SET and DELETE of one key in one function, or
    # a write with NX.
    (b".get(", b"set", b"delete"),
    (b"nx=", b"set"),
    (b"PureToken.NX", b"set"),
)
RELEASE_TRIGGERS = tuple(
    (client, call) for client in _CLIENT_WORDS for call in (b"delete", b"unlink", b"DEL")
) + ((b".get(", b"set", b"delete"), (b"nx=", b"delete"), (b"setnx", b"delete"), (b"PureToken.NX", b"delete"),
     # a lock renewed with a plain EXPIRE of its key
     (b"nx=", b"expire("), (b"setnx", b"expire("))

# -- clients a framework hands in ----------------------------------------------------------------------
#: arq hands each function its worker runs a context dict whose ``"redis"`` entry is the worker's ``ArqRedis``, a
#: redis.asyncio client: the functions its worker settings list (``functions = [...]``, ``cron_jobs = [cron(f)]``)
#: and its hooks.
ARQ_CONTEXT_CLIENT_KEY = "redis"
ARQ_WORKER_ATTRIBUTES: FrozenSet[str] = frozenset({
    "functions", "cron_jobs", "on_startup", "on_shutdown", "on_job_start", "on_job_end", "after_job_end",
})
ARQ_CLIENT = (REDIS, "redis.asyncio")
