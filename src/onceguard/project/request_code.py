"""Which functions run in request or job code, for state that lives as long as the process (OG608).

What ``Reach`` knows of the module, plus methods of a class called on a module-level instance from there, plus
every method of a daemon (its loop is the job), plus, on the command line, functions the project's request or
job code calls from another module a few calls up (the state lives in the helper's module, the request that
runs it in another).
"""
from __future__ import annotations

import ast
from typing import Callable, FrozenSet, List, Optional, Set, Tuple

from ..analysis.facts import FunctionNode, ModuleFacts, walk
from ..model import Related
from . import process_state as state
from .fixed_arguments import named_in_few_files
from .reach import Reach, _method_callers_by_name
from .renamed_callers import project_callers
from .summaries import instance_class

#: How many calls up, across the modules of the project, request or job code may be from the function that
#: uses the state (a route calling a service calling the helper that keeps the marker is two).
#: Each hop reads the callers across the project, the dearest question a run asks; deeper chains stay unseen.
_MAX_CALLER_HOPS = 2
#: Files that may mention a function whose callers are read (its own included).
_MAX_CALLER_FILES = 6

class RequestCode:
    """Which functions of the module run in request or job code: what ``Reach`` knows, plus methods of a
    class called on a module-level instance from there (``registry.register(...)`` in a route), plus every
    method of a daemon (its loop is the job), plus, when asked for a binding on the command line, functions
    the project's request or job code calls from another module, a few calls up (``alerts.alert_once()``
    called by a route in ``ingest.py``): the state lives in the helper's module, the request that runs it in
    another."""

    def __init__(self, facts: ModuleFacts) -> None:
        self.facts = facts
        #: (function id, binding id, asked about its answer) -> (reason, the calls on the way) or None
        self._elsewhere: dict = {}

    @property
    def reach(self) -> Reach:
        return Reach.of_module(self.facts)  # cached per module

    def runs(self, function: FunctionNode, receivers: Set[str], loop_methods: FrozenSet[str] = frozenset(),
             binding: Optional[state.Binding] = None, answer: Optional[Callable] = None) -> Optional[str]:
        """Why ``function`` runs in request or job code, or None.  With ``answer`` (``function`` hands back
        whether a key is marked, and what the mark guards is its caller's work), only calls whose caller acts
        on the answer with work that leaves the process count (``answer(call, facts)``)."""
        cls = self.facts.enclosing_class(function)
        if answer is None:
            if function.name in loop_methods and cls is not None:
                return "in the daemon's loop"
            if self.reach.is_request_or_job(function):
                return self.reach.function_reason(function)
        for call in self.facts.calls_named(function.name) if cls is not None or answer else ():
            caller = self.facts.enclosing_function(call)
            if caller is None or decorates(call, caller):
                continue  # ``@registry.add("x")`` on a def runs once, when the module is imported
            if not (_calls_here(call, caller, cls, receivers, self.facts, answer is not None)
                    or answer is None and _typed_here(call, caller, cls, self.facts)) \
                    or (answer is not None and not answer(call, self.facts)):
                continue
            if cls is not None and caller.name in loop_methods and self.facts.enclosing_class(caller) is cls:
                return "called in the daemon's loop"
            if self.reach.is_request_or_job(caller):
                return f"called from {caller.name}(), {self.reach.function_reason(caller) or 'request code'}"
        if binding is None:
            return None
        # (each kind of answer its own entry: a marker's "acts with work that leaves the process", a registry's
        # "acts on what it is told")
        key = (id(function), id(binding), getattr(answer, "__qualname__", None) if answer is not None else None)
        if key not in self._elsewhere:
            fresh = binding.owner if binding.scope == state.INSTANCE else None
            self._elsewhere[key] = _request_callers(function, self.facts, 0, set(), fresh, answer)
        found = self._elsewhere[key]
        return found[0] if found is not None else None

    def way(self, function: Optional[FunctionNode], binding: state.Binding) -> List[Related]:
        """The calls from request or job code of another module down to ``function``, when that is how it
        runs (for the finding to show)."""
        if function is None:
            return []
        found = next((value for key, value in self._elsewhere.items()  # (the callers acting on its answer first)
                      if key[:2] == (id(function), id(binding)) and key[2] is not None and value is not None),
                     self._elsewhere.get((id(function), id(binding), None)))
        return list(found[1]) if found is not None else []


def _calls_here(call: ast.Call, caller: FunctionNode, cls: Optional[ast.ClassDef], receivers: Set[str],
                facts: ModuleFacts, direct: bool) -> bool:
    """``call`` (named as the function) runs it: a method called on a module-level instance of this module;
    with ``direct``, also a module-level function called by its name, or a method called on ``self`` by
    another method of its class."""
    func = call.func
    if cls is None:
        return direct and isinstance(func, ast.Name)
    receiver = func.value if isinstance(func, ast.Attribute) else None
    if not isinstance(receiver, ast.Name):
        return False
    return receiver.id in receivers or (direct and receiver.id == "self" and facts.enclosing_class(caller) is cls)


def _typed_here(call: ast.Call, caller: FunctionNode, cls: Optional[ast.ClassDef], facts: ModuleFacts) -> bool:
    """``call`` is a method call on an object this module's code makes an instance of ``cls`` (what the
    application keeps for every request, read back as ``request.app.state.x``; an annotated parameter)."""
    if cls is None or not isinstance(call.func, ast.Attribute) or isinstance(call.func.value, ast.Name) \
            and call.func.value.id in ("self", "cls"):
        return False
    found = instance_class(call.func.value, facts, caller)
    return found is not None and found[0] is cls


def _request_callers(function: FunctionNode, facts: ModuleFacts, hops: int, seen: Set[int],
                     fresh: Optional[ast.ClassDef], answer: Optional[Callable] = None
                     ) -> Optional[Tuple[str, Tuple[Related, ...]]]:
    """Why ``function`` runs in request or job code of the project: one of its callers (in any module, under
    any name it is imported as) is such code, or is called from it, at most ``_MAX_CALLER_HOPS`` calls up.
    A caller at module level, in a decorator, at start-up, in a test, a migration or a script a person runs
    is no way there: those run once per process, or not in a replica at all.  Nor is the constructor of
    ``fresh``, the class whose instances hold the state: whoever calls it makes a new object with its own
    empty state, not the one that lives as long as the process.  Only the command line reads the other
    modules (``project_callers`` answers from this file alone otherwise, and ``Reach`` has already said what
    this file shows).  With ``answer``, a direct caller counts only where ``answer(call, facts)`` holds (it
    acts on ``function``'s answer with work that leaves the process)."""
    if hops >= _MAX_CALLER_HOPS or id(function) in seen or not facts.context.cross_file:
        return None
    if fresh is not None and function.name == "__init__" and facts.enclosing_class(function) is fresh:
        return None
    seen.add(id(function))
    # A name many files mention is a library's shared helper, not one request path's: its callers are not read
    # (the reading is the dearest question a run asks, and a helper of every module is no dedupe of one flow).
    if not named_in_few_files(function, facts, _MAX_CALLER_FILES):
        return None
    calls = project_callers(function, facts)
    if not calls and hops == 0:
        # A method called on an object the caller's spelling does not name by its class (``notifier.notify()``
        # on a module-level instance imported from here): the calls that resolve to it.
        calls = _method_callers_by_name(function, facts)
    for call, other in calls:
        context = other.context
        caller = other.enclosing_function(call)
        if caller is None or decorates(call, caller) or context.is_test or context.is_migration:
            continue
        reach = Reach.of_module(other)
        if reach.module_is_one_off or reach.runs_at_startup(caller):
            continue
        if answer is not None and hops == 0 and not answer(call, other):
            continue  # (after the cheap questions: what the caller's test decides is followed into its calls)
        step = Related(context.path, call.lineno, call.col_offset + 1, f"{caller.name}() calls {function.name}()")
        if reach.is_request_or_job(caller):
            why = reach.function_reason(caller) or "request or job code"
            entry = Related(context.path, caller.lineno, caller.col_offset + 1,
                            f"every replica runs {caller.name}() ({why})")
            return f"called from {caller.name}() in `{context.path}`, {why}", (entry, step)
        above = _request_callers(caller, other, hops + 1, seen, fresh)
        if above is not None:
            return above[0], above[1] + (step,)
    return None


def decorates(node: ast.AST, function: FunctionNode) -> bool:
    """``node`` is part of one of ``function``'s decorators (it ran when the def did, not when it is called)."""
    return any(part is node for decorator in function.decorator_list for part in walk(decorator))
