"""Session-level advisory locks taken and released through the project's own functions and methods.

``db.try_advisory_lock(KEY)`` ... ``db.advisory_unlock(KEY)``, where the project's ``Database`` class runs
``SELECT pg_try_advisory_lock(%s)`` in one method and ``SELECT pg_advisory_unlock(%s)`` in another, is to the
function calling them a lock and its release, as if it sent the SQL itself.  ``helper_role`` reads a call so:
the defs it runs are found as every rule finds them (``summaries.resolve``: a function of this module or an
imported one, a method of a typed parameter, of a module-level or imported instance, of ``self.db`` set in
``__init__``), and a def that only calls such a helper (two deep) plays its part too.  A def that both takes and
releases, or a generator (a context manager: its ``with`` block is the locked section), is no half of a pair.

``release_guaranteed`` answers the question the pair raises: can an exception between the lock and the
release skip the release?  Not when the release runs from a ``finally:``, from an ``except`` that catches
everything and raises again, or from an exit stack's callback.

``helper_words`` names the project's lock and release helpers, for the prefilter: a module that calls
``db.try_advisory_lock`` need not spell "advisory" at all (``locks.acquire(conn)``).
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple

from ..analysis.executed_sql import executed_sql
from ..analysis.facts import (FunctionNode, ModuleFacts, ancestors, in_handler, is_generator, parent, position,
                              statement_list, walk, walk_no_nested_functions)
from ..analysis.names import dotted
from ..config import Config
from . import index as project
from .db_handles import ProjectHandles

LOCK = "lock"
UNLOCK = "unlock"
_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
#: Helpers followed below the call: the def it runs, and one that def calls.
_DEPTH = 2
#: Files read for the prefilter's names, at most: a project with more lock helpers than this names them in
#: the files read first.
_MAX_FILES = 40
#: Exception classes whose handler, ending in ``raise``, runs for every exception the work can raise.
_CATCH_ALL = frozenset({"Exception", "BaseException", "builtins.Exception", "builtins.BaseException"})


@dataclass(frozen=True)
class HelperRole:
    kind: str  # LOCK or UNLOCK
    advisory: str  # the advisory function sent (``pg_try_advisory_lock``)
    try_lock: bool
    helper: FunctionNode  # the def the call runs
    facts: ModuleFacts  # its module
    sql_call: ast.Call  # where the SQL is sent (in ``helper`` or a def it calls)
    sql_facts: ModuleFacts


def _own_sql(facts: ModuleFacts) -> Dict[int, List[Tuple[str, str, bool, ast.Call]]]:
    """id(def) -> the session-level advisory functions its own body sends: (kind, name, try-lock, call)."""

    def build(_facts: ModuleFacts) -> Dict[int, List[Tuple[str, str, bool, ast.Call]]]:
        table: Dict[int, List[Tuple[str, str, bool, ast.Call]]] = {}
        for executed in executed_sql(facts):
            function = facts.enclosing_function(executed.call)
            if function is None:
                continue
            handle = ProjectHandles.of_module(facts).of(executed.receiver) if executed.sql.advisory else None
            if handle is not None and handle.pooled:
                continue  # a pool or a Session: lock and unlock may land on two connections (OG101's question)
            for advisory in executed.sql.advisory:
                found = advisory.function
                if found.session:
                    table.setdefault(id(function), []).append(
                        (UNLOCK if found.unlock else LOCK, found.name, found.try_lock, executed.call))
        return table

    return facts.cached("advisory_helpers:own-sql", build)


def helper_role(call: ast.Call, facts: ModuleFacts, function: Optional[FunctionNode],
                depth: int = _DEPTH) -> Optional[HelperRole]:
    """What ``call`` does with a session-level advisory lock when it runs a project def that only takes one
    (LOCK) or only releases one (UNLOCK); None otherwise."""
    from .summaries import resolve

    for target, target_facts in resolve(call, facts, function, by_name=False) or _imported_instance_method(call, facts):
        if not isinstance(target, _FUNCTION_TYPES) or is_generator(target):
            continue
        role = role_of(target, target_facts, depth)
        if role is not None:
            return role
    return None


def _imported_instance_method(call: ast.Call, facts: ModuleFacts) -> List[Tuple[FunctionNode, ModuleFacts]]:
    """``store.warehouse.drop_job_lock(K)`` with ``warehouse = Warehouse(...)`` at the top of ``depot.store``:
    the method of the class of an instance another module makes, reached through that module."""
    from .declared_types import class_of

    func = call.func
    if not (facts.context.cross_file and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute)):
        return []
    qualified = facts.qualify(func.value) or ""
    if "." not in qualified:
        return []
    found = project.find_assignment(qualified, facts.config, project.roots_for(facts))
    value = found[0] if found is not None else None
    if not isinstance(value, ast.Call):
        return []
    owner = class_of(value.func, found[1])
    if owner is None:
        return []
    return [(statement, owner[1]) for statement in owner[0].body
            if isinstance(statement, _FUNCTION_TYPES) and statement.name == func.attr]


def role_of(target: FunctionNode, facts: ModuleFacts, depth: int = _DEPTH,
            names: Optional[frozenset] = None) -> Optional[HelperRole]:
    """A def's part in a lock and release pair its callers make, from the SQL it sends, else (``depth`` above
    one) from the helpers it calls by one of ``names`` (by default the names of helpers its module may call)."""
    own = _own_sql(facts).get(id(target), [])
    if own:
        if len({kind for kind, _, _, _ in own}) != 1:
            return None  # takes and releases: a whole locked section of its own, judged where it is
        kind, name, try_lock, sql_call = own[0]
        return HelperRole(kind, name, try_lock, target, facts, sql_call, facts)
    if depth <= 1:
        return None
    names = helper_names(facts) if names is None else names
    found = [role for node in walk_no_nested_functions(target) if isinstance(node, ast.Call)
             and called_name(node) in names
             for role in [helper_role(node, facts, target, depth - 1)] if role is not None]
    if not found or len({role.kind for role in found}) != 1:
        return None
    inner = found[0]
    return HelperRole(inner.kind, inner.advisory, inner.try_lock, target, facts, inner.sql_call, inner.sql_facts)


def called_name(call: ast.Call) -> Optional[str]:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


# -- is the release guaranteed -----------------------------------------------------------------------------


def release_guaranteed(lock: ast.AST, releases: List[ast.AST], scope: ast.AST, facts: ModuleFacts) -> bool:
    """Whether one of ``releases`` (calls in ``scope`` after ``lock``) runs however the work between them ends:
    from a ``finally:``; from an ``except`` that catches everything and raises again, the success path
    releasing too; handed to an exit stack (``stack.callback(db.advisory_unlock, KEY)``); or after work that
    cannot raise past it (every statement between that calls anything is a ``try`` whose handlers catch
    everything and swallow it)."""
    for node in releases:
        if ModuleFacts.in_finally(node, scope) or _exit_callback(node):
            return True
        if _in_reraising_handler(node, scope, facts) and any(
                other is not node and not in_handler(other, scope) for other in releases):
            return True
    return any(_shielded(lock, node, scope, facts) for node in releases if not in_handler(node, scope))


def _catches_all(handler: ast.ExceptHandler, facts: ModuleFacts) -> bool:
    caught = handler.type
    if caught is None:
        return True
    names = list(caught.elts) if isinstance(caught, ast.Tuple) else [caught]
    return any((facts.qualify(n) or "") in _CATCH_ALL or (isinstance(n, ast.Name) and n.id in _CATCH_ALL)
               for n in names)


def _in_reraising_handler(node: ast.AST, scope: ast.AST, facts: ModuleFacts) -> bool:
    child = node
    for above in ancestors(node):
        if above is scope:
            return False
        if isinstance(above, ast.ExceptHandler) and any(child is s for s in above.body):
            last = above.body[-1]
            return (_catches_all(above, facts) and isinstance(last, ast.Raise)
                    and position(child) < position(last))
        child = above
    return False


def _exit_callback(node: ast.AST) -> bool:
    """``stack.callback(release, ...)`` / ``stack.push_async_callback(...)``: the exit stack runs it on the way
    out, exception or not."""
    above = parent(node)
    return (isinstance(above, ast.Call) and isinstance(above.func, ast.Attribute)
            and above.func.attr in _EXIT_CALLBACKS and bool(above.args) and above.args[0] is node)


_EXIT_CALLBACKS = ("callback", "push_async_callback")


def exit_callbacks(scope: FunctionNode) -> List[ast.AST]:
    """The references ``scope`` hands to an exit stack to run on the way out."""
    return [node.args[0] for node in walk_no_nested_functions(scope)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in _EXIT_CALLBACKS and node.args and isinstance(node.args[0], (ast.Name, ast.Attribute))]




def _shielded(lock: ast.AST, release: ast.AST, scope: ast.AST, facts: ModuleFacts) -> bool:
    """No exception can pass from the lock to ``release``: in the block that holds both, each statement
    between them that calls anything is a ``try`` whose handlers catch everything and do not raise."""
    lock_chain = [a for a in ancestors(lock) if isinstance(a, ast.stmt)]
    for statement in [a for a in ancestors(release) if isinstance(a, ast.stmt)]:
        if statement is scope:
            return False
        block = statement_list(statement)
        if block is None:
            continue
        top = next((s for s in lock_chain if any(s is b for b in block)), None)
        if top is None:
            continue
        start = next(i for i, s in enumerate(block) if s is top)
        end = next(i for i, s in enumerate(block) if s is statement)
        return start < end and all(_cannot_raise_out(s, facts) for s in block[start + 1:end])
    return False


#: What can raise: a call, an await, a raise, and a yield -- a generator's consumer throws its own exception in
#: there (the body of ``with`` over a ``@contextmanager`` raises at the ``yield``).
_MAY_RAISE = (ast.Call, ast.Await, ast.Raise, ast.Yield, ast.YieldFrom)


def _cannot_raise_out(statement: ast.stmt, facts: ModuleFacts) -> bool:
    if not any(isinstance(n, _MAY_RAISE) for n in walk(statement)):
        return True
    if not isinstance(statement, ast.Try) or not any(_catches_all(h, facts) for h in statement.handlers):
        return False
    return not any(isinstance(n, _MAY_RAISE) for part in (statement.orelse, statement.finalbody)
                   for s in part for n in walk(s)) and not any(
        isinstance(n, ast.Raise) for h in statement.handlers for n in walk(h))


# -- pairs made of helper calls --------------------------------------------------------------------------


@dataclass(frozen=True)
class HelperPair:
    scope: FunctionNode
    lock: ast.Call  # the call taking the lock (through a helper)
    role: HelperRole
    releases: Tuple[ast.AST, ...]  # calls after it releasing it (through a helper or by SQL), or references
    release_roles: Tuple[Optional[HelperRole], ...]  # each release's helper, None for SQL sent here


def helper_pairs(facts: ModuleFacts) -> List[HelperPair]:
    """Each function of the module that takes a session-level lock through a project helper and releases it
    after, through a helper or by its own SQL: the lock call and the releases."""

    def build(_facts: ModuleFacts) -> List[HelperPair]:
        by_scope: Dict[int, List[ast.Call]] = {}
        scopes: Dict[int, FunctionNode] = {}
        for call in facts.calls_named(*helper_names(facts)):
            scope = facts.enclosing_function(call)
            if scope is not None and called_name(call) is not None:
                by_scope.setdefault(id(scope), []).append(call)
                scopes[id(scope)] = scope
        found: List[HelperPair] = []
        for key, calls in by_scope.items():
            scope = scopes[key]
            calls.sort(key=position)
            roles = [(call, helper_role(call, facts, scope)) for call in calls]
            locks = [(call, role) for call, role in roles if role is not None and role.kind == LOCK]
            if not locks:
                continue
            releases: List[Tuple[ast.AST, Optional[HelperRole]]] = [
                (call, role) for call, role in roles if role is not None and role.kind == UNLOCK]
            releases += [(call, None) for kind, _, _, call in _own_sql(facts).get(id(scope), []) if kind == UNLOCK]
            for reference in exit_callbacks(scope):
                made = ast.Call(func=reference, args=[], keywords=[])
                role = helper_role(made, facts, scope)
                if role is not None and role.kind == UNLOCK:
                    releases.append((reference, role))
            for lock, role in locks:
                after = [(r, h) for r, h in releases if position(r) > position(lock) and _same_holder(lock, r, facts)]
                if after:
                    found.append(HelperPair(scope, lock, role, tuple(r for r, _ in after), tuple(h for _, h in after)))
        return found

    return facts.cached("advisory_helpers:pairs", build)


def _same_holder(lock: ast.Call, release: ast.AST, facts: ModuleFacts) -> bool:
    """``db.try_advisory_lock`` and ``db.advisory_unlock``: methods of one object; a module's functions, or a
    release by SQL, are not told apart."""
    def holder(node: ast.AST) -> Optional[str]:
        func = node.func if isinstance(node, ast.Call) else node
        if not isinstance(func, ast.Attribute):
            return None
        text = dotted(func.value)
        if text is None or facts.imports.is_module(text.split(".")[0]):
            return None
        return text

    mine, theirs = holder(lock), holder(release)
    if isinstance(release, ast.Call) and _own_sql_call(release, facts):
        return True
    return mine is None or theirs is None or mine == theirs


def _own_sql_call(call: ast.Call, facts: ModuleFacts) -> bool:
    function = facts.enclosing_function(call)
    return function is not None and any(c is call for _, _, _, c in _own_sql(facts).get(id(function), []))


# -- the prefilter's names -------------------------------------------------------------------------------

#: The spelling of a session-level lock or unlock function, which a file sending one must hold.
_SESSION_SQL = re.compile(rb"pg_(?:try_)?advisory_(?:un)?lock")
_words_by_root: Dict[str, Tuple[bytes, ...]] = {}
project.on_clear(_words_by_root.clear)


def advisory_sending_modules(config: Config, root: str, sql: "re.Pattern[bytes]") -> Iterator[ModuleFacts]:
    """The deployed modules of the project (``_MAX_FILES`` at most) whose text names advisory locks and spells
    ``sql``: where a helper that takes such a lock for its callers can be."""
    sending = [path for path in project.files_mentioning("advisory", root) if sql.search(project.read_bytes(path))]
    for path in sending[:_MAX_FILES]:
        facts = project.module_facts(path, config)
        if facts is not None and not facts.context.is_test:
            yield facts


def helper_words(config: Config, root: str = "") -> Tuple[bytes, ...]:
    """Names of the project's defs that take or release a session-level advisory lock in their own body."""
    root = root or config.root or ""
    if not root:
        return ()
    cached = _words_by_root.get(root)
    if cached is None:
        words = set()
        for facts in advisory_sending_modules(config, root, _SESSION_SQL):
            for function in facts.functions:
                own = _own_sql(facts).get(id(function), [])
                if own and len({kind for kind, _, _, _ in own}) == 1 and not is_generator(function):
                    words.add(function.name)
        # One level up: defs that only call those (``def hold(self): return self.db.take_job_lock(self.key)``).
        first = frozenset(words)
        paths: List[str] = []
        for name in sorted(first):
            paths.extend(p for p in project.files_mentioning(name, root) if p not in paths)
        for path in paths[:_MAX_FILES]:
            facts = project.module_facts(path, config)
            if facts is None or facts.context.is_test:
                continue
            for function in facts.functions:
                if function.name in words or is_generator(function):
                    continue
                calls = any(isinstance(n, ast.Call) and called_name(n) in first
                            for n in walk_no_nested_functions(function))
                if calls and role_of(function, facts, _DEPTH, first) is not None:
                    words.add(function.name)
        cached = _words_by_root[root] = tuple(sorted(word.encode() for word in words))
    return cached


def helper_names(facts: ModuleFacts) -> frozenset:
    """The names a call of this module may run a lock or release helper by: the project's (CLI) and this
    module's own defs, with the defs of this module that call one of them."""

    def build(_facts: ModuleFacts) -> frozenset:
        names = {word.decode() for word in helper_words(facts.config, project.search_root(facts))} \
            if facts.context.cross_file else set()
        names.update(f.name for f in facts.functions if f.name not in names and _own_sql(facts).get(id(f))
                     and not is_generator(f))
        # one level up, in this module: ``def take(self): return self.db.try_advisory_lock(KEY)``
        for call in list(facts.calls_named(*names)):
            function = facts.enclosing_function(call)
            if function is not None:
                names.add(function.name)
        return frozenset(names)

    return facts.cached("advisory_helpers:names", build)
