"""State each replica keeps to itself: rate-limit counters and connection registries.

``rules.rate_limits`` (OG604) and ``rules.broadcast`` (OG605) read these rows.  Adding a library means
adding its constructor and the keyword or setting that points it at a shared store.
"""
from __future__ import annotations

from typing import Dict, FrozenSet, Tuple

# -- rate limiters --------------------------------------------------------------------------------------
#: Limiter constructors whose counters stay in this process unless a storage URI names a shared store.
#: Flask-Limiter and slowapi both take ``storage_uri=`` and default to ``memory://``.
LIMITER_CONSTRUCTORS: FrozenSet[str] = frozenset({
    "flask_limiter.Limiter", "flask_limiter.extension.Limiter", "slowapi.Limiter", "slowapi.extension.Limiter",
})
LIMITER_STORAGE_KEYWORDS: FrozenSet[str] = frozenset({"storage_uri", "storage_url"})
#: Methods of those limiters that set a route's limit (and may give it its own ``key_func``).
LIMIT_DECORATOR_METHODS: FrozenSet[str] = frozenset({"limit", "shared_limit"})
#: Configuration keys that give those limiters their storage without the keyword: a project that sets one
#: anywhere (its settings module, a config class, the environment read into it) has chosen a store.
LIMITER_STORAGE_SETTINGS: Tuple[str, ...] = ("RATELIMIT_STORAGE_URI", "RATELIMIT_STORAGE_URL")
#: Storage URIs that keep the counters in this process.
MEMORY_STORAGE_SCHEMES: Tuple[str, ...] = ("memory://",)
#: ``limits`` storages that keep the counters in this process.
MEMORY_STORAGE_CONSTRUCTORS: FrozenSet[str] = frozenset({
    "limits.storage.MemoryStorage", "limits.storage.memory.MemoryStorage", "limits.aio.storage.MemoryStorage",
    "limits.aio.storage.memory.MemoryStorage",
})
STORAGE_FROM_STRING: FrozenSet[str] = frozenset({"limits.storage.storage_from_string", "limits.storage_from_string"})

#: Django settings that rate-limit through the Django cache: DRF's throttle classes and django-ratelimit.
DJANGO_THROTTLE_SETTINGS: FrozenSet[str] = frozenset({"DEFAULT_THROTTLE_CLASSES", "DEFAULT_THROTTLE_RATES"})
#: Django cache backends private to one process (LocMem), one host (files) or none at all (dummy).
PER_PROCESS_CACHE_BACKENDS: FrozenSet[str] = frozenset({
    "django.core.cache.backends.locmem.LocMemCache", "django.core.cache.backends.filebased.FileBasedCache",
    "django.core.cache.backends.dummy.DummyCache",
})
#: A settings module says it is one: it sets one of these.
DJANGO_SETTINGS_MARKERS: FrozenSet[str] = frozenset({"INSTALLED_APPS", "MIDDLEWARE", "ROOT_URLCONF"})

#: Constructors of containers that hold per-key state in this process.
CONTAINER_CONSTRUCTORS: FrozenSet[str] = frozenset({
    "dict", "list", "set", "collections.defaultdict", "collections.deque", "collections.Counter",
    "collections.OrderedDict", "defaultdict", "deque", "Counter", "OrderedDict",
    "cachetools.TTLCache", "cachetools.LRUCache", "cachetools.Cache",
})
#: Calls that count in a shared store (Redis and Memcached counters, scripts): a limiter class that makes
#: them keeps its in-memory containers only as a fallback when the store is missing.
SHARED_COUNTER_METHODS: FrozenSet[str] = frozenset({
    "incr", "incrby", "incrbyfloat", "hincrby", "zadd", "zincrby", "eval", "evalsha", "fcall", "incr_multi",
})
#: Clocks: a limiter that counts per time window reads one.
CLOCK_CALLS: FrozenSet[str] = frozenset({
    "time.time", "time.monotonic", "time.perf_counter", "time.time_ns", "time.monotonic_ns",
    "datetime.datetime.now", "datetime.datetime.utcnow", "datetime.now", "datetime.utcnow",
    "django.utils.timezone.now", "timezone.now",
    # a window of one day: counts keyed by today's date (a daily quota)
    "datetime.date.today", "date.today", "django.utils.timezone.localdate", "timezone.localdate",
})
#: The HTTP status that says "too many requests", and the names frameworks give the refusal.
TOO_MANY_REQUESTS = 429
TOO_MANY_REQUESTS_NAMES: FrozenSet[str] = frozenset({
    "HTTP_429_TOO_MANY_REQUESTS", "TOO_MANY_REQUESTS", "TooManyRequests", "Throttled", "HTTPTooManyRequests",
    "TooManyRequestsException",
})

LIMITER_INSTEAD = ("Keep the counters in a store every replica shares: `storage_uri=\"redis://...\"` (Flask-Limiter, "
                   "slowapi, `limits.storage.RedisStorage`) or `memcached://...`")
DJANGO_INSTEAD = ("Point the cache the throttles use at a shared backend: `CACHES = {\"default\": {\"BACKEND\": "
                  "\"django.core.cache.backends.redis.RedisCache\", \"LOCATION\": \"redis://...\"}}` (or a "
                  "dedicated cache named by `cache = caches[...]` / `RATELIMIT_USE_CACHE`)")
HANDWRITTEN_INSTEAD = ("Count in a store every replica shares: Redis `INCR` + `EXPIRE` per key and window (or the "
                       "`limits` library with `RedisStorage`), or a database row per client")

# -- broadcast ------------------------------------------------------------------------------------------
#: Socket.IO servers: rooms, sids and "everyone" exist only in the process that holds the connections
#: unless a client manager (message queue) is given.
SOCKETIO_SERVERS: FrozenSet[str] = frozenset({
    "flask_socketio.SocketIO", "socketio.Server", "socketio.AsyncServer", "socketio.server.Server",
    "socketio.async_server.AsyncServer",
})
FLASK_SOCKETIO = "flask_socketio.SocketIO"
#: Keywords (of the constructor or ``init_app``) that make the server share rooms through a queue.
SOCKETIO_SHARED_KEYWORDS: FrozenSet[str] = frozenset({"message_queue", "client_manager"})
#: Settings that do the same for Flask-SocketIO.
SOCKETIO_SHARED_SETTINGS: Tuple[str, ...] = ("SOCKETIO_MESSAGE_QUEUE",)
#: Server methods that send to rooms, to a sid or to every client.
SOCKETIO_SEND_METHODS: FrozenSet[str] = frozenset({"emit", "send"})
#: Flask-SocketIO's context functions: they answer the sender unless told a room or ``broadcast=True``.
FLASK_SOCKETIO_CONTEXT_SENDS: FrozenSet[str] = frozenset({"flask_socketio.emit", "flask_socketio.send"})
#: Keywords that address a room or a sid.
SOCKETIO_TARGET_KEYWORDS: FrozenSet[str] = frozenset({"to", "room"})
#: The sender's own sid: addressing it answers the connection being served.
OWN_SID_NAMES: FrozenSet[str] = frozenset({"sid", "request.sid", "flask.request.sid"})

#: Django Channels: a layer that keeps groups in one process.
IN_MEMORY_CHANNEL_LAYERS: FrozenSet[str] = frozenset({
    "channels.layers.InMemoryChannelLayer",
})
#: Words of code that sends through a channel layer or joins its groups (``self.channel_layer.group_add``,
#: ``get_channel_layer()``, ``async_to_sync(layer.group_send)``): without them the layer carries nothing.
CHANNEL_LAYER_USES: Tuple[str, ...] = ("channel_layer", "group_send", "group_add")
#: Settings modules named for development or tests run one process.
DEVELOPMENT_SETTINGS_NAMES: FrozenSet[str] = frozenset({
    "dev", "development", "local", "test", "tests", "testing", "settings_dev", "settings_local", "settings_test",
    "dev_settings", "local_settings", "test_settings",
})

#: Methods of a WebSocket connection (Starlette/FastAPI, websockets, aiohttp, Django Channels consumers,
#: Tornado's ``WebSocketHandler``) that push to the peer.
SOCKET_SEND_METHODS: FrozenSet[str] = frozenset({
    "send_text", "send_json", "send_bytes", "send_str", "send", "send_message", "write_message",
})
#: Builtins that copy a container (taken before a broadcast so that a disconnect does not change it meanwhile).
CONTAINER_COPIES = frozenset({"list", "tuple", "set", "frozenset", "sorted"})
#: Classes whose instances are the connection they serve: in their methods, ``self`` is the socket.
SOCKET_HANDLER_CLASSES: FrozenSet[str] = frozenset({
    "tornado.websocket.WebSocketHandler",
})
#: Objects a framework binds to the connection the running handler serves (Quart's ``websocket``): a function
#: that uses one serves that connection.
SOCKET_GLOBALS: FrozenSet[str] = frozenset({"quart.websocket"})
#: Annotations that say a value is a WebSocket connection, and connections a handler makes for the request it
#: serves (aiohttp's ``web.StreamResponse``, which a server-sent event stream writes to for as long as it is open).
SOCKET_TYPES: FrozenSet[str] = frozenset({
    "aiohttp.web.StreamResponse", "aiohttp.web_response.StreamResponse",
    "fastapi.WebSocket", "starlette.websockets.WebSocket", "fastapi.websockets.WebSocket",
    "websockets.WebSocketServerProtocol", "websockets.server.WebSocketServerProtocol",
    "websockets.ServerConnection", "websockets.asyncio.server.ServerConnection",
    "aiohttp.web.WebSocketResponse", "WebSocket", "WebSocketServerProtocol", "WebSocketResponse",
    "tornado.websocket.WebSocketHandler", "WebSocketHandler",
    "sanic.Websocket", "sanic.server.websockets.impl.WebsocketImplProtocol",
    "litestar.WebSocket", "litestar.connection.WebSocket", "falcon.asgi.WebSocket",
})
#: A request's method that opens the streaming response of the request (Sanic's ``await request.respond(...)``),
#: by the request's declared type: the response it hands back is a connection of the request, as a WebSocket is.
STREAM_OPENING_METHODS: Dict[str, FrozenSet[str]] = {
    "sanic.Request": frozenset({"respond"}), "sanic.request.Request": frozenset({"respond"}),
}
#: Methods that only a WebSocket connection has: a parameter accepted with one is a connection.
SOCKET_ONLY_METHODS: FrozenSet[str] = frozenset({"accept", "send_text", "send_json", "send_bytes", "receive_text",
                                                  "receive_json", "iter_text", "iter_json", "write_message"})
#: Methods that put a connection into a registry.
REGISTER_METHODS: FrozenSet[str] = frozenset({"append", "add", "setdefault", "insert"})
#: What makes the queue a streaming response (server-sent events, a long poll) reads its client's messages from:
#: one per connection, kept in the process that serves it.
CONNECTION_QUEUE_FACTORIES: FrozenSet[str] = frozenset({
    "asyncio.Queue", "asyncio.queues.Queue", "asyncio.LifoQueue", "queue.Queue", "queue.SimpleQueue",
    "janus.Queue", "gevent.queue.Queue", "anyio.create_memory_object_stream", "trio.open_memory_channel",
})
#: How a message is put into such a queue (or memory stream) for its connection.
QUEUE_SEND_METHODS: FrozenSet[str] = frozenset({"put", "put_nowait", "send_nowait"})
#: How the connection's reader takes the next message from it.
QUEUE_READ_METHODS: FrozenSet[str] = frozenset({"get", "get_nowait", "receive", "receive_nowait"})

# -- channels every replica subscribes to: what a subscriber receives, every replica received ----------------
#: Packages of brokers whose channels give every subscriber each message (Redis pub/sub and streams read with
#: ``XREAD``, broadcaster, Postgres LISTEN/NOTIFY, NATS core subjects).
SHARED_CHANNEL_PACKAGES: FrozenSet[str] = frozenset({
    "redis", "aioredis", "coredis", "valkey", "broadcaster", "asyncpg", "psycopg", "psycopg2", "aiopg", "nats",
})
#: Methods that read the next messages of such a channel (``pubsub.listen()``, ``pubsub.get_message()``,
#: ``XREAD``, psycopg's ``conn.notifies()``, a NATS subscription's ``next_msg()``).  ``XREADGROUP`` is not one:
#: a consumer group hands each entry to one consumer.
SHARED_CHANNEL_RECEIVES: FrozenSet[str] = frozenset({"listen", "get_message", "xread", "notifies", "next_msg"})
#: Methods that subscribe to such a channel (redis-py, broadcaster's ``async with broadcast.subscribe(...)``,
#: NATS).
SHARED_CHANNEL_SUBSCRIBES: FrozenSet[str] = frozenset({"subscribe", "psubscribe", "ssubscribe"})
#: Methods that hand such a channel's messages to a callback: asyncpg ``add_listener(channel, callback)``,
#: redis-py ``pubsub.subscribe(**{channel: handler})``, NATS ``subscribe(subject, cb=handler)``.  The first
#: positional argument is the channel (APScheduler's ``add_listener(callback, mask)`` is not a subscription).
SHARED_CHANNEL_CALLBACKS: FrozenSet[str] = SHARED_CHANNEL_SUBSCRIBES | {"add_listener"}
#: Methods that take such a callback off again (``remove_listener(channel, callback)``): naming the callback there
#: runs nothing.
SHARED_CHANNEL_UNSUBSCRIBES: FrozenSet[str] = frozenset({"remove_listener", "unsubscribe", "punsubscribe"})
#: Keywords that make a subscription share the messages out among its subscribers (a NATS queue group):
#: then each message reaches one replica only.
SHARED_CHANNEL_SPLIT_KEYWORDS: FrozenSet[str] = frozenset({"queue"})
#: Methods only a Redis client has, opening a pub/sub subscriber: the broker is in sight even when the client
#: comes from another module.
PUBSUB_FACTORIES: FrozenSet[str] = frozenset({"pubsub"})
#: The SQL statement that subscribes a Postgres connection to a channel.
LISTEN_STATEMENT = "LISTEN"

SOCKETIO_INSTEAD = ("Give the server a message queue every replica shares: `SocketIO(app, message_queue=\"redis://...\")` "
                    "(Flask-SocketIO) or `client_manager=socketio.AsyncRedisManager(\"redis://...\")` (python-socketio)")
CHANNELS_INSTEAD = ("Use a shared channel layer: `\"BACKEND\": \"channels_redis.core.RedisChannelLayer\"` "
                    "(package `channels_redis`)")
REGISTRY_INSTEAD = ("Publish through a shared channel and let each replica deliver to its own sockets: Redis "
                    "pub/sub (`broadcaster.Broadcast(\"redis://...\")`, `redis.asyncio` `publish`/`subscribe`)")

#: Containers a count per key is kept in (``hits = {}``, ``self.hits = defaultdict(deque)``), as spelled.
CONTAINER_WORDS: Tuple[bytes, ...] = (b"= {}", b"= []", b"set()", b"dict()", b"list()", b"defaultdict(", b"deque(",
                                      b"Counter(", b"OrderedDict(", b"Cache(")
#: Clock reads a window of counts is measured with, as spelled.
CLOCK_WORDS: Tuple[bytes, ...] = (b"time.time", b"time()", b"monotonic", b"perf_counter", b"time_ns", b"now(",
                                  b"utcnow(", b"today(", b"localdate(")
#: Words a limiter is described with (``rate_limit``, ``Limiter``, ``throttle``).
LIMITER_WORDS: Tuple[bytes, ...] = (b"limit", b"Limit", b"throttl", b"Throttl", b"quota", b"Quota")
#: Byte strings that let the prefilter keep a file for OG604.
#: A hand-written limiter's module may hold no status code (the refusal is in the function it hands the
#: limiter to): with the whole project read, a module that describes a limiter and keeps a container at its top
#: level is read too (``rate_limits.keeps_limiter_state``), and a module making a limiter object of a class that
#: counts against a clock is admitted by the class's name (``prefilter_words.counting_class_words``).
RATE_LIMIT_TRIGGERS = (b"Limiter", b"MemoryStorage", b"memory://", b"429", b"TOO_MANY_REQUESTS", b"TooManyRequests",
                       b"THROTTLE", b"ratelimit", b"throttl", b"Throttl",
                       # a hand-written window of timestamps, whose refusal may be written in another module
                       *((container, clock) for container in (b"deque", b"defaultdict", b"= {}", b"Counter(")
                         for clock in (b"monotonic", b"time.time", b"perf_counter")),
                       # a container kept in the application's state, counted by a middleware of another module
                       (b".state.", b"= {}", b"Limit"), (b"app[", b"= {}", b"Limit"))
BROADCAST_TRIGGERS = (b"SocketIO", b"socketio", b"InMemoryChannelLayer", b"send_text", b"send_json", b"send_bytes",
                      b"send_str", b"write_message",
                      # a message put into each queue of a registry of connections' queues
                      (b"put_nowait(", b"for "), (b".put(", b"await ", b"for "), (b"send_nowait(", b"for "),
                      # a plain ``send`` to each socket of a module that names a WebSocket type (Sanic, Quart)
                      (b".send(", b"for ", b"ebsocket"))

#: Decorators that keep what a function returns for the process's life (one limiter per process, as a
#: module-level one): ``@lru_cache`` ``def get_limiter(): return SlidingWindow(...)``.
MEMOIZING_DECORATORS = frozenset({"functools.lru_cache", "functools.cache"})

