"""OG608 for one flag: a module-level event (``maintenance_mode = threading.Event()``) that request code sets or
clears and other code tests to decide what to do (maintenance mode, a paused switch, a feature toggled through an
admin endpoint).

The request that flips it lands on one worker process of one replica: only that process sees the change, and
every other process goes on as before (and a restart forgets it).  An event that code only waits on
(``wake.wait()``) signals this process's own thread, which is what it is for, and is left alone: only a test of
its state (``is_set()``) decides from it.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple

from ..analysis.facts import FunctionNode, ModuleFacts, position
from ..knowledge import process_state as known
from ..project.definitions import definition_facts

#: Triggers: a module that sets an event, or clears one and tests one.
TRIGGERS = ((b".set()",), (b".clear()", b"is_set"))


@dataclass
class RequestFlag:
    name: str  # the event's name where it is flipped
    flip: ast.Call  # the ``set()`` / ``clear()``
    writer: FunctionNode
    binding: ast.stmt  # the module-level statement that makes the event
    binding_facts: ModuleFacts
    test: ast.Call  # an ``is_set()`` of it in another function
    reader: FunctionNode
    reader_facts: ModuleFacts


def flipped_flags(facts: ModuleFacts) -> Iterator[RequestFlag]:
    """Each ``set()``/``clear()`` of a module-level event (of this module or imported) in a function, with a test of
    the event's state in another function of its module or of this one."""
    for call in sorted(facts.calls_named(*known.EVENT_FLIPS), key=position):
        func = call.func
        if call.args or call.keywords or not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
            continue
        writer = facts.enclosing_function(call)
        if writer is None:
            continue
        made = _module_event(func.value.id, facts)
        if made is None:
            continue
        binding, where, name = made
        tested = _tested_elsewhere(name, where, writer) or (
            _tested_elsewhere(func.value.id, facts, writer) if where is not facts else None) \
            or _tested_in_importers(binding, where, name, writer)
        if tested is not None:
            test, reader, reader_facts = tested
            yield RequestFlag(func.value.id, call, writer, binding, where, test, reader, reader_facts)


def _module_event(spelled: str, facts: ModuleFacts) -> Optional[Tuple[ast.stmt, ModuleFacts, str]]:
    """The module-level statement binding ``spelled`` (here, or in the module it is imported from) to a new event,
    its module, and its name there."""
    where, name = facts, spelled
    if facts.imports.is_imported(spelled):
        located = definition_facts(facts.imports.qualify_dotted(spelled), facts)
        if located is None:
            return None
        where, name = located
    for statement in where.tree.body:
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and isinstance(statement.value, ast.Call) \
                and any(isinstance(t, ast.Name) and t.id == name for t in _targets(statement)) \
                and (where.callee(statement.value) or "") in known.EVENT_CLASSES:
            return statement, where, name
    return None


def _targets(statement: ast.stmt) -> List[ast.AST]:
    return list(statement.targets) if isinstance(statement, ast.Assign) else [statement.target]  # type: ignore


#: Other modules read for a test of an event (those whose text names it, the first few).
_MAX_IMPORTERS = 8


def _tested_in_importers(binding: ast.stmt, where: ModuleFacts, name: str, writer: FunctionNode
                         ) -> Optional[Tuple[ast.Call, FunctionNode, ModuleFacts]]:
    """A test of the event in another module of the project that imports it (a middleware of its own)."""
    if not where.context.cross_file:
        return None
    from ..project import index as project

    for path in project.files_mentioning(name, project.search_root(where))[:_MAX_IMPORTERS]:
        other = project.module_facts(path, where.config)
        if other is None or other is where or other.context.is_test:
            continue
        for test in other.calls_named(*known.EVENT_TESTS):
            func = test.func
            if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
                continue
            made = _module_event(func.value.id, other) if other.imports.is_imported(func.value.id) else None
            reader = other.enclosing_function(test)
            if made is not None and made[0] is binding and reader is not None and reader is not writer:
                return test, reader, other
    return None


def _tested_elsewhere(name: str, facts: ModuleFacts, writer: FunctionNode
                      ) -> Optional[Tuple[ast.Call, FunctionNode, ModuleFacts]]:
    for test in facts.calls_named(*known.EVENT_TESTS):
        func = test.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == name:
            reader = facts.enclosing_function(test)
            if reader is not None and reader is not writer:
                return test, reader, facts
    return None
