"""What calls do to the world outside the process, as data for the effect summaries.

A scheduled job needs a claim when a repeat by another replica changes something twice; these tables say
which calls change nothing outside the process (pure helpers, reads, the process's own containers and
metrics), so that what remains is the job's real work.  A call known to none of them counts as an effect:
unknown work stays reported.
"""
from __future__ import annotations

from typing import FrozenSet, Tuple

#: HTTP's safe methods (RFC 9110 9.2.1: GET, HEAD and OPTIONS ask, they change nothing on the server) sent by
#: the HTTP libraries' module functions; a client object's ``.get(...)`` is a read as any ``get`` is.  A client
#: or session constructed (``aiohttp.ClientSession()``) builds an object.
HTTP_READ_CALLS: FrozenSet[str] = frozenset({
    "requests.get", "requests.head", "requests.options", "httpx.get", "httpx.head", "httpx.options",
    "aiohttp.ClientSession", "aiohttp.client.ClientSession", "httpx.Client", "httpx.AsyncClient", "requests.Session",
    "requests.session",
})

#: Calls with no effect outside the process (pure builtins, clocks, sleeps, serialisation, copying).
PURE_CALLS: FrozenSet[str] = frozenset({
    "len", "str", "int", "float", "bool", "list", "dict", "set", "tuple", "frozenset", "sorted", "reversed",
    "min", "max", "sum", "any", "all", "isinstance", "issubclass", "getattr", "hasattr", "setattr", "range",
    "enumerate", "zip", "map", "filter", "repr", "print", "round", "abs", "iter", "next", "type", "id", "hash",
    "super", "format", "vars", "callable",
    "time.time", "time.monotonic", "time.perf_counter", "time.sleep", "asyncio.sleep", "datetime.datetime.now",
    "datetime.datetime.utcnow", "datetime.date.today", "datetime.timedelta", "json.dumps", "json.loads",
    "copy.copy", "copy.deepcopy", "random.random", "random.randint", "random.uniform", "uuid.uuid4",
    "gc.collect", "asyncio.Event", "asyncio.Lock", "threading.Lock", "threading.Event", "collections.deque",
    "collections.defaultdict", "collections.Counter", "math.ceil", "math.floor",
    "django.utils.timezone.now", "django.utils.timezone.timedelta", "datetime.datetime.now.date",
    "datetime.datetime.fromtimestamp", "datetime.datetime.utcnow.date", "datetime.datetime.now.isoformat",
    "os.getenv", "os.environ.get", "datetime.timedelta.total_seconds", "time.time_ns", "logging.getLogger",
    # Building a statement runs nothing: its execution is judged by the SQL it carries.
    "sqlalchemy.text", "sqlalchemy.sql.text", "sqlalchemy.sql.expression.text",
    # Loader options and expression builders (SQLAlchemy): parts of a statement, judged with the statement.
    "sqlalchemy.orm.joinedload", "sqlalchemy.orm.selectinload", "sqlalchemy.orm.subqueryload",
    "sqlalchemy.orm.contains_eager", "sqlalchemy.orm.lazyload", "sqlalchemy.orm.noload",
    "sqlalchemy.orm.raiseload", "sqlalchemy.orm.load_only", "sqlalchemy.orm.defer", "sqlalchemy.orm.undefer",
    "sqlalchemy.orm.aliased", "sqlalchemy.orm.with_polymorphic", "sqlalchemy.and_", "sqlalchemy.or_",
    "sqlalchemy.not_", "sqlalchemy.sql.and_", "sqlalchemy.sql.or_", "sqlalchemy.sql.not_",
    "sqlalchemy.sql.expression.and_", "sqlalchemy.sql.expression.or_", "sqlalchemy.sql.expression.not_",
    "sqlalchemy.func.now", "sqlalchemy.func.count", "sqlalchemy.literal", "sqlalchemy.column",
    # Query expressions (Django ``F``/``Q``): parts of a statement, judged with the statement.
    "django.db.models.F", "django.db.models.Q", "django.db.models.expressions.F", "django.db.models.Value",
    "django.db.models.query_utils.Q",
    # Making an SDK's client sends nothing: what it is then asked to do is judged at those calls.
    "boto3.client", "boto3.resource", "boto3.Session", "boto3.session.Session", "boto3.Session.client",
    "boto3.Session.resource", "boto3.session.Session.client", "boto3.session.Session.resource",
    # This process's own event loop: making, setting and reading it acts on nothing outside.
    "asyncio.new_event_loop", "asyncio.set_event_loop", "asyncio.get_event_loop", "asyncio.get_running_loop",
    # Typing, introspection and import machinery.
    "cast", "typing.cast", "importlib.import_module", "inspect.iscoroutinefunction", "inspect.isawaitable",
    "inspect.signature", "threading.active_count", "threading.current_thread", "threading.get_ident",
    "os.getpid", "os.cpu_count", "socket.gethostname", "platform.node", "sys.getsizeof", "ast.literal_eval",
    "os.path.join", "os.path.exists", "os.path.isfile", "os.path.isdir", "os.path.basename",
    "os.path.dirname", "os.path.abspath", "os.path.getmtime", "os.path.getsize", "os.environ.copy",
    # Listing and inspecting the file system reads it.
    "glob.glob", "glob.iglob", "os.listdir", "os.scandir", "os.walk", "os.stat", "os.path.getctime",
    "os.path.getatime", "os.path.islink", "os.path.splitext", "os.path.relpath", "os.path.normpath",
    "hashlib.sha256", "hashlib.md5", "hashlib.sha1", "base64.b64encode", "base64.b64decode",
    "re.compile", "re.match", "re.search", "re.sub", "re.findall", "re.fullmatch", "fnmatch.fnmatch",
    "functools.partial", "itertools.chain", "itertools.islice", "urllib.parse.urlparse",
    "urllib.parse.urlencode", "urllib.parse.quote", "decimal.Decimal", "pathlib.Path",
    # Scheduling a coroutine runs nothing by itself: the coroutine's own call is judged where it is built.
    "asyncio.create_task", "asyncio.ensure_future", "asyncio.gather", "asyncio.wait_for", "asyncio.wait",
    "asyncio.shield", "asyncio.get_event_loop", "asyncio.get_running_loop", "asyncio.Queue",
    "asyncio.Semaphore", "asyncio.current_task", "asyncio.iscoroutinefunction", "asyncio.to_thread",
    "anyio.sleep", "anyio.sleep_until", "anyio.sleep_forever", "anyio.current_time", "anyio.Event", "anyio.Lock",
    "anyio.Semaphore", "anyio.CapacityLimiter", "anyio.CancelScope", "anyio.move_on_after", "anyio.fail_after",
    "anyio.get_cancelled_exc_class", "trio.sleep", "trio.sleep_until", "trio.current_time",
    # The process looking at itself: its tasks, threads, frames and memory.
    "asyncio.all_tasks", "threading.enumerate", "sys._current_frames", "traceback.format_stack",
    "traceback.format_exc", "traceback.extract_stack", "gc.get_objects", "gc.get_stats", "gc.get_count",
    "tracemalloc.take_snapshot", "tracemalloc.get_traced_memory", "resource.getrusage",
    # The process's own terminal: what it prints reaches its own console and logs, like a log line.
    "sys.stdout.write", "sys.stderr.write", "sys.stdout.flush", "sys.stderr.flush",
    # The process's own database connections: closing stale ones (before and after a job's work in a long-lived
    # thread) opens or ends no work anywhere else.
    "django.db.close_old_connections", "django.db.connections.close_all", "django.db.connection.close",
    "django.db.reset_queries",
    # The process's own metrics written out as text.
    "prometheus_client.generate_latest", "prometheus_client.exposition.generate_latest",
    "prometheus_client.openmetrics.exposition.generate_latest",
})
#: Calls that delete a path on this host's file system: a second run finds it gone (or deletes the same
#: file again), so repeating one changes nothing more.
PATH_DELETES: FrozenSet[str] = frozenset({
    "shutil.rmtree", "os.remove", "os.unlink", "os.rmdir", "os.removedirs",
})
#: ``path.unlink()`` / ``path.rmdir()`` on a ``pathlib`` path; ``proc.terminate()`` / ``proc.kill()`` of a
#: process: stopping what is already stopped, or deleting what is gone, does nothing more.
STOP_OR_DELETE_METHODS: FrozenSet[str] = frozenset({"unlink", "rmdir", "terminate", "kill"})
#: Calls that return a new container of the process's own (a listing, a sorted copy): methods called on
#: what they return (``files.sort()``) change only the process's memory.
FRESH_CONTAINER_CALLS: FrozenSet[str] = frozenset({
    "sorted", "list", "dict", "set", "tuple", "frozenset", "glob.glob", "os.listdir", "re.findall",
    "copy.copy", "copy.deepcopy",
})
#: ``open(path)`` / ``open(path, "rb")``: a file opened only for reading changes nothing.
FILE_OPENERS: FrozenSet[str] = frozenset({"open", "io.open", "codecs.open"})
FILE_WRITE_MODE_CHARACTERS = frozenset("wax+")
#: Methods of the process's own containers and synchronisation objects.
CONTAINER_METHODS: FrozenSet[str] = frozenset({
    "append", "appendleft", "extend", "pop", "popleft", "popitem", "clear", "get", "items", "keys", "values",
    "setdefault", "add", "discard", "remove", "copy", "update", "insert", "index", "count", "sort",
    "get_nowait", "put_nowait", "qsize", "empty", "full", "is_set", "wait", "set", "acquire", "release",
    "locked", "format", "join", "split", "strip", "lower", "upper", "startswith", "endswith", "replace",
    "encode", "decode", "isoformat", "timestamp", "total_seconds", "date",
})
LOG_RECEIVER_WORDS: Tuple[str, ...] = ("log", "logger", "logging")
LOG_METHODS: FrozenSet[str] = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log",
                          "adebug", "ainfo", "awarning", "aerror", "aexception"})
EMPTY_FACTORIES: FrozenSet[str] = frozenset({"dict", "list", "set", "deque", "collections.deque", "defaultdict",
                              "collections.defaultdict", "Counter", "collections.Counter", "OrderedDict"})
DRAIN_METHODS: FrozenSet[str] = frozenset({"get_nowait", "popleft"})

#: Methods that open, end or hand out a connection, session or transaction: the effects are in what is sent
#: through it, not in these calls.
SCOPE_METHODS: FrozenSet[str] = frozenset({
    "begin", "connect", "cursor", "commit", "rollback", "close", "flush", "acquire_connection", "connection",
    "begin_nested", "atomic", "refresh", "expire", "expunge",
})

#: Methods that read rows and change nothing (ORM and driver read APIs: Prisma Client Python, SQLAlchemy,
#: Django, asyncpg, DB-API).
READ_METHODS: FrozenSet[str] = frozenset({
    "find_many", "find_first", "find_unique", "find_first_or_raise", "find_unique_or_raise", "count",
    "group_by", "fetch", "fetchrow", "fetchval", "fetchall", "fetchone", "fetchmany", "scalars", "scalar",
    "scalar_one", "scalar_one_or_none", "all", "first", "one", "one_or_none", "exists", "aggregate",
    "values_list", "iterator", "in_bulk", "latest", "earliest",
    # SQLAlchemy result shapers: the rows are already read
    "unique", "mappings", "tuples", "partitions", "columns",
})

#: Building a query sends nothing: what the query then does (delete, update, iterate) is the effect.
QUERY_BUILDERS: FrozenSet[str] = frozenset({
    "filter", "filter_by", "where", "exclude", "order_by", "select_related", "prefetch_related", "only",
    "defer", "limit", "offset", "distinct", "annotate", "join", "outerjoin", "options", "group_by",
    # Locking the selected rows changes none of them: what is then done with the rows is the effect.
    "select_for_update", "with_for_update",
    # Column expressions (SQLAlchemy): parts of a statement, judged with the statement.
    "in_", "not_in", "notin_", "is_", "is_not", "isnot", "like", "ilike", "desc", "asc", "label",
    "between", "contains", "startswith", "endswith",
    # Loader options chained on a loader option (SQLAlchemy ``selectinload(A.b).load_only(B.c)``).
    "load_only", "selectinload", "joinedload", "subqueryload", "defaultload", "lazyload", "noload",
    "raiseload", "undefer", "undefer_group", "contains_eager",
})

#: Methods that only read or reshape a value, whatever the receiver: a dict, a cache, a response, a string,
#: an HTTP client's GET.  (``set``, ``delete``, ``post`` and the like are not here: on a shared client they
#: change what other replicas see.)
READ_ANYWHERE_METHODS: FrozenSet[str] = frozenset({
    "get", "items", "keys", "values", "decode", "encode", "isoformat", "strftime", "timestamp", "format",
    "split", "rsplit", "strip", "lstrip", "rstrip", "lower", "upper", "title", "startswith", "endswith",
    "replace", "join", "isalnum", "isdigit", "isalpha", "model_dump", "model_dump_json", "dict", "json",
    "to_dict", "copy", "total_seconds", "date", "astimezone", "hexdigest", "digest", "group", "groups",
    "match", "search", "findall", "is_set", "done", "cancelled", "result", "qsize", "empty",
    # an HTTP response looked at (requests, httpx): its status turned into an exception
    "raise_for_status",
    # pydantic validation and parsing
    "validate_python", "validate_json", "validate_strings", "model_validate", "model_validate_json",
    "parse_obj", "parse_raw", "model_copy",
    # a file system's paths looked at (``pathlib``): listing, testing and reading them
    "iterdir", "rglob", "glob", "exists", "is_dir", "is_file", "is_symlink", "lstat", "stat", "read_text",
    "read_bytes", "resolve", "relative_to", "with_suffix", "with_name",
})

#: Metrics a process keeps in its own memory (Prometheus client, OpenTelemetry instruments): exported by
#: each replica on its own, so updating them is per-process work.
PROCESS_LOCAL_METHODS: FrozenSet[str] = frozenset({
    "labels", "inc", "dec", "observe", "add_row", "add_column",
})

#: Standard-library (and typing) modules whose functions compute and change nothing outside the process.
PURE_MODULES: Tuple[str, ...] = (
    "inspect.", "typing.", "re.", "os.path.", "math.", "json.", "hashlib.", "hmac.", "base64.", "string.",
    "itertools.", "functools.", "operator.", "copy.", "datetime.", "uuid.", "random.", "decimal.",
    "fractions.", "statistics.", "textwrap.", "urllib.parse.", "collections.", "dataclasses.", "enum.",
    "ipaddress.", "secrets.", "traceback.", "warnings.", "contextlib.", "types.", "weakref.",
    "time.", "calendar.", "zoneinfo.", "struct.", "binascii.", "zlib.", "html.", "unicodedata.", "bisect.",
    "heapq.", "shlex.", "difflib.", "pprint.", "numbers.", "abc.",
    # this host's own counters and processes, read (a process stopped through it is judged by ``kill``/``terminate``)
    "psutil.",
    # SQL functions (``func.now()``, ``func.count(...)``): parts of a statement, judged with the statement.
    "sqlalchemy.func.", "sqlalchemy.sql.func.", "sqlalchemy.sql.expression.func.", "sqlmodel.func.",
)

#: SQL expression constructors of SQLAlchemy (and of SQLModel, which re-exports them): ``false()``,
#: ``case(...)``, ``literal(...)`` build a part of a statement and send nothing; the statement that carries
#: them is judged where it is executed.
_SQL_EXPRESSION_NAMES = (
    "and_", "or_", "not_", "false", "true", "null", "case", "cast", "literal", "literal_column", "column",
    "table", "text", "exists", "distinct", "desc", "asc", "nulls_first", "nulls_last", "nullsfirst",
    "nullslast", "bindparam", "tuple_", "type_coerce", "union", "union_all", "intersect", "except_",
    "between", "extract", "over", "within_group", "lateral", "collate", "any_", "all_", "outerjoin", "join",
    "label", "select", "funcfilter", "values",
)
_SQL_EXPRESSION_MODULES = ("sqlalchemy", "sqlalchemy.sql", "sqlalchemy.sql.expression", "sqlmodel")
SQL_EXPRESSION_CALLS: FrozenSet[str] = frozenset(
    f"{module}.{name}" for module in _SQL_EXPRESSION_MODULES for name in _SQL_EXPRESSION_NAMES)

#: Name prefixes of accessors and predicates: ``get_settings()``, ``is_enabled()``.  A name that also says
#: it creates (``get_or_create``) is not one.
ACCESSOR_PREFIXES: Tuple[str, ...] = ("get_", "is_", "has_", "should_", "_get_", "_is_", "_has_", "_should_")
ACCESSOR_EXCEPTIONS: Tuple[str, ...] = ("create", "or_", "lock", "claim", "acquire")

#: Words that, anywhere in a function or method name, say it reaches someone outside the process: sent,
#: published, charged.  Deep in a job's callees an unknown call counts as an effect only when its name says
#: so; near the job any unknown call does (see ``summaries.UNKNOWN_DEPTH``).
ACTION_WORDS: FrozenSet[str] = frozenset({
    "send", "sendmail", "mail", "email", "post", "publish", "enqueue", "delay", "charge", "refund", "pay",
    "invoice", "notify", "webhook", "urlopen", "upload", "export", "submit", "dispatch", "broadcast", "emit",
    "incr", "incrby", "decr", "hset", "hincrby", "lpush", "rpush", "xadd", "sadd", "zadd", "setex", "setnx",
    "executemany", "executescript", "popen", "rmtree", "unlink",
})

#: Storage verbs, which also name in-memory helpers (``create_parser``, ``remove_callback``): they count only
#: as a method's whole name, as storage APIs spell them (``create``, ``adelete``, ``update_many``,
#: ``bulk_create``).
STORAGE_VERBS: FrozenSet[str] = frozenset({
    "create", "delete", "update", "insert", "upsert", "save", "put", "patch", "write", "remove", "rename",
    "execute", "apply_async", "store", "persist", "push", "request", "trigger", "purge", "kill", "terminate",
})
STORAGE_VERB_FORMS: Tuple[str, ...] = ("{}", "a{}", "{}_many", "bulk_{}", "{}_all", "{}_one")
#: Whole names of row writes that the forms above do not spell: Django's ``update_or_create`` writes the row it
#: finds or makes.
STORAGE_NAMES_MORE: FrozenSet[str] = frozenset({"update_or_create", "aupdate_or_create"})

#: Modules whose every call acts outside the process (a child process, mail, the file system, the network).
EFFECT_MODULES: Tuple[str, ...] = (
    "subprocess.", "smtplib.", "shutil.", "os.remove", "os.unlink", "os.rename", "os.replace", "os.system",
    "os.makedirs", "os.mkdir", "os.rmdir", "requests.", "httpx.", "urllib.request.", "aiohttp.",
    "django.core.mail.", "boto3.", "stripe.",
)

#: Calls that act on the calling process only: a signal it sends itself, its own exit.
OWN_PROCESS_CALLS: FrozenSet[str] = frozenset({"signal.raise_signal", "os._exit", "sys.exit", "os.abort"})
#: Calls that never return to their caller: they raise (a web framework's ``abort`` raises the HTTP error it is
#: given) or end the process.
LEAVING_CALLS: FrozenSet[str] = frozenset({
    "flask.abort", "quart.abort", "werkzeug.exceptions.abort", "sys.exit", "os._exit", "os.abort",
})
#: Calls that signal a process by id; aimed at ``os.getpid()`` they act on this process only.
SIGNAL_CALLS: FrozenSet[str] = frozenset({"os.kill"})
OWN_PID_CALLS: FrozenSet[str] = frozenset({"os.getpid"})

#: Reads that also reset what they read (a counter pulled with ``reset=True``, Redis ``GETDEL``): each
#: caller takes a share nobody else gets, so replicas split the amounts instead of counting them twice.
TAKE_KEYWORDS: FrozenSet[str] = frozenset({"reset"})
TAKE_METHODS: FrozenSet[str] = frozenset({"getdel"})

#: Methods that enqueue a task object for a worker (Celery, and the queues that copy its API): the effect
#: is the task's own, run once per enqueue.
ENQUEUE_METHODS: FrozenSet[str] = frozenset({"delay", "apply_async", "send_with_options", "kiq"})

#: SQLAlchemy Core statement constructors, by what the statement does.
CORE_STATEMENTS = {
    "sqlalchemy.delete": "delete", "sqlalchemy.update": "update", "sqlalchemy.insert": "insert",
    "sqlalchemy.select": "select", "sqlalchemy.sql.delete": "delete", "sqlalchemy.sql.update": "update",
    "sqlalchemy.sql.insert": "insert", "sqlalchemy.sql.select": "select",
    "sqlalchemy.sql.expression.delete": "delete", "sqlalchemy.sql.expression.update": "update",
    "sqlalchemy.sql.expression.insert": "insert", "sqlalchemy.sql.expression.select": "select",
    "sqlalchemy.dialects.postgresql.insert": "insert", "sqlalchemy.dialects.sqlite.insert": "insert",
    "sqlmodel.select": "select", "sqlmodel.delete": "delete", "sqlmodel.update": "update",
}
#: Calls that send a statement to the database (a session's or a connection's).
STATEMENT_SENDERS: FrozenSet[str] = frozenset({
    "execute", "scalars", "scalar", "exec", "stream", "stream_scalars", "scalar_one", "scalar_one_or_none",
})
#: ``insert(...).on_conflict_do_nothing()``: a repeat of the insert adds nothing.
INSERT_IGNORING_CONFLICTS: FrozenSet[str] = frozenset({"on_conflict_do_nothing", "prefix_with"})
#: ``insert(T).values(...).on_conflict_do_update(index_elements=..., set_={...})`` (SQLAlchemy's PostgreSQL and
#: SQLite inserts): the keyword holding what a conflicting row is set to.
UPSERT_METHODS = {"on_conflict_do_update": "set_"}

# -- this replica's own share of the work (``project.own_share``) -----------------------------------------
#: Methods that put an item into a container: a registry the process fills this way as it serves holds
#: what this replica served.
REGISTRY_FILL_METHODS: FrozenSet[str] = frozenset({
    "append", "appendleft", "add", "extend", "insert", "setdefault", "update", "put", "put_nowait",
})
#: The process's own metrics: a Prometheus registry (the default one, or one made to collect this host's
#: worker processes) and the exposition text made from it. Pushing them is each replica's own work.
PROCESS_METRICS_SOURCES: FrozenSet[str] = frozenset({
    "prometheus_client.REGISTRY", "prometheus_client.registry.REGISTRY", "prometheus_client.CollectorRegistry",
    "prometheus_client.registry.CollectorRegistry", "prometheus_client.generate_latest",
    "prometheus_client.exposition.generate_latest", "prometheus_client.openmetrics.exposition.generate_latest",
})
PROCESS_METRICS_MODULES: FrozenSet[str] = frozenset({"prometheus_client"})
#: Calls whose value is this replica's alone: a fresh random id, this host's name, this process's id.
REPLICA_IDENTITY_CALLS: FrozenSet[str] = frozenset({
    "uuid.uuid4", "uuid.uuid1", "secrets.token_hex", "secrets.token_urlsafe", "secrets.token_bytes",
    "os.getpid", "socket.gethostname", "socket.getfqdn", "platform.node",
})
#: Query methods that pick the rows a statement acts on.
ROW_SELECTION_METHODS: FrozenSet[str] = frozenset({"where", "filter", "filter_by", "exclude"})
