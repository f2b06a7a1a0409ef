"""ORM facts: how Django and SQLAlchemy load rows, write them back, lock them and do arithmetic in SQL
(reference/frameworks.md §6.1, §6.2)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, FrozenSet, Optional, Tuple

# -- Django ------------------------------------------------------------------------------------------
#: ``Model.<manager>.…``: the attribute that shows a chain is a Django queryset.
DJANGO_MANAGERS: FrozenSet[str] = frozenset({"objects", "_default_manager", "_base_manager"})
#: Queryset methods that return one model instance.
DJANGO_INSTANCE_LOADERS: FrozenSet[str] = frozenset({
    "get", "first", "last", "latest", "earliest", "aget", "afirst", "alast", "alatest", "aearliest",
})
#: Queryset methods that return ``(instance, created)``.
DJANGO_PAIR_LOADERS: FrozenSet[str] = frozenset({
    "get_or_create", "update_or_create", "aget_or_create", "aupdate_or_create",
})
#: Functions that load one instance.
DJANGO_SHORTCUT_LOADERS: FrozenSet[str] = frozenset({
    "django.shortcuts.get_object_or_404", "django.shortcuts.aget_object_or_404",
})
#: Instance methods that write the in-memory field values back.
DJANGO_SAVE: FrozenSet[str] = frozenset({"save", "asave"})
#: Manager methods that write the named fields of every instance of a list they are handed
#: (``Post.objects.bulk_update(posts, ["views"])``): each instance's value as the caller changed it.
DJANGO_BULK_SAVE: FrozenSet[str] = frozenset({"bulk_update", "abulk_update"})
#: Session methods that take every instance of a list into the session, as ``add`` takes one.
SA_ADD_ALL: FrozenSet[str] = frozenset({"add_all"})
#: Instance methods that write the row (pickup: processing ends with one of these).
DJANGO_INSTANCE_WRITES: FrozenSet[str] = frozenset({"save", "asave", "delete", "adelete"})
#: Queryset methods that write every row they match.
DJANGO_QUERYSET_WRITES: FrozenSet[str] = frozenset({"update", "aupdate", "delete", "adelete"})
#: Row locks; ``select_for_update()`` evaluated outside ``atomic()`` raises, so its presence means a lock.
DJANGO_ROW_LOCK = "select_for_update"
#: Django REST framework: a view's ``get_object()`` loads the object from what its ``get_queryset()`` returns,
#: under the view's ``action`` (``"retrieve"``, ``"update"``, or a custom ``@action``'s method name).
DRF_OBJECT_GETTERS: FrozenSet[str] = frozenset({"get_object"})
DRF_QUERYSET_METHOD = "get_queryset"
DRF_ACTION_ATTRIBUTE = "action"
DJANGO_F: FrozenSet[str] = frozenset({"django.db.models.F", "django.db.models.expressions.F"})

# -- SQLAlchemy / SQLModel / Flask-SQLAlchemy ----------------------------------------------------------
#: ``session.get(Model, pk)``: returns one mapped instance.
SA_SESSION_GET: FrozenSet[str] = frozenset({"get"})
#: Result/Query methods that return one instance.
SA_ONE: FrozenSet[str] = frozenset({
    "first", "one", "one_or_none", "scalar", "scalar_one", "scalar_one_or_none", "get",
    # Flask-SQLAlchemy's ``Model.query``: the same, aborting with 404 when nothing matches
    "get_or_404", "first_or_404", "one_or_404",
})
#: The terminal calls of a Flask-SQLAlchemy ``Model.query`` chain that load one instance.
FLASK_QUERY_LOADS = ("first", "one", "one_or_none", "get", "get_or_404", "first_or_404", "one_or_404")
#: ``class Customer(db.Model)``: the declarative base a Flask-SQLAlchemy extension hands out.
FLASK_MODEL_BASE = "Model"
#: Flask-SQLAlchemy 3's extension methods that load one instance: ``db.get_or_404(User, user_id)``.
FLASK_SA_GET: FrozenSet[str] = frozenset({"get_or_404"})
#: Result/Query methods that return many instances (or iterate them).
SA_MANY: FrozenSet[str] = frozenset({"all", "fetchall", "partitions", "unique"})
#: Session methods that run a statement and return a result.
SA_EXECUTE: FrozenSet[str] = frozenset({"execute", "scalars", "scalar", "exec"})
#: Legacy ``session.query(Model)``.
SA_QUERY = "query"
SA_QUERY_METHODS: FrozenSet[str] = frozenset({
    "filter", "filter_by", "where", "order_by", "limit", "offset", "join", "options", "with_for_update",
    "execution_options", "populate_existing", "yield_per",
})
SA_SELECT: FrozenSet[str] = frozenset({
    "sqlalchemy.select", "sqlalchemy.future.select", "sqlalchemy.sql.select",
    "sqlalchemy.sql.expression.select", "sqlmodel.select",
})
SA_UPDATE: FrozenSet[str] = frozenset({
    "sqlalchemy.update", "sqlalchemy.sql.update", "sqlalchemy.sql.expression.update", "sqlmodel.update",
})
#: Session methods that send pending attribute changes to the database.
SA_FLUSH: FrozenSet[str] = frozenset({"commit", "flush"})
SA_DELETE = "delete"
#: ``select(...).with_for_update()`` / ``query.with_for_update()`` / ``session.get(..., with_for_update=True)``
SA_ROW_LOCK = "with_for_update"
SA_ROW_LOCK_KEYWORD = "with_for_update"
#: A call on the loaded instance with one of these keywords true re-reads it under a row lock
#: (Airflow's ``ti.refresh_from_db(lock_for_update=True)``, ``session.refresh(obj, with_for_update=True)``).
ROW_LOCK_KEYWORDS: FrozenSet[str] = frozenset({"lock_for_update", "with_for_update", "for_update", "select_for_update"})
#: Modules whose import shows that ``session.query(...)``-shaped chains are SQLAlchemy.
SA_MODULES: FrozenSet[str] = frozenset({"sqlalchemy", "sqlmodel", "flask_sqlalchemy"})

# -- rows picked by status ------------------------------------------------------------------------------
#: Query methods through which a status condition reaches an ORM query.
PICKUP_FILTER_METHODS: Tuple[str, ...] = ("filter", "filter_by", "where", "exclude")
#: Columns a worker selects pending rows by.  A suffix match covers ``payment_status``, ``job_state``.
STATUS_COLUMNS: FrozenSet[str] = frozenset({
    "status", "state", "processed", "published", "sent", "done", "handled", "delivered", "claimed",
    "is_processed", "is_published", "is_sent", "is_done", "locked_by", "claimed_by", "worker_id",
})
STATUS_SUFFIXES = ("_status", "_state")
#: ``published_at IS NULL``: a timestamp still empty marks a pending row.
PENDING_TIMESTAMP_SUFFIXES = ("_at", "_on", "_time")
#: Django lookups on those columns: ``status__in``, ``published_at__isnull``.
DJANGO_STATUS_LOOKUPS: FrozenSet[str] = frozenset({"", "exact", "in", "isnull"})


# -- prefilter ------------------------------------------------------------------------------------------
# Each tuple lists words that must all occur, the cheapest rejection first; a file matching none is never
# parsed for these rules.  Every flagged doc example and fixture is checked against them by the test suite.
#: Python arithmetic on the value read: ``n += 1``, ``n = n + 1``.
#: A value computed in Python from one read: the words of its arithmetic.
ARITHMETIC_WORDS = (b"+=", b"-=", b" + ", b" - ")
_SQLALCHEMY_WORDS = (b"sqlalchemy", b"sqlmodel", b".query")
#: A Redis client or the Django cache is visible only through its import.
_REDIS_ONLY_WORDS = (b"redis", b"Redis", b"valkey", b"Valkey")
_REDIS_CLIENT_WORDS = (*_REDIS_ONLY_WORDS, b"core.cache")

#: A field changed from its own value: arithmetic, a dict merge, a list grown in place, a key counted.
_CHANGE_WORDS = (*ARITHMETIC_WORDS, b"{**", b" | ", b".append(", b".extend(", b"] = ")
#: What writes an instance back, wherever it came from (a parameter, ``self.token``, a repository).
_INSTANCE_WRITE_WORDS = (b"save(", b"commit(", b"flush(", b".merge(", b".update(", b".values(", b"bulk_update(",
                         # ``with factory.begin() as session:``: the block's end commits
                         b".begin()")

#: A container read from a store and changed in place (every method the data-race rules count as one).
_IN_PLACE_CHANGE_WORDS = tuple(b"." + method + b"(" for method in (
    b"append", b"extend", b"insert", b"update", b"setdefault", b"pop", b"popitem", b"remove", b"discard", b"add",
    b"clear"))

#: A document merged in Python and sent back whole: the merge, or the JSON wrapper a driver sends a dict through.
_DOCUMENT_MERGE_WORDS = (b"{**", b" | ", b"Json(", b"Jsonb(", b"json.dumps(")

#: Calls that copy many fetched items in as rows at once (a sync that moves a stored position past them).
POSITION_COPY_WORDS = (b"bulk_create(", b"add_all(", b".add(", b".create(", b"executemany(",
                       b"bulk_insert_mappings(", b"bulk_save_objects(", b"insert_many(")

READ_MODIFY_WRITE_TRIGGERS = (
    # Any instance changed from its own value and written back: the write shows it is a row.
    *((writer, change) for writer in _INSTANCE_WRITE_WORDS for change in _CHANGE_WORDS),
    # A row loaded and written in one function while a callee changes it (``counter.increase()``,
    # ``bump_votes(poll)`` then ``poll.save()``).
    *((writer, loader) for writer in (b"save(", b"commit(", b"flush(")
      for loader in (b"objects", b"select(", b".query(", b".get(")),
    # An entry of a dict-like class over a Redis hash assigned back from a read of it.
    (b"] = ", b".items()"), (b"] = {", b".get("), (b"__setitem__", b"hset"),
    # A project class over a cache: an entry of the value read changed in Python, then set back.
    *((b"set_", change, b"get_") for change in (b"] = ", b"] += ", b" + ")),
    # A project's keyed store: a record read by key, merged or changed, stored again under that key (the read may
    # be the bare noun its write names: ``ledger.remaining(...)`` ... ``ledger.set_remaining(..., left - qty)``).
    *((read, change, write) for read in (b".get_", b".load_", b".fetch_", b".read_", b".find_", b"(")
      for change in (b"{**", b" + ", b" - ", b"] = ", b"] += ", b" | ", b"+=", b"-=", *_IN_PLACE_CHANGE_WORDS)
      for write in (b".set_", b".put_", b".upsert_", b".save_", b".store_", b".update_", b".write_", b".replace_")),
    # A mapped model's method changing ``self`` from its own value: the caller's commit writes it.
    *((model, b"self.", op) for model in (b"__tablename__", b"mapped_column", b"Column(", b"Field(")
      for op in ARITHMETIC_WORDS),
    # SQLAlchemy: an instance loaded by a Session, changed, committed or flushed.
    *((writer, library, op) for writer in (b"commit(", b"flush(") for library in _SQLALCHEMY_WORDS
      for op in ARITHMETIC_WORDS),
    # SQLAlchemy: a row loaded through a session the function is handed and changed there; the caller commits.
    *((library, loader, op) for library in _SQLALCHEMY_WORDS
      for loader in (b"session.get(", b"session.scalar(", b".scalars(", b"session.execute(") for op in ARITHMETIC_WORDS),
    # Flask-SQLAlchemy: a row loaded through ``Model.query`` changed here; the caller commits the app's session.
    *((b".query.", op) for op in ARITHMETIC_WORDS),
    # A position kept in a row, handed to a fetch and moved past what came back, the items copied in as rows.
    *((loader, copy, writer) for loader in (b".get(", b"objects", b"select(", b".query(", b".first(")
      for copy in POSITION_COPY_WORDS for writer in (b"save(", b"commit(", b"begin(", b"flush(")),
    # A row handed in (``def debit(session: Session, acct, amount)``) changed here, written back by the caller.
    (b"Session", b"+="), (b"Session", b"-="),
    # Raw SQL: SELECT, then UPDATE with the value computed in Python.
    *((b"UPDATE", b"SELECT", op) for op in ARITHMETIC_WORDS),
    *((b"update ", b"select ", op) for op in ARITHMETIC_WORDS),
    # Raw SQL: SELECT, then UPDATE of a document merged in Python (here, or by a def it is handed to), sent as JSON.
    *((update, select, word) for update, select in ((b"UPDATE", b"SELECT"), (b"update ", b"select "))
      for word in _DOCUMENT_MERGE_WORDS),
    # Redis or the Django cache: GET, then SET of a value computed from it.
    *((client, write, op) for client in _REDIS_CLIENT_WORDS for write in (b"set(", b"hset", b"setex")
      for op in ARITHMETIC_WORDS),
    # ... or ZSCORE, then ZADD of a score computed from it.
    *((b"zscore", b"zadd", op) for op in ARITHMETIC_WORDS),
    # A model class's own update statement (Peewee, Piccolo) of a value computed from its select.
    *((b".update(", b".select(", op) for op in ARITHMETIC_WORDS),
    # A Redis hash read whole and written back whole.
    (b"hgetall(", b"mapping="),
    # A document store: a field read with ``find_one`` and written back with ``$set``.
    (b"find_one", b"$set"),
    # ... or a whole document read and written back (DynamoDB, Firestore, Elasticsearch, MongoDB ``replace_one``).
    (b"get_item", b"put_item"), (b"firestore", b".set("), (b"elasticsearch", b".index("),
    (b"opensearch", b".index("), (b"find_one", b"replace_one"),
    # ... or the whole value read, changed in place (a JSON document decoded, a list grown), set back.
    # (a Redis client's: a document kept in Django's cache is as often one job's own progress, read back by it)
    *((client, b"set(", change) for client in _REDIS_ONLY_WORDS for change in (b"] = ", *_IN_PLACE_CHANGE_WORDS)),
)

# -- document stores whose documents are read whole and written back whole (OG301) --------------------------
@dataclass(frozen=True)
class WholeDocumentStore:
    name: str
    modules: Tuple[str, ...]  # what a module (or, for names only this store uses, the project) imports
    reads: FrozenSet[str]  # calls that read one document
    writes: Dict[str, Tuple[Optional[str], Optional[int]]]  # call -> (keyword, position) of the document written
    distinctive: bool  # its method names are its own: an import anywhere in the project is evidence enough
    instead: str


WHOLE_DOCUMENT_STORES: Tuple[WholeDocumentStore, ...] = (
    WholeDocumentStore("DynamoDB", ("boto3", "aioboto3"), frozenset({"get_item"}), {"put_item": ("Item", None)},
                       True, "`update_item` with `UpdateExpression=\"SET balance = balance - :d\"` and a "
                       "`ConditionExpression` (`balance >= :d`), or a `ConditionExpression` on a version attribute"),
    WholeDocumentStore("Firestore", ("google.cloud.firestore", "firebase_admin"), frozenset({"get"}),
                       {"set": (None, 0)}, False, "`ref.update({\"count\": firestore.Increment(1)})`, or a "
                       "transaction (`@firestore.transactional`) that reads and writes the document"),
    WholeDocumentStore("Elasticsearch", ("elasticsearch", "opensearchpy"), frozenset({"get"}),
                       {"index": ("document", None)}, False, "a scripted `update` (`ctx._source.views += 1`) with "
                       "`retry_on_conflict`, or `index(..., if_seq_no=..., if_primary_term=...)` from the read"),
    WholeDocumentStore("MongoDB", ("pymongo", "motor"), frozenset({"find_one"}), {"replace_one": ("replacement", 1)},
                       False, "an update operator (`$inc`, `$push`, `$set` of one field) in `update_one`, or a "
                       "filter on the value read so the replace only lands if nothing changed"),
)
#: Elasticsearch's older spelling of the document written.
DOCUMENT_BODY_KEYWORD = "body"

# -- next-number allocation (OG301): the highest value read, one added in Python, stored in a row -------
#: Django's MAX aggregate, as ``aggregate(Max("n"))`` spells it.
DJANGO_MAX = frozenset({"django.db.models.Max", "django.db.models.aggregates.Max"})
#: SQLAlchemy's ``func.max`` as qualified through the module's imports.
SQLALCHEMY_MAX = frozenset({"sqlalchemy.func.max", "sqlalchemy.sql.func.max", "sqlalchemy.sql.expression.func.max"})
#: Calls that read one value of a one-column result.
SCALAR_READS = frozenset({"scalar", "scalar_one", "scalar_one_or_none", "scalar_subquery"})
#: Calls that take the first row of an ordered query.
FIRST_ROW = frozenset({"first", "one", "one_or_none"})
#: Row locks taken before reading: the allocation is serialised.
ROW_LOCKS = frozenset({"select_for_update", "with_for_update"})
#: Exceptions a unique constraint raises: an allocation inside ``try/except`` of one is retried.
UNIQUE_VIOLATION_ERRORS = frozenset({"IntegrityError", "UniqueViolation", "UniqueViolationError"})
#: Base classes of those (DB-API, SQLAlchemy, Django, psycopg): a handler of one also catches a duplicate.
UNIQUE_VIOLATION_BASES = frozenset({"DatabaseError", "DBAPIError", "SQLAlchemyError"})
#: Calls that send a new row to the database inside a transaction's ``try``.
INSERT_SENDERS = frozenset({"commit", "flush", "save", "create", "bulk_create", "acommit", "aflush", "asave", "acreate"})
NEXT_NUMBER_TRIGGERS = tuple(
    (read, step) for read in (b"Max(", b"func.max", b".desc()", b"desc(", b"order_by(\"-", b"order_by('-",
                              b".latest(", b"max(", b"MAX(")
    for step in (b"+ 1", b"+1")
)

#: A query by status: the column name followed by how filters and WHERE clauses compare it.
_STATUS_COLUMN_WORDS = (
    b"status", b"state", b"processed", b"published", b"sent", b"done", b"handled", b"delivered", b"claimed",
    b"locked_by", b"worker_id",
)
_COMPARISONS = (b"=", b" =", b"__", b" in", b" IN", b".in_(", b".is_(")
_PENDING_WORDS = (b"isnull", b"IS NULL", b"is null", b"is_(None)", b"== None")
_WRITE_WORDS = (b"save(", b"update", b"UPDATE", b"delete", b"DELETE", b"commit(")
_QUERY_WORDS = (b"filter(", b"filter_by(", b"where(", b"WHERE", b"where ", b"exclude(")
ROW_PICKUP_TRIGGERS = (
    # raw SQL that selects rows by a condition: what moves them on may be written in another module (a helper,
    # a worker thread the rows are queued to), and the state column may be known only from that UPDATE
    (b"SELECT ", b"WHERE "),
    *((column + comparison, query, write) for column in _STATUS_COLUMN_WORDS for comparison in _COMPARISONS
      for query in _QUERY_WORDS for write in _WRITE_WORDS),
    *((pending, query, write) for pending in _PENDING_WORDS for query in _QUERY_WORDS for write in _WRITE_WORDS),
)

# -- who writes a row (OG301) -----------------------------------------------------------------------------
#: Top-level packages whose objects may be database rows (ORMs and ODMs): a value they make is never taken
#: for a plain library object.
ORM_MODULES: FrozenSet[str] = frozenset({
    "django", "sqlalchemy", "sqlmodel", "flask_sqlalchemy", "tortoise", "peewee", "pony", "mongoengine",
    "beanie", "odmantic", "ormar", "piccolo", "databases", "gino", "edgy", "saffier", "redis_om", "pynamodb",
})
#: Base classes that make a class a mapped model even when its columns are declared elsewhere (a mixin).
MODEL_BASES: FrozenSet[str] = frozenset({"Model", "Base", "DeclarativeBase", "SQLModel", "Document"})
#: Model methods the framework itself calls (a save, a form's clean, admin display): never dead code.
MODEL_HOOKS: FrozenSet[str] = frozenset({
    "save", "asave", "delete", "adelete", "clean", "clean_fields", "full_clean", "validate_unique",
    "validate_constraints", "refresh_from_db", "get_absolute_url", "natural_key", "get_deferred_fields",
    "from_db", "check", "before_save", "after_save", "pre_save", "post_save",
})
#: Column types by what arithmetic means on them: ``F("n") + 1`` fits a number; text and JSON need a
#: conditional UPDATE, a row lock, or SQL that changes one part (``jsonb_set``, ``||``, ``array_append``).
#: Django field classes, SQLAlchemy types, and the Python types of ``Mapped[...]`` annotations.
NUMBER_COLUMN_TYPES: FrozenSet[str] = frozenset({
    "IntegerField", "BigIntegerField", "SmallIntegerField", "PositiveIntegerField", "PositiveBigIntegerField",
    "PositiveSmallIntegerField", "FloatField", "DecimalField", "DurationField",
    "Integer", "BigInteger", "SmallInteger", "Float", "Numeric", "DECIMAL", "REAL", "Interval",
    "int", "float", "Decimal",
})
TEXT_COLUMN_TYPES: FrozenSet[str] = frozenset({
    "CharField", "TextField", "SlugField", "EmailField", "URLField", "FilePathField",
    "String", "Text", "Unicode", "UnicodeText", "VARCHAR", "CHAR", "TEXT", "str",
})
JSON_COLUMN_TYPES: FrozenSet[str] = frozenset({
    "JSONField", "ArrayField", "HStoreField", "JSON", "JSONB", "ARRAY", "PickleType", "MutableDict", "MutableList",
    "dict", "list", "Dict", "List",
})

# -- set-based ORM statements (one DELETE/UPDATE ... WHERE) ------------------------------------------------
#: Methods that turn a shaped query into a construct for another statement (a subquery, a CTE, an EXISTS),
#: sending nothing themselves (SQLAlchemy ``Query`` and ``Select``).
QUERY_COMPOSERS: FrozenSet[str] = frozenset({
    "subquery", "cte", "scalar_subquery", "as_scalar", "exists", "alias", "label", "statement",
})
#: Terminal methods of a queryset or a legacy Query that run one DELETE or UPDATE over the rows it matches.
SET_STATEMENT_RUNS: FrozenSet[str] = frozenset({"delete", "adelete", "update", "aupdate", "_raw_delete"})
#: Runs that take the database alias as their argument (Django's ``QuerySet._raw_delete(using)``: one DELETE of
#: the matched rows, without signals or cascades in Python).
SET_STATEMENT_RUNS_WITH_ALIAS: FrozenSet[str] = frozenset({"_raw_delete"})
#: Methods that narrow the matched rows.  A set-based statement has at least one.
SET_STATEMENT_FILTERS: FrozenSet[str] = frozenset({"filter", "filter_by", "where", "exclude"})
#: Methods between the manager and the run that shape the query without running it.
SET_STATEMENT_SHAPERS: FrozenSet[str] = frozenset({
    *SET_STATEMENT_FILTERS, "all", "only", "defer", "select_related", "prefetch_related", "order_by", "using",
    "distinct", "annotate", "alias", "join", "outerjoin", "options", "execution_options", "query",
})

# -- ORMs whose model classes load rows themselves (Peewee, Tortoise ORM) ----------------------------------------
#: Class methods of a model that load one row, per ORM: ``Card.get_or_none(Card.code == c)``, ``await Order.get(id=i)``.
MODEL_CLASS_LOADERS: Dict[str, FrozenSet[str]] = {
    "peewee": frozenset({"get", "get_or_none", "get_by_id"}),
    "tortoise": frozenset({"get", "get_or_none"}),
}
#: Links of such a chain that lock the row it loads (``Card.select().where(...).for_update().get()``,
#: ``await Order.select_for_update().get(id=i)``).
MODEL_CLASS_ROW_LOCKS: FrozenSet[str] = frozenset({"for_update", "select_for_update"})
