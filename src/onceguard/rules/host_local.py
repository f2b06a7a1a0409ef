"""OG601: a lock file in the host's temp directory used to serialize work on the shared database.

``FileLock(Path(tempfile.gettempdir()) / "x.lock")`` and ``fcntl.flock`` exclude the processes of one
host.  That is exactly right for what lives on the host (its files, its process-local caches, a
Chrome profile on its disk) and wrong for what every replica shares: each replica has its own temp
directory, takes its own copy of the lock, and runs the "serialized" database work at the same time
as the others.  The rule needs both facts: the lock file is in a host-private directory, and the
locked work writes to a database (through a handle, a session's row writes and commit, or a Django
manager), seen in the block or in the project functions it calls.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterator, List, Optional, Set, Tuple

from ..project import index as project
from ..analysis.executed_sql import bound_value
from ..analysis.facts import ModuleFacts, ancestors, parent, walk, walk_no_nested_functions
from ..project.db_handles import ProjectHandles
from ..knowledge import host_local as known
from ..model import Diagnostic, Related
from ..analysis.names import dotted
from .registry import register
from .base import Rule

_DEPTH = 2  # how many calls deep the locked work is followed for a database write


@dataclass
class LockedRegion:
    lock: ast.AST  # where the lock is made or taken: the finding's place
    kind: str  # "FileLock", "fcntl.flock", ...
    path: ast.AST  # the lock file's path expression
    statements: List[ast.stmt]  # the work done while it is held


def _callee(call: ast.Call, facts: ModuleFacts) -> str:
    return facts.callee(call) or ""


def _name_value(node: ast.AST, facts: ModuleFacts) -> Optional[ast.AST]:
    if isinstance(node, ast.Name):
        return bound_value(node, facts)
    return None


def _file_lock_call(expr: Optional[ast.AST], facts: ModuleFacts, depth: int = 2) -> Optional[ast.Call]:
    """The ``FileLock(path)`` construction an expression stands for (``lock``, ``FileLock(p).acquire()``)."""
    while isinstance(expr, ast.Await):
        expr = expr.value
    if isinstance(expr, ast.Call):
        if _callee(expr, facts) in known.FILE_LOCK_CONSTRUCTORS:
            return expr
        if isinstance(expr.func, ast.Attribute) and expr.func.attr == "acquire":
            return _file_lock_call(expr.func.value, facts, depth)
        return None
    if depth > 0 and expr is not None:
        value = _name_value(expr, facts) or _self_attribute_value(expr, facts)
        if value is not None:
            return _file_lock_call(value, facts, depth - 1)
    return None


def _self_attribute_value(expr: ast.AST, facts: ModuleFacts) -> Optional[ast.AST]:
    """``self._lock`` bound once in the class (``self._lock = FileLock(path)`` in ``__init__``)."""
    if not (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self"):
        return None
    cls_node = facts.enclosing_class(expr)
    if cls_node is None:
        return None
    values = [node.value for node in walk(cls_node)
              if isinstance(node, ast.Assign) and any(
                  isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                  and t.attr == expr.attr for t in node.targets)]
    return values[0] if len(values) == 1 else None


def _lock_path(construction: ast.Call) -> Optional[ast.AST]:
    if construction.args:
        return construction.args[0]
    for keyword in construction.keywords:
        if keyword.arg in ("lock_file", "filename", "path"):
            return keyword.value
    return None


def _rest_of_function(statement: ast.stmt) -> List[ast.stmt]:
    """The statements after ``statement`` in its block and in every enclosing block of its function."""
    rest: List[ast.stmt] = []
    node: ast.AST = statement
    while True:
        above = parent(node)
        if above is None or isinstance(above, (ast.Module, ast.ClassDef)):
            return rest
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(above, field, None)
            if isinstance(block, list) and node in block:
                rest.extend(s for s in block[block.index(node) + 1:] if isinstance(s, ast.stmt))
        if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return rest
        node = above


def _statement_of(node: ast.AST) -> Optional[ast.stmt]:
    for above in [node, *ancestors(node)]:
        if isinstance(above, ast.stmt):
            return above
    return None


def locked_regions(facts: ModuleFacts) -> List[LockedRegion]:
    regions: List[LockedRegion] = []
    seen: Set[int] = set()
    for node in walk(facts.tree):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                construction = _file_lock_call(item.context_expr, facts)
                if construction is not None and id(construction) not in seen:
                    path = _lock_path(construction)
                    if path is not None:
                        seen.add(id(construction))
                        regions.append(LockedRegion(construction, _short(_callee(construction, facts)), path,
                                                    list(node.body)))
        elif isinstance(node, ast.Call):
            target = _acquired_lock(node)
            if target is not None:
                construction = _file_lock_call(target, facts)
                statement = _statement_of(node)
                if construction is not None and statement is not None and id(construction) not in seen:
                    path = _lock_path(construction)
                    if path is not None:
                        seen.add(id(construction))
                        regions.append(LockedRegion(construction, _short(_callee(construction, facts)), path,
                                                    _rest_of_function(statement)))
            elif _callee(node, facts) in known.FLOCK_CALLS and len(node.args) >= 2:
                if any(isinstance(n, (ast.Name, ast.Attribute)) and (dotted(n) or "").split(".")[-1]
                       in known.UNLOCK_FLAGS for n in walk(node.args[1])):
                    continue
                path = _descriptor_path(node.args[0], facts)
                statement = _statement_of(node)
                if path is not None and statement is not None:
                    regions.append(LockedRegion(node, _callee(node, facts), path, _rest_of_function(statement)))
    return regions


def _short(qualified: str) -> str:
    return qualified.rsplit(".", 1)[-1]


def _acquired_lock(call: ast.Call) -> Optional[ast.AST]:
    """``lock.acquire(...)`` or ``asyncio.to_thread(lock.acquire, ...)``: the lock expression."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "acquire":
        holder = parent(call)
        if isinstance(holder, ast.withitem):
            return None  # ``with FileLock(p).acquire():`` is read as a ``with`` block
        return func.value
    for argument in call.args[:1]:
        if isinstance(argument, ast.Attribute) and argument.attr == "acquire":
            return argument.value
    return None


def _descriptor_path(descriptor: ast.AST, facts: ModuleFacts, depth: int = 2) -> Optional[ast.AST]:
    """The path behind ``fd = os.open(path, ...)``, ``f.fileno()`` with ``f = open(path)``, ``with open(p) as f``."""
    if isinstance(descriptor, ast.Call):
        callee = _callee(descriptor, facts)
        if callee in ("os.open", "open", "io.open") and descriptor.args:
            return descriptor.args[0]
        if isinstance(descriptor.func, ast.Attribute) and descriptor.func.attr in ("fileno", "open") and depth > 0:
            if descriptor.func.attr == "open" and descriptor.args == [] and descriptor.keywords == []:
                return descriptor.func.value  # Path(...).open()
            return _descriptor_path(descriptor.func.value, facts, depth - 1)
        return None
    if isinstance(descriptor, ast.Name) and depth > 0:
        value = bound_value(descriptor, facts)
        if value is not None:
            return _descriptor_path(value, facts, depth - 1)
        for above in ancestors(descriptor):
            if isinstance(above, (ast.With, ast.AsyncWith)):
                for item in above.items:
                    if isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == descriptor.id:
                        return _descriptor_path(item.context_expr, facts, depth - 1)
    return None


def in_host_temp_dir(path: ast.AST, facts: ModuleFacts, depth: int = 3) -> bool:
    """The path is built from the host's temp directory (``tempfile.gettempdir()``, ``/tmp/...``)."""
    for node in walk(path):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            value = node.value
            if value.startswith(known.TEMP_PREFIXES) or value in known.TEMP_DIRS:
                return True
        elif isinstance(node, ast.Call) and _callee(node, facts) in known.TEMP_DIR_CALLS:
            return True
        elif isinstance(node, ast.Name) and depth > 0 and isinstance(node.ctx, ast.Load):
            value = bound_value(node, facts)
            if value is not None and value is not path and in_host_temp_dir(value, facts, depth - 1):
                return True
    return False


#: What writes to the database, and the places in other modules on the way to the write (the functions
#: called there and the write itself), in call order.
Write = Tuple[str, Tuple[Related, ...]]


class _Writes:
    """Whether statements write to a database, following project functions they call."""

    def __init__(self, facts: ModuleFacts) -> None:
        self.facts = facts
        self._memo: dict = {}

    def in_statements(self, statements: List[ast.stmt], facts: ModuleFacts, depth: int,
                      scope: Optional[ast.AST]) -> Optional[Write]:
        for statement in statements:
            for node in _walk_calls(statement):
                why = self._call_writes(node, facts, depth, scope)
                if why:
                    if facts is not self.facts and not why[1]:
                        # The write itself, in another module.
                        why = why[0], (Related(facts.context.path, node.lineno, node.col_offset + 1,
                                               f"{why[0]} writes to the database"),)
                    return why
        return None

    def _call_writes(self, call: ast.Call, facts: ModuleFacts, depth: int, scope: Optional[ast.AST]) -> Optional[Write]:
        direct = self._direct_write(call, facts, scope)
        if direct is not None:
            return direct, ()
        return self._callee_writes(call, facts, depth)

    def _direct_write(self, call: ast.Call, facts: ModuleFacts, scope: Optional[ast.AST]) -> Optional[str]:
        func = call.func
        if isinstance(func, ast.Attribute):
            method = func.attr
            receiver = func.value
            text = dotted(receiver) or ""
            handle = ProjectHandles.of_module(facts).of(receiver)
            if handle is not None and method in known.HANDLE_WRITE_METHODS:
                return f"`{text}.{method}()`"
            if handle is not None and method in known.HANDLE_SQL_METHODS and call.args and _writes_sql(call.args[0]):
                return f"`{text}.{method}()` of a write statement"
            if text.endswith(".objects") and method in known.DJANGO_MANAGER_WRITES:
                return f"`{text}.{method}()`"
            if (method in known.ROW_WRITE_METHODS and text and scope is not None
                    and _session_methods_on(text, scope)):
                return f"`{text}.{method}()` on a session"
        return None

    def _callee_writes(self, call: ast.Call, facts: ModuleFacts, depth: int) -> Optional[Write]:
        if depth <= 0:
            return None
        target = self._resolve(call, facts)
        if target is None:
            return None
        function, where = target
        key = (id(function), depth)
        if key not in self._memo:
            self._memo[key] = None  # recursion guard
            inner = self.in_statements(list(function.body), where, depth - 1, function)
            name = getattr(function, "name", "a callee")
            if inner is None:
                self._memo[key] = None
            else:
                places = inner[1]
                if where is not self.facts:
                    places = (Related(where.context.path, function.lineno, function.col_offset + 1,
                                      f"`{name}()` is defined here"),) + places
                self._memo[key] = (f"`{name}()` → {inner[0]}", places)
        return self._memo[key]

    def _resolve(self, call: ast.Call, facts: ModuleFacts) -> Optional[Tuple[ast.AST, ModuleFacts]]:
        func = call.func
        if isinstance(func, ast.Name) and not facts.imports.is_imported(func.id):
            found = facts.functions_by_name.get(func.id, [])
            return (found[0], facts) if len(found) == 1 else None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
            cls_node = facts.enclosing_class(call)
            if cls_node is not None:
                for statement in cls_node.body:
                    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == func.attr:
                        return statement, facts
            return None
        method = facts.module_method(func)
        if method is not None:
            return method, facts  # ``recorder.record(...)`` on a module-level instance of a class defined here
        if not self.facts.context.cross_file:
            return None
        qualified = facts.callee(call)
        head = (dotted(func) or "").split(".")[0]
        if not qualified or "." not in qualified or not facts.imports.is_imported(head):
            return None  # only names imported from a module can lead to another file of the project
        found = project.find_function(qualified, facts.config, project.roots_for(facts))
        if found is None or found[1].context.is_test:
            return None
        return found


def _walk_calls(statement: ast.AST) -> Iterator[ast.Call]:
    for node in walk_no_nested_functions(statement):
        if isinstance(node, ast.Call):
            yield node


def _writes_sql(argument: ast.AST) -> bool:
    for node in walk(argument):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value.lstrip().upper().startswith(known.WRITE_STATEMENTS)
    return False


def _session_methods_on(receiver: str, scope: ast.AST) -> bool:
    """The receiver of a row write also flushes, commits or runs statements: an ORM session, not a set."""
    for node in walk_no_nested_functions(scope):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in known.SESSION_ONLY_METHODS and dotted(node.func.value) == receiver):
            return True
    return False


@register
class HostLocalLock(Rule):
    code = "OG601"
    name = "host-local-lock"
    summary = "a lock file in the host's temp directory serializes database work: other replicas never see it"
    triggers = known.TRIGGERS
    skips_tests = True

    def check(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        if facts.context.is_test:
            return
        regions = locked_regions(facts)
        if not regions:
            return
        writes = _Writes(facts)
        for region in regions:
            if not in_host_temp_dir(region.path, facts):
                continue
            scope = facts.enclosing_function(region.lock)
            found = writes.in_statements(region.statements, facts, _DEPTH, scope)
            if found is None:
                continue  # host-local work (files, process caches): a host lock is the right tool
            why, places = found
            # Short: where each other module is entered, and the write; the message names every call on the way.
            places = tuple(place for number, place in enumerate(places)
                           if number + 1 == len(places) or number == 0 or places[number - 1].path != place.path)
            yield self.finding(
                region.lock,
                f"`{region.kind}` in this host's temp directory guards shared database writes ({why}), so each "
                "replica locks its own copy and they run the work at once.",
                "A lock file in the host's temp directory only excludes processes on the same host, and every "
                "replica has its own temp directory. " + _shared_lock_suggestion(scope, facts),
                related=places,
            )


def _shared_lock_suggestion(scope: object, facts: ModuleFacts) -> str:
    """A lease every replica sees first (the others skip, as a file lock with ``timeout=0`` makes them), then
    the transaction-scoped lock and work that is safe to repeat."""
    from ..project.bindings import own_module_name

    module, name = own_module_name(facts), getattr(scope, "name", None) or "job"
    asynchronous = isinstance(scope, ast.AsyncFunctionDef)
    guard = "arun_exclusive" if asynchronous else "run_exclusive"
    call = f"{'await ' if asynchronous else ''}{guard}(\"{f'{module}.{name}' if module else name}\", ttl, work)"
    return (f"Serialize it where the replicas meet: a lease, `{call}` (`from onceguard.guards import {guard}`); "
            "`pg_try_advisory_xact_lock` in the transaction that does the work (skip when false); or make the "
            "work safe to repeat (a unique constraint with `INSERT ... ON CONFLICT DO NOTHING`)")
