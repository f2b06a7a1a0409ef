"""Lock helpers that hand the locked section to their caller, and the jobs that enter them.

A ``@contextmanager`` that takes a lock, yields, and releases it is a mutex around its caller's block: request
code whose every call must do its work waits on it on purpose.  A scheduled job that enters it with a job-wide
key is another matter: with a lock that waits, every replica's run queues behind the first and then does the
work again.  ``jobs_entering`` says which jobs enter such a helper with a fixed key.
"""
from __future__ import annotations

import ast
from typing import Callable, List, Optional, Tuple

from ..analysis.executed_sql import bound_value
from ..analysis.facts import FunctionNode, ModuleFacts, walk
from ..analysis.handed import argument_for, parameter_names
from .fixed_arguments import callers_of, fixed_at_callers, ruled_out_for
from .scheduled.discovery import scheduled_by_all

#: (the call entering the helper, its module, the job it is in)
Entry = Tuple[ast.Call, ModuleFacts, FunctionNode]


def jobs_entering(helper: FunctionNode, keys: List[ast.AST], facts: ModuleFacts,
                  is_fixed: Callable[[List[ast.AST], ModuleFacts], bool],
                  lock: Optional[ast.AST] = None) -> List[Entry]:
    """The calls of ``helper`` made by scheduled jobs of the project, when the lock's key (``keys``: what it is
    computed from) is the same for every call: fixed in the helper, or built from parameters every caller hands
    a fixed value.  A call for which the helper never reaches ``lock`` (``if wait:`` around it, the call handing
    ``wait=False``) does not enter it."""
    if is_fixed(keys, facts):
        callers = callers_of(helper, facts)
    else:
        own = set(parameter_names(helper, receiver=False))
        # the parameters of a query (``(key,)``, ``{"k": key}``) are its values, each on its own
        keys = [part for key in keys for part in (
            key.elts if isinstance(key, (ast.Tuple, ast.List)) else key.values if isinstance(key, ast.Dict) else [key])]
        # ``key = f"app:lock:{name}"`` then ``r.set(key, ...)``: the key's local is read through its binding
        keys = [bound_value(key, facts) or key if isinstance(key, ast.Name) and key.id not in own else key
                for key in keys]
        names = sorted({n.id for key in keys for n in walk(key) if isinstance(n, ast.Name) and n.id in own})
        if names:
            callers = fixed_at_callers(helper, names, facts, is_fixed, lambda call, other: False) or []
        else:
            callers = _calls_on_fixed_instances(helper, keys, facts, is_fixed)
    found: List[Entry] = []
    for call, other in callers:
        if lock is not None and ruled_out_for(call, helper, lock):
            continue
        job = other.enclosing_function(call)
        if job is not None and not other.context.is_test and _scheduled_or_run_by_one(job, other):
            found.append((call, other, job))
    return found


def _calls_on_fixed_instances(helper: FunctionNode, keys: List[ast.AST], facts: ModuleFacts,
                              is_fixed: Callable[[List[ast.AST], ModuleFacts], bool]) -> List[Tuple[ast.Call, ModuleFacts]]:
    """The calls of a method keyed on what its instance holds (``self.key``, given to ``__init__``) made on an
    instance built with a fixed value for it: ``PAYRUN = JobMutex(key=0x50)`` then ``with PAYRUN.held():`` is a
    job-wide key, one per instance the project makes. Empty when the key reads anything else."""
    cls = facts.enclosing_class(helper)
    arguments = helper.args.posonlyargs + helper.args.args
    if cls is None or not arguments:
        return []
    own_self = arguments[0].arg
    read = {n.attr for key in keys for n in walk(key)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == own_self}
    others = {n.id for key in keys for n in walk(key) if isinstance(n, ast.Name) and n.id != own_self}
    if not read or others:
        return []
    init = next((s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and s.name == "__init__"), None)
    if init is None:
        return []
    given = _attributes_given(init)
    if any(attribute not in given for attribute in read):
        return []
    parameters = set(parameter_names(init, receiver=False))
    from_parameters = sorted({given[a].id for a in read if isinstance(given[a], ast.Name) and given[a].id in parameters})
    if any(not (isinstance(given[a], ast.Name) and given[a].id in parameters) and not is_fixed([given[a]], facts)
           for a in read):
        return []
    found = []
    for call, other in callers_of(helper, facts):
        made = _instance_made(call, other, cls.name)
        if made is None:
            continue
        values = [argument_for(made, init, name) for name in from_parameters]
        if all(value is not None for value in values) and (not values or is_fixed(values, other)):
            found.append((call, other))
    return found


def _attributes_given(init: FunctionNode) -> dict:
    """``self.key = key`` (and other plain assignments of ``self``'s attributes) in ``__init__``: attribute -> value."""
    own_self = (init.args.posonlyargs + init.args.args)[0].arg if init.args.posonlyargs + init.args.args else "self"
    given: dict = {}
    for node in walk(init):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                        and target.value.id == own_self and node.value is not None):
                    given[target.attr] = node.value
    return given


def _instance_made(call: ast.Call, facts: ModuleFacts, class_name: str) -> Optional[ast.Call]:
    """The construction of the instance ``call``'s method is called on: ``PAYRUN.held()`` with ``PAYRUN =
    JobMutex(...)`` in the caller's function or module, or ``JobMutex(...).held()`` itself."""
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    if isinstance(receiver, ast.Name):
        receiver = bound_value(receiver, facts)
    if isinstance(receiver, ast.Call):
        named = receiver.func.attr if isinstance(receiver.func, ast.Attribute) else getattr(receiver.func, "id", "")
        if named == class_name:
            return receiver
    return None


def _scheduled_or_run_by_one(function: FunctionNode, facts: ModuleFacts) -> bool:
    """``function`` is a scheduled job, or a ticker's loop (or another job) calls it: what a job's pass calls
    is the job's work (``while not stop.wait(60): publish_sheets()`` in a thread started at start-up)."""
    if scheduled_by_all(function, facts):
        return True
    return any(caller is not None and caller is not function and scheduled_by_all(caller, other)
               for caller, other in ((other.enclosing_function(call), other)
                                     for call, other in callers_of(function, facts)))


def jobs_wearing(scope: FunctionNode, keys: List[ast.AST], facts: ModuleFacts,
                 is_fixed: Callable[[List[ast.AST], ModuleFacts], bool]) -> List[Entry]:
    """The scheduled jobs that wear a decorator of the project whose wrapper (``scope``) takes the lock keyed on
    the decorator factory's own parameters (``@exclusive("daily-export", ttl=...)`` making ``f"app:{name}"``),
    when every application hands the factory a fixed value for them: each job's runs share one key.  The entry's
    call is the decorator as applied (command line only)."""
    if not facts.context.cross_file:
        return []
    names = sorted({n.id for key in keys for n in walk(key) if isinstance(n, ast.Name)})
    if not names or set(names) & set(parameter_names(scope, receiver=False)):
        return []
    factory = facts.enclosing_function(scope)
    while factory is not None and not set(names) <= set(parameter_names(factory, receiver=False)):
        factory = facts.enclosing_function(factory)
    if factory is None or factory is scope:
        return []
    applied = fixed_at_callers(factory, names, facts, is_fixed, lambda call, other: False) or []
    found: List[Entry] = []
    for call, other in applied:
        job = next((f for f in other.functions if any(d is call for d in f.decorator_list)), None)
        if job is not None and not other.context.is_test and _scheduled_or_run_by_one(job, other):
            found.append((call, other, job))
    return found
