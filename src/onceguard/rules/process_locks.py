"""OG606: a lock that lives in one process, held around a read-then-write of state every replica shares.

``threading.Lock``, ``asyncio.Lock`` and ``multiprocessing.Lock`` exclude the threads or coroutines of one
process (a ``multiprocessing`` lock, the processes forked from one parent).  Made at module level, in a class
body or on a long-lived instance, they serialise that process's own callers; the other worker processes and
the other replicas each hold their own copy.  The rule reports a ``with lock:`` block whose work reads shared
state (rows, a file) and then writes it (rows, a file, mail, an outbound call): a check-then-act or a
read-modify-write that the lock appears to make atomic and does not, once two processes run it.

Silent on purpose: a lock around in-process state only (lazy construction of a registry, a per-process
cache refresh, even one that fetches over HTTP), a block that only writes or only reads, and a block whose
work is one call the analysis cannot see into (it may be guarded by a constraint; when in doubt, silent).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple

from ..project import process_state as state
from ..analysis.executed_sql import executed_sql
from ..analysis.facts import FunctionNode, ModuleFacts, ancestors, walk_no_nested_functions
from ..analysis.handed import switched_on
from ..analysis.names import dotted
from ..knowledge import orm, process_state as known
from ..knowledge.effects import LEAVING_CALLS
from ..model import Diagnostic, Fix, Related
from ..project.prefilter_words import lock_class_words, lock_helper_words
from ..project.reach import Reach
from ..project.summaries import resolve
from ..project.unique_fields import model_class
from .base import Rule
from .data_races.changes import committed_by_block
from .data_races.loads import Loaded, _session_matches, sa_source
from .registry import register

STEP_DEPTH = 3  # calls followed from the locked block into project functions

READ, WRITE = "read", "write"
#: A step that makes the database serialise the work itself (rows read ``FOR UPDATE``, a transaction-level
#: advisory lock): the process lock around it is then not what keeps two replicas apart.
SERIALISED = "serialised"


@dataclass(frozen=True)
class SharedStep:
    kind: str  # READ or WRITE
    what: str  # "reads the file", "writes rows"
    call: ast.AST
    facts: ModuleFacts


def _sql_kind(call: ast.Call, facts: ModuleFacts) -> Optional[str]:
    entries = facts.cached("process_locks.sql", lambda f: {id(e.call): e for e in executed_sql(f)})
    entry = entries.get(id(call))
    if entry is None:
        return None
    text = " ".join(entry.text.upper().split())
    if any(words in text for words in known.SQL_SERIALISING_WORDS):
        return SERIALISED
    return WRITE if text.startswith(known.SQL_WRITE_WORDS) else READ


def _open_mode(call: ast.Call) -> Optional[str]:
    mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
    if mode is None:
        return "r"
    return mode.value if isinstance(mode, ast.Constant) and isinstance(mode.value, str) else None


def _session_receiver(receiver: ast.AST, scope: Optional[FunctionNode]) -> bool:
    """The receiver also commits or runs statements in this function: a session or connection, not a set."""
    text = dotted(receiver)
    if not text or scope is None:
        return False
    for n in walk_no_nested_functions(scope):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                and n.func.attr in known.SESSION_PROOF_METHODS and dotted(n.func.value) == text:
            return True
        # ``async with sessions.begin() as session:``: a transaction's session, committed when the block ends
        if isinstance(n, ast.withitem) and isinstance(n.optional_vars, ast.Name) and n.optional_vars.id == text \
                and isinstance(n.context_expr, ast.Call) and isinstance(n.context_expr.func, ast.Attribute) \
                and n.context_expr.func.attr in ("begin", "begin_nested"):
            return True
    return False


def shared_step(call: ast.Call, facts: ModuleFacts, scope: Optional[FunctionNode]) -> Optional[Tuple[str, str]]:
    """Whether a call reads or writes state outside the process that other replicas share, and how."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in known.ROW_LOCKING_METHODS:
        return SERIALISED, f"locks the rows it reads (`.{func.attr}()`)"
    if switched_on(call, orm.SA_ROW_LOCK_KEYWORD):
        return SERIALISED, f"locks the rows it reads (`{orm.SA_ROW_LOCK_KEYWORD}=`)"
    sql = _sql_kind(call, facts)
    if sql is not None:
        return sql, ("runs an SQL write" if sql == WRITE else "runs an SQL query")
    loaded = sa_source(call, facts, many=False) or sa_source(call, facts, many=True)
    if loaded is not None:
        if loaded.locked:
            return SERIALISED, "locks the rows it reads (`with_for_update`)"
        return READ, f"reads rows of `{loaded.model}`"
    qualified = facts.callee(call) or ""
    method = func.attr if isinstance(func, ast.Attribute) else ""
    if qualified in ("open", "io.open") or method == "open":
        mode = _open_mode(call)
        if mode is None:
            return None
        return (WRITE, "opens a file for writing") if any(m in mode for m in known.WRITE_MODES) else (READ, "reads a file")
    if qualified in known.FILE_READ_CALLS or method in ("read_text", "read_bytes"):
        return READ, "reads a file"
    if qualified in known.FILE_WRITE_CALLS or method in ("write_text", "write_bytes"):
        return WRITE, "writes a file"
    if qualified.startswith(known.OUTBOUND_MODULES):
        return WRITE, "sends mail"
    if qualified.startswith(known.HTTP_CLIENT_MODULES) and method in known.OUTBOUND_HTTP_METHODS:
        return WRITE, f"sends an HTTP {method.upper()}"
    if not isinstance(func, ast.Attribute):
        return None
    receiver = func.value
    receiver_text = dotted(receiver) or ""
    if receiver_text.endswith(".objects") or (isinstance(receiver, ast.Call) and _is_manager_chain(receiver)):
        if method in known.DATABASE_WRITE_METHODS or method in known.MODEL_CREATE_METHODS \
                or method in ("update", "delete"):
            return WRITE, f"writes rows (`.{method}()`)"
        if method in known.DATABASE_READ_METHODS or method == "get":
            return READ, f"reads rows (`.{method}()`)"
    if method == "save" and not call.args:
        return WRITE, "saves a row (`.save()`)"
    if method in known.MODEL_CREATE_METHODS and isinstance(receiver, (ast.Name, ast.Attribute)) \
            and _is_model(receiver, facts):
        return WRITE, f"writes rows (`{receiver_text}.{method}()`)"
    if method in ("add", "add_all", "merge", "delete", "commit") and _session_receiver(receiver, scope):
        return WRITE, f"writes rows (`{receiver_text}.{method}()`)"
    if method in ("first", "one", "one_or_none", "scalar_one", "scalar_one_or_none", "count", "exists", "all") \
            and isinstance(receiver, ast.Call):
        return READ, f"reads rows (`.{method}()`)"
    if method in ("scalar", "scalars", "get") and _session_receiver(receiver, scope):
        return READ, f"reads rows (`{receiver_text}.{method}()`)"
    return None


def _writes_back(loaded: Loaded, change: ast.AST, scope: Optional[FunctionNode]) -> bool:
    """The session an instance was loaded through writes ``change`` back: the change is inside that session's
    ``begin()`` block (as OG301 reads it), or the function commits or flushes the session."""
    if committed_by_block(change, loaded) is not None:
        return True
    return scope is not None and any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in orm.SA_FLUSH
        and _session_matches(loaded.session, node.func.value) for node in walk_no_nested_functions(scope))


def _is_model(expr: ast.AST, facts: ModuleFacts) -> bool:
    """``expr`` names a model class of the project: a class one of whose bases is an ORM's ``Model``
    (Tortoise's ``Model.create`` is a class method)."""
    cls = model_class(expr, facts)
    return cls is not None and any((dotted(base) or "").rsplit(".", 1)[-1] == "Model" for base in cls.bases)


def _is_manager_chain(call: ast.Call) -> bool:
    node: ast.AST = call
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        node = node.func.value
    return (dotted(node) or "").endswith(".objects")


class SharedSteps:
    """The shared reads and writes a block does, in order, following project functions it calls."""

    def __init__(self) -> None:
        self._memo: dict = {}

    def of_statements(self, statements: List[ast.stmt], facts: ModuleFacts, scope: Optional[FunctionNode],
                      depth: int) -> List[SharedStep]:
        steps: List[SharedStep] = []
        #: names bound here to an ORM instance, with where it was loaded
        loaded_as: Dict[str, Loaded] = {}
        #: per step, the handler that leaves the function it stands in (None outside one)
        handlers: List[Optional[ast.ExceptHandler]] = []
        for statement in statements:
            for node in walk_no_nested_functions(statement):
                if isinstance(node, ast.Call):
                    found = self._of_call(node, facts, scope, depth)
                    steps.extend(found)
                    if found:
                        handler = _leaving_handler(node, facts)
                        handlers.extend([handler] * len(found))
                elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target = node.targets[0]
                    if isinstance(target, ast.Name):
                        loaded = sa_source(node.value, facts, many=False)
                        if loaded is not None:
                            loaded_as[target.id] = loaded
                        else:
                            loaded_as.pop(target.id, None)
                    elif (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                          and target.value.id in loaded_as and _writes_back(loaded_as[target.value.id], node, scope)):
                        steps.append(SharedStep(
                            WRITE, f"changes the row it read (`{target.value.id}.{target.attr} = ...`)", node, facts))
                        handlers.append(_leaving_handler(node, facts))
        return _within_leaving_handlers(steps, handlers)

    def _of_call(self, call: ast.Call, facts: ModuleFacts, scope: Optional[FunctionNode], depth: int) -> List[SharedStep]:
        found = shared_step(call, facts, scope)
        if found is not None:
            return [SharedStep(found[0], found[1], call, facts)]
        if depth <= 0:
            return []
        targets = resolve(call, facts, scope, by_name=False)
        if len(targets) != 1:
            return []
        function, where = targets[0]
        if where.context.is_test:
            return []
        key = id(function)
        if key not in self._memo:
            self._memo[key] = []  # recursion guard
            self._memo[key] = self.of_statements(list(function.body), where, function, depth - 1)
        return self._memo[key]


def _leaving_handler(node: ast.AST, facts: ModuleFacts) -> Optional[ast.ExceptHandler]:
    """The innermost ``except`` handler around ``node`` (in its function) whose every path leaves the function:
    what it reads is followed only by what it does itself before it leaves."""
    for above in ancestors(node):
        if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return None
        if isinstance(above, ast.ExceptHandler):
            return above if _always_leaves(above.body, facts) else None
    return None


def _always_leaves(body: List[ast.stmt], facts: ModuleFacts) -> bool:
    """Every path through ``body`` ends in a ``return`` or ``raise``, or in a call that never returns
    (``abort(409, ...)``)."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return _always_leaves(last.body, facts) and _always_leaves(last.orelse, facts)
    if isinstance(last, (ast.With, ast.AsyncWith)):
        return _always_leaves(last.body, facts)
    return isinstance(last, ast.Expr) and isinstance(last.value, ast.Call) \
        and (facts.callee(last.value) or "") in LEAVING_CALLS


def _within_leaving_handlers(steps: List[SharedStep], handlers: List[Optional[ast.ExceptHandler]]) -> List[SharedStep]:
    """``steps`` without the reads of a handler that leaves the function and writes nothing after them: no write
    of the rest of the work follows such a read (``except IntegrityError: conflict = lookup(...); abort(409)``
    after a failed insert reads the row that won, and the caller's commit never runs after it)."""
    kept = []
    for index, (step, handler) in enumerate(zip(steps, handlers)):
        if step.kind == READ and handler is not None and not any(
                later.kind == WRITE and handlers[index + 1 + offset] is handler
                for offset, later in enumerate(steps[index + 1:])):
            continue
        kept.append(step)
    return kept


def read_then_write(steps: List[SharedStep]) -> Optional[Tuple[SharedStep, SharedStep]]:
    """The first shared write that follows a shared read."""
    first_read = next((s for s in steps if s.kind == READ), None)
    if first_read is None:
        return None
    after = steps[steps.index(first_read) + 1:]
    write = next((s for s in after if s.kind == WRITE), None)
    return (first_read, write) if write is not None else None


def _lock_binding(expr: ast.AST, facts: ModuleFacts,
                  through_helper: bool = True) -> Optional[Tuple[state.Binding, str]]:
    """The process-wide binding of the lock ``expr`` enters, with the lock's constructor: a lock bound by name
    (``_lock``, ``self._lock``), or one kept per key in a process-wide container (``_locks[wallet_id]``), also as
    a function of the project returns it (``account_lock(account_id)`` returning ``_locks[account_id]``)."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "acquire":
        expr = expr.func.value
    if isinstance(expr, ast.Call) and through_helper:
        for function, where in resolve(expr, facts, facts.enclosing_function(expr), by_name=False):
            for node in walk_no_nested_functions(function):
                if isinstance(node, ast.Return) and node.value is not None:
                    found = _lock_binding(node.value, where, through_helper=False) or (
                        _kept_local_lock(node.value, function, where) if isinstance(node.value, ast.Name) else None)
                    if found is not None:
                        return found
        return None
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, (ast.Name, ast.Attribute)):
        container = state.binding_of(expr.value, facts)
        kind = _lock_kept_in(container) if container is not None else None
        return (container, kind) if kind is not None else None
    if not isinstance(expr, (ast.Name, ast.Attribute)):
        return None
    binding = state.binding_of(expr, facts)
    kind = state.constructed(binding.value, binding.facts) if binding is not None else None
    if kind not in known.PROCESS_LOCK_CONSTRUCTORS:
        return None
    return binding, kind


def _kept_local_lock(name: ast.Name, function: FunctionNode,
                     facts: ModuleFacts) -> Optional[Tuple[state.Binding, str]]:
    """``lock = self._locks.get(key)`` … ``lock = asyncio.Lock(); self._locks[key] = lock`` … ``return lock``: the
    returned local is a lock the function makes and keeps per key in a container that outlives the call (one
    lock per key and process, as ``_lock_kept_in`` reads a container filled where it is declared)."""
    made = None
    kept_in = None
    for node in walk_no_nested_functions(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id == name.id:
                kind = state.constructed(node.value, facts)
                if kind in known.PROCESS_LOCK_CONSTRUCTORS:
                    made = kind
            elif isinstance(target, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == name.id \
                    and isinstance(target.value, (ast.Name, ast.Attribute)):
                kept_in = target.value
    if made is None or kept_in is None:
        return None
    container = state.binding_of(kept_in, facts)
    return (container, made) if container is not None else None


def _lock_kept_in(container: state.Binding) -> Optional[str]:
    """The lock constructor a process-wide container holds one of per key: ``defaultdict(asyncio.Lock)``,
    ``locks: dict[str, asyncio.Lock] = {}``, or what its module stores in it (``locks[k] = asyncio.Lock()``,
    ``locks.setdefault(k, threading.Lock())``).  Each process fills its own container with its own locks."""
    facts = container.facts
    value = container.value
    if isinstance(value, ast.Call) and value.args and (facts.qualify(value.func) or "").endswith("defaultdict"):
        made = facts.qualify(value.args[0]) or ""
        if made in known.PROCESS_LOCK_CONSTRUCTORS:
            return made
    statement = container.statement
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.annotation, ast.Subscript):
        held = statement.annotation.slice
        for element in (held.elts[-1:] if isinstance(held, ast.Tuple) else [held]):
            made = facts.qualify(element) or ""
            if made in known.PROCESS_LOCK_CONSTRUCTORS:
                return made
    for node in facts.nodes:
        stored = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript) \
                and dotted(node.targets[0].value) == container.name:
            stored = node.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "setdefault"
              and dotted(node.func.value) == container.name and len(node.args) == 2):
            stored = node.args[1]
        made = state.constructed(stored, facts) if stored is not None else None
        if made in known.PROCESS_LOCK_CONSTRUCTORS:
            return made
    return None


@register
class ProcessLocalLock(Rule):
    code = "OG606"
    name = "process-local-lock"
    summary = ("a thread, asyncio or multiprocessing lock held around a read-then-write of shared state: it "
               "excludes nothing in the other processes and replicas")
    triggers = known.LOCK_TRIGGERS
    skips_tests = True

    @staticmethod
    def project_triggers(config) -> tuple:
        """A module entering a lock a project function hands back (``async with account_lock(id):``), or one a
        method of a project class that makes locks hands back (``async with self._locks.get(key):``)."""
        return lock_helper_words(config) + lock_class_words(config)

    def check(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        context = facts.context
        if context.is_test or context.is_migration:
            return
        reach: Optional[Reach] = None
        steps = SharedSteps()
        for block in facts.withs:
            for item in block.items:
                found = _lock_binding(item.context_expr, facts)
                if found is None:
                    continue
                binding, kind = found
                reach = reach or Reach.of_module(facts)
                if reach.module_is_one_off or reach.operator_reason(block) is not None:
                    continue  # a script or a command: one process by construction
                scope = facts.enclosing_function(block)
                done = steps.of_statements(list(block.body), facts, scope, STEP_DEPTH)
                pair = read_then_write(done)
                if pair is None or any(step.kind == SERIALISED for step in done):
                    continue
                read, write = pair
                related = [Related(binding.facts.context.path, binding.line, 1,
                                   f"`{binding.name}` is made here: one `{kind}` per process"),
                           _place(read, "reads shared state"), _place(write, "then writes it")]
                yield self.finding(
                    item.context_expr,
                    f"`{dotted(item.context_expr) or binding.name}` (`{kind}`) only excludes callers in this "
                    "process, so another replica runs the same read-then-write at once and one update overwrites "
                    "the other.",
                    f"The work it guards {read.what} and then {write.what}, and every worker process and replica "
                    "takes its own copy of the lock. " + _suggestion(write),
                    fix=Fix("shared-lock-snippet", _snippet(write, scope), "display-only"),
                    related=related,
                )


def _place(step: SharedStep, message: str) -> Related:
    return Related(step.facts.context.path, getattr(step.call, "lineno", 1), getattr(step.call, "col_offset", 0) + 1,
                   message)


def _suggestion(write: SharedStep) -> str:
    if "file" in write.what:
        return ("Keep the data where the replicas can update it atomically: rows in the database (one row per "
                "item, `INSERT ... ON CONFLICT`), or a shared store with compare-and-set; if it must stay a file, "
                "take a lock every process sees (a Redis lease `SET key token NX PX ttl`, or "
                "`pg_advisory_xact_lock`) around the read and the write")
    return ("Make the database decide: a unique constraint with `INSERT ... ON CONFLICT DO NOTHING`, a conditional "
            "`UPDATE ... WHERE` checked by its row count, `SELECT ... FOR UPDATE`, or `pg_try_advisory_xact_lock` in "
            "the transaction that does the work; for work outside the database, a Redis lease (`SET key token NX "
            "PX ttl`)")


def _snippet(write: SharedStep, scope: Optional[FunctionNode]) -> str:
    """What to write instead, to copy by hand: a guard every process sees."""
    name = getattr(scope, "name", None) or "work"
    if "file" in write.what:
        return (f"replace the lock with a lease every process sees: `if not redis.set(\"lock:{name}\", token, nx=True, "
                "px=30_000): return` before the read, compare-and-delete after the write")
    return ("let the database decide: `INSERT ... ON CONFLICT DO NOTHING RETURNING id` (act only when a row comes "
            "back), or `SELECT pg_try_advisory_xact_lock(<key>)` first in the transaction")
