"""Daemon objects: a project class whose started instance runs one of its own methods in a loop that waits
between rounds (a ``threading.Thread`` subclass whose ``run`` ticks, a class whose ``start()`` or
``__aenter__`` spawns ``create_task(self._run())``).  Starting such an object is registering that loop as a
job: ``monitor.start()``, ``await monitor.start()``, ``async with Monitor(...)``,
``stack.enter_async_context(monitor)`` -- judged where it is started (start-up code)."""
from __future__ import annotations

import ast
from typing import Iterator, Optional, Tuple

from ...analysis.facts import FunctionNode, ModuleFacts, ancestors, walk_no_nested_functions
from ...analysis.names import dotted
from ...knowledge import schedulers as known
from ...model import Related
from ...project.startup import StartupMap
from ...project.summaries import _annotation_class, _class_of, _method_of, _parameter_annotation
from .jobs import Scheduled, Target

_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
_MAX_BASES = 3


def _bases(cls: ast.ClassDef, facts: ModuleFacts, depth: int = 0) -> Iterator[Tuple[ast.ClassDef, ModuleFacts]]:
    """The class and its project bases, nearest first."""
    yield cls, facts
    if depth >= _MAX_BASES:
        return
    for base in cls.bases:
        found = _class_of(base, facts)
        if found is not None:
            yield from _bases(found[0], found[1], depth + 1)


def _is_thread_class(cls: ast.ClassDef, facts: ModuleFacts) -> bool:
    return any((f.qualify(base) or "") in known.THREAD_CLASSES for c, f in _bases(cls, facts) for base in c.bases)


#: Methods that run when an object is made or started: a loop it spawns from any of them runs once it is up.
#: A task spawned by another method (``schedule_eviction`` called by a request) runs when that is called.
_START_ENTRIES = frozenset({"__init__", "__enter__", "__aenter__"}) | known.DAEMON_START_METHODS
#: Calls followed from a start entry through the object's own methods (``start`` -> ``self._spawn()``).
_MAX_START_HOPS = 3


def _self_method(node: ast.AST) -> Optional[str]:
    """``name`` of ``self.name`` (a method of the object itself)."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _spawned_methods(cls: ast.ClassDef, facts: ModuleFacts) -> Iterator[str]:
    """Names of the methods that making or starting an instance runs as tasks or threads:
    ``create_task(self._run())``, ``Thread(target=self._loop)`` in ``start``/``__aenter__``/``__init__`` (inherited
    ones too) or in a method of the object those call."""
    pending = [(name, 0) for name in sorted(_START_ENTRIES)]
    visited, spawned = set(), []
    while pending:
        name, hops = pending.pop()
        if name in visited:
            continue
        visited.add(name)
        found = _method_of(cls, facts, name)
        if found is None:
            continue
        method, method_facts = found
        # The method's calls, read off its module's node list (own_nodes) rather than a walk of the method.
        for node in method_facts.own_nodes(method, (ast.Call,)):
            qualified = method_facts.callee(node) or ""
            handed = None
            if qualified in known.TASK_STARTERS or (isinstance(node.func, ast.Attribute)
                                                    and node.func.attr == known.LOOP_CREATE_TASK):
                handed = node.args[0].func if node.args and isinstance(node.args[0], ast.Call) else None
            elif qualified in known.THREAD_CLASSES:
                handed = next((k.value for k in node.keywords if k.arg == "target"), None)
            target = _self_method(handed)
            if target is not None and target not in spawned:
                spawned.append(target)
            called = _self_method(node.func)
            if called is not None and hops < _MAX_START_HOPS:
                pending.append((called, hops + 1))
    yield from spawned


def _withs_in_walk_order(facts: ModuleFacts) -> list:
    """The module's ``with`` and ``async with`` statements in the order ``walk`` of the whole tree meets them
    (breadth first: shallower first, each depth in source order), read off the list the module walk already
    made (in source order) instead of walking every node of the module again."""
    source_order = {id(node): index for index, node in enumerate(facts.withs)}
    return sorted(facts.withs, key=lambda node: (sum(1 for _ in ancestors(node)), source_order[id(node)]))


class DaemonRegistrations:
    """Mixin of the collector: daemon objects started at start-up."""

    def _daemons(self) -> None:
        facts = self.facts
        startup = None
        for node, instance in self._daemon_starts():
            if startup is None:
                startup = StartupMap.of_module(facts)
            reason = startup.reason_for_node(node)
            if reason is None:
                continue
            found = self._instance_class(instance)
            if found is None:
                continue
            loop = self._daemon_loop(*found)
            if loop is None:
                continue
            function, family, loop_facts, while_node = loop
            cls = found[0]
            foreign = loop_facts is not facts
            target = Target(function, loop_facts, foreign, False, f"{cls.name}.{function.name}")
            how = dotted(node.func) if isinstance(node, ast.Call) else f"async with {cls.name}(...)"
            scheduled = Scheduled(family, how or cls.name, node, target, node if isinstance(node, ast.Call) else None)
            scheduled.detail = reason
            scheduled.skip = lambda statement, _facts=loop_facts: self._is_sleep_statement(statement, _facts)
            scheduled.related.append(Related(loop_facts.context.path, while_node.lineno, while_node.col_offset + 1,
                                             f"`{cls.name}` runs this loop again and again once started"))
            self.add(scheduled)

    def _daemon_starts(self) -> Iterator[Tuple[ast.AST, ast.AST]]:
        """(where, the started object) for every start of an object in this module."""
        facts = self.facts
        for name in known.DAEMON_START_METHODS:
            for call in facts.calls_by_name.get(name, ()):
                if isinstance(call.func, ast.Attribute) and not call.args:
                    yield call, call.func.value
        for name in known.CONTEXT_ENTERS:
            for call in facts.calls_by_name.get(name, ()):
                if len(call.args) == 1:
                    yield call, call.args[0]
        for node in _withs_in_walk_order(facts):
            for item in node.items:
                if isinstance(item.context_expr, ast.Call):
                    yield item.context_expr, item.context_expr
                elif isinstance(item.context_expr, ast.Name):  # ``async with monitor:``, built elsewhere
                    yield item.context_expr, item.context_expr

    def _instance_class(self, instance: ast.AST) -> Optional[Tuple[ast.ClassDef, ModuleFacts]]:
        """The project class of a started object: built here (``Monitor(...)``, a name bound to that), or a
        parameter of this or an enclosing function annotated with the class."""
        facts = self.facts
        expr = instance
        if isinstance(expr, ast.Name):
            origin = self.bindings.origin(expr)
            if isinstance(origin, ast.Call):
                expr = origin
        if isinstance(expr, ast.Await):
            expr = expr.value
        if isinstance(expr, ast.Call):
            return _class_of(expr.func, facts) if isinstance(expr.func, (ast.Name, ast.Attribute)) else None
        if isinstance(expr, ast.Name):
            function = facts.enclosing_function(expr)
            while function is not None:
                annotation = _annotation_class(_parameter_annotation(function, expr.id))
                if annotation is not None:
                    return _class_of(annotation, facts)
                function = facts.enclosing_function(function)
        return None

    def _daemon_loop(self, cls: ast.ClassDef, facts: ModuleFacts):
        """(loop method, family, its module, its ``while``) when an instance of ``cls`` runs a waiting loop."""
        candidates = []
        if _is_thread_class(cls, facts):
            candidates.append((known.THREAD_RUN_METHOD, known.THREAD_TICKER))
        candidates.extend((name, known.ASYNCIO_TICKER) for name in _spawned_methods(cls, facts))
        for name, family in candidates:
            found = _method_of(cls, facts, name)
            if found is None:
                continue
            function, method_facts = found
            loop = self._waiting_loop(function, method_facts, cls)
            if loop is not None:
                return function, family, method_facts, loop
        return None

    def _waiting_loop(self, function: FunctionNode, facts: ModuleFacts, cls: ast.ClassDef) -> Optional[ast.While]:
        """The method's ``while`` loop that waits between rounds: in the loop, or in a method of the object
        the loop calls (``while not stopped: self.tick()``, ``tick`` sleeping)."""
        loop = self._ticker_loop(function, facts)
        if loop is not None:
            return loop
        for node in walk_no_nested_functions(function):
            if not isinstance(node, ast.While):
                continue
            for call in walk_no_nested_functions(node):
                if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                        and isinstance(call.func.value, ast.Name) and call.func.value.id == "self"):
                    found = _method_of(cls, facts, call.func.attr)
                    if found is not None and found[0] is not function and self._ticker_loop_or_sleep(*found):
                        return node
        return None

    def _ticker_loop_or_sleep(self, function: FunctionNode, facts: ModuleFacts) -> bool:
        if any(self._consumes(n) for n in walk_no_nested_functions(function)):
            return False
        return any(self._sleep_call(n, facts) for n in walk_no_nested_functions(function))
