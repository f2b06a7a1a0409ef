"""Registries handed to a library scheduler: a ``for`` that gives each item of a project container to a scheduler's
registration method (``for key, trigger, fn in PLAN: scheduler.add_job(fn, trigger, id=key)``).

Every function put into such a container (by ``@weekly(...)``, ``register(fn)``) is that scheduler's job, as if
registered by hand; whether the receiver is a scheduler, and one whose runs are coordinated, is the job
discovery's to say at the registration call (``scheduled_in`` of the loop's module).
"""
from __future__ import annotations

import ast
import re
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

from ..analysis.facts import ModuleFacts, walk_no_nested_functions
from ..config import Config
from ..knowledge import schedulers as known
from . import index as project
from .reach import Runs
from .registries import (_BODY_BYTES, _LoopSite, RepeatedRegistry, _module_name, _project_root, _qualified_container,
                         _sites_of, filled_by_registrations, loops_at_sites)

#: The methods a scheduler object registers a function with (``scheduler.add_job(func, ...)``, the ``schedule``
#: library's ``every(...).day.do(func)``): a ``for`` that hands each item of a container to one makes the
#: container a registry of that scheduler's jobs.
_SCHEDULER_METHODS: FrozenSet[str] = frozenset(
    {known.SCHEDULE_DO, *(r.method for registrations in known.METHODS.values() for r in registrations
                          if not r.decorator)})


def handed_in(facts: ModuleFacts) -> List[Tuple[str, ast.AST, ast.Call]]:
    """(qualified container, loop, call) for each ``for`` of this module that hands every item of a container (or
    a part of it) to a scheduler's registration method: ``for name, trigger, fn in PLAN: scheduler.add_job(fn,
    trigger, id=name)``. The scheduler runs the items; whether the receiver is a scheduler, and one whose runs
    are coordinated, is for the job discovery to say (``scheduled_in`` of this module)."""
    def build(_facts: ModuleFacts) -> List[Tuple[str, ast.AST, ast.Call]]:
        found: List[Tuple[str, ast.AST, ast.Call]] = []
        module = _module_name(facts)
        for loop in facts.loops:
            if not isinstance(loop, (ast.For, ast.AsyncFor)):
                continue
            items = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
            for node in (n for statement in loop.body for n in [statement, *walk_no_nested_functions(statement)]):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr in _SCHEDULER_METHODS and _hands_item(node, items)):
                    qualified = _qualified_container(loop, facts, module)
                    if qualified:
                        found.append((qualified, loop, node))
                    break
        return found

    return facts.cached("registries:handed", build)


def hands_registered_item(call: ast.Call, name: str, facts: ModuleFacts) -> bool:
    """``call`` is a registration call a ``for`` makes for each item of a registry (``for fn in self._entries:
    clock.every().hour.do(runner, app, fn)``), and ``name`` is bound by that ``for``: what ``name``
    holds is each registered function, a job judged where it is registered."""
    for container, loop, handing in handed_in(facts):
        bound = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}  # type: ignore[attr-defined]
        if handing is call and name in bound:
            return filled_by_registrations(container, facts)
    return False


def _hands_item(call: ast.Call, items: Set[str]) -> bool:
    """An argument of ``call`` is a loop item or a part of one (``fn``, ``entry.func``, ``entry["func"]``)."""
    for argument in [*call.args, *(k.value for k in call.keywords)]:
        while isinstance(argument, (ast.Attribute, ast.Subscript)):
            argument = argument.value
        if isinstance(argument, ast.Name) and argument.id in items:
            return True
    return False


_handing_by_root: Dict[str, Dict[str, List[_LoopSite]]] = {}
project.on_clear(_handing_by_root.clear)


def handing_sites(config: Config, root: str) -> Dict[str, List[_LoopSite]]:
    """qualified container -> where a ``for`` hands its items to a scheduler's registration method, over the
    project: only modules whose text calls such a method near a ``for`` over a name are parsed."""
    cached = _handing_by_root.get(root)
    if cached is not None:
        return cached
    # (one pass over the project's files for every registration method, rather than one search per method)
    candidates = [path for path in project.project_files(root) if _may_hand(project.read_bytes(path))]
    found = _sites_of(candidates, config, handed_in)
    _handing_by_root[root] = found
    return found


_SCHEDULER_CALL = re.compile(rb"\.(?:" + rb"|".join(re.escape(m.encode()) for m in sorted(_SCHEDULER_METHODS))
                             + rb")\(")


#: ``for … in NAME:`` or ``for … in OWNER.attr:`` (and views or copies of them)
_FOR_OVER_DOTTED = re.compile(rb"for\s+[^\n:]+?\s+in\s+[\w.(]+[\w)]\s*:")


def _may_hand(source: bytes) -> bool:
    """A ``for`` over a name with a scheduler's registration method called in its body, as ``handed_in`` reads."""
    if _SCHEDULER_CALL.search(source) is None:
        return False
    for match in _FOR_OVER_DOTTED.finditer(source):
        if _SCHEDULER_CALL.search(source, match.end(), match.end() + _BODY_BYTES) is not None:
            return True
    return False


def handed_registry(spellings: Set[str], facts: ModuleFacts) -> Optional[RepeatedRegistry]:
    """The ``for`` that hands each item of the container to a scheduler (this module's, else one anywhere in the
    project that imports it); where the scheduler runs its jobs is the job discovery's to say."""
    handed = [(name, loop, call, facts) for name, loop, call in handed_in(facts) if name in spellings]
    if not handed and facts.context.cross_file:
        sites = handing_sites(facts.config, _project_root(facts.config, facts))
        handed = [(name, loop, call, loop_facts)
                  for (name, loop, call), loop_facts in loops_at_sites(spellings, sites, facts, handed_in)]
    if not handed:
        return None
    container, loop, call, loop_facts = handed[0]
    return RepeatedRegistry(container, loop, loop_facts.enclosing_function(loop), loop_facts, Runs(), hands_to=call)
