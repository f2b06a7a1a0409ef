"""Registries a loop repeats: a container whose items a never-ending loop calls on every pass (a module-level
list or dict, or an attribute of the scheduler object whose method the loop is), and the project functions
that put functions into it.

``@periodic(seconds=60)`` on ``export`` hands ``export`` to ``register``, which appends it (or an object that
holds it) to ``REGISTRY``; ``run_all`` calls ``entry.func()`` for each entry on every pass of a ``while True``
loop with a sleep.  Whatever the names, that is a scheduler: every function put into the container is a job,
run wherever the loop runs.  Nothing here depends on a name: the container is found by what is stored in it
and what the loop does with its items.

Two ways in:

- ``registration_of(expr, facts)``: the expression used as a decorator (``periodic(seconds=60)`` or
  ``register``) or called with a function (``register(export)``), resolved to a project function that stores
  its first parameter into a repeated container: the container and its loop;
- ``registering_words(config)``: the names of every such function of the project, found from the loops, for
  the prefilter (a module that only decorates its jobs holds none of the scheduler words).
"""
from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterator, List, Optional, Set, Tuple

from .handed_values import iterated as _iterated
from ..analysis.facts import FunctionNode, ModuleFacts, parent, walk_no_nested_functions
from ..analysis.handed import positional_parameters
from ..config import Config
from ..knowledge import schedulers as known
from . import index as project
from .definitions import definition_facts, top_level
from .loop_exits import endless
from .reach import Runs, runs
from .renamed_callers import import_statements, spells

_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
#: Container methods that put their (last) argument in: ``jobs.append(f)``, ``jobs.setdefault(name, f)``.
_PUTS: FrozenSet[str] = frozenset({"append", "appendleft", "add", "insert", "setdefault"})
#: At most this many candidate loop modules are parsed for one project.
_MAX_LOOP_FILES = 60


@dataclass(frozen=True)
class RepeatedRegistry:
    """A container whose items a never-ending loop calls, and where that loop runs."""

    container: str  # qualified name (``housekeeper.periodic.REGISTRY``)
    loop: ast.AST  # the ``while`` loop that repeats it (or the ``for`` that hands its items to a scheduler)
    caller: Optional[FunctionNode]  # the function holding the loop
    facts: ModuleFacts  # the loop's module
    where: Runs  # where the loop runs (``runs`` of the loop)
    #: the scheduler's registration call each item is handed to (``scheduler.add_job(func, trigger)``), when the
    #: container's items are not called by a loop of the project but scheduled by a library
    hands_to: Optional[ast.Call] = None

    @property
    def short(self) -> str:
        return self.container.rsplit(".", 1)[-1]


# -- what a registering function stores -------------------------------------------------------------------
def _first_parameter(function: FunctionNode) -> Optional[str]:
    parameters = positional_parameters(function)
    return parameters[0] if parameters else None


def _defined_functions(facts: ModuleFacts) -> Iterator[FunctionNode]:
    """The module's top-level functions and the methods of its top-level classes."""
    for statement in facts.tree.body:
        if isinstance(statement, _FUNCTION_TYPES):
            yield statement
        elif isinstance(statement, ast.ClassDef):
            yield from (s for s in statement.body if isinstance(s, _FUNCTION_TYPES))


def _relative(container: str, home: ModuleFacts) -> str:
    """``JOBS`` or ``Class.jobs`` of ``pkg.tasks.JOBS`` / ``pkg.tasks.Class.jobs``, relative to its module
    (spelled by any of the names the module is imported as)."""
    for module in _module_names(home):
        if container.startswith(module + "."):
            return container[len(module) + 1:]
    return container.rpartition(".")[2]


def _spellings(relative: str, home: ModuleFacts) -> Set[str]:
    """``JOBS`` of ``home`` qualified by each name the module is imported as: a loop in another module spells
    the container as its import does (``billing.tasks.JOBS``), which need not be the path under the project's
    root (``svc.billing.tasks.JOBS``)."""
    return {f"{module}.{relative}" for module in _module_names(home)}


def _stores_into(function: FunctionNode, facts: ModuleFacts, name: str) -> bool:
    """``function`` puts its parameter into ``name``, itself or through the function it returns."""
    if stored_into(function, facts) == name:
        return True
    returned = _returned_function(function)
    return returned is not None and stored_into(returned, facts) == name


def _holds(value: ast.AST, name: str) -> bool:
    """``value`` is ``name``, or a holder made of it right there: ``Entry(name, 60)``, ``(name, 60)``,
    ``{"func": name}``."""
    if isinstance(value, ast.Name):
        return value.id == name
    if isinstance(value, ast.Call):
        parts = list(value.args) + [k.value for k in value.keywords]
    elif isinstance(value, (ast.Tuple, ast.List)):
        parts = list(value.elts)
    elif isinstance(value, ast.Dict):
        parts = list(value.values)
    else:
        return False
    return any(isinstance(part, ast.Name) and part.id == name for part in parts)


def _module_level_names(facts: ModuleFacts) -> Set[str]:
    names: Set[str] = set()
    for statement in facts.tree.body:
        targets = statement.targets if isinstance(statement, ast.Assign) else (
            [statement.target] if isinstance(statement, ast.AnnAssign) and statement.value is not None else [])
        names.update(target.id for target in targets if isinstance(target, ast.Name))
    return names


def _instance_of(function: FunctionNode, facts: ModuleFacts) -> Tuple[Optional[str], Optional[ast.ClassDef]]:
    """The name ``self`` has in ``function`` and the class it is an instance of: ``function`` is a method, or a
    function nested in one (a decorator a method returns closes over its ``self``)."""
    current: Optional[ast.AST] = function
    while current is not None:
        cls = facts.enclosing_class(current)
        outer = facts.enclosing_function(current)
        if cls is not None and (outer is None or facts.enclosing_class(outer) is not cls):
            arguments = current.args.posonlyargs + current.args.args  # type: ignore[attr-defined]
            return (arguments[0].arg if arguments else None), cls
        current = outer
    return None, None


def _container_of(target: ast.AST, own_self: Optional[str], cls: Optional[ast.ClassDef],
                  module_names: Set[str]) -> Optional[str]:
    """``JOBS`` (a module-level name), ``ROSTER.jobs`` (an attribute of a module-level object) or ``Class.jobs``
    (``self.jobs`` of an instance of that class)."""
    if isinstance(target, ast.Name) and target.id in module_names:
        return target.id
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id in module_names:
        return f"{target.value.id}.{target.attr}"
    if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and own_self
            and target.value.id == own_self and cls is not None):
        return f"{cls.name}.{target.attr}"
    return None


def stored_into(function: FunctionNode, facts: ModuleFacts) -> Optional[str]:
    """The container, relative to ``facts``'s module, that ``function`` puts its first parameter into: a
    module-level name (``REGISTRY.append(Entry(func, seconds))``, ``JOBS[name] = func``) or an attribute of
    the instance a method works on (``self.jobs.append((func, seconds))``, as ``Class.jobs``), or None."""
    parameter = _first_parameter(function)
    if parameter is None:
        return None
    module_names = facts.cached("registries:module-names", _module_level_names)
    own_self, cls = _instance_of(function, facts)
    held = {parameter} | _wrappers_of(function, parameter)
    for node in walk_no_nested_functions(function):
        container = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _PUTS \
                and node.args and any(_holds(node.args[-1], name) for name in held):
            container = _container_of(node.func.value, own_self, cls, module_names)
        elif isinstance(node, ast.Assign) and any(_holds(node.value, name) for name in held):
            for target in node.targets:
                if isinstance(target, ast.Subscript):
                    container = _container_of(target.value, own_self, cls, module_names) or container
        if container is not None:
            return container
    return None


def _wrappers_of(function: FunctionNode, parameter: str) -> Set[str]:
    """Defs nested in ``function`` that call its ``parameter`` (``def wrapper(): ... fn() ...``, timing or logging
    around it): storing one stores the parameter's work."""
    found: Set[str] = set()
    for statement in walk_no_nested_functions(function):
        if isinstance(statement, _FUNCTION_TYPES) and statement is not function and any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == parameter
                for n in walk_no_nested_functions(statement)):
            found.add(statement.name)
    return found


def _returned_function(factory: FunctionNode) -> Optional[FunctionNode]:
    """The function a decorator factory defines in its body and returns (``def periodic(seconds): def
    register(func): ...; return register``)."""
    nested = {s.name: s for s in factory.body if isinstance(s, _FUNCTION_TYPES)}
    for statement in factory.body:
        if isinstance(statement, ast.Return) and isinstance(statement.value, ast.Name):
            return nested.get(statement.value.id)
    return None


# -- the loops that call a container's items -------------------------------------------------------------
def _calls_item(loop: ast.For) -> bool:
    """The ``for`` body calls the item (``job()``), a part of it (``entry.func()``, ``entry["func"]()``), or the
    value of an ``items()`` pair."""
    names = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    for node in (n for statement in loop.body for n in [statement, *walk_no_nested_functions(statement)]):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        while isinstance(func, (ast.Attribute, ast.Subscript)):
            func = func.value
        if isinstance(func, ast.Name) and func.id in names:
            return True
    return False


def is_pause(node: ast.AST, facts: ModuleFacts) -> bool:
    """A sleep (awaited or not), or an Event's timed wait used as an interruptible one (``stop.wait(60)``,
    ``asyncio.wait_for(stop.wait(), timeout=60)``)."""
    if isinstance(node, ast.Await):
        node = node.value
    if not isinstance(node, ast.Call):
        return False
    callee = facts.callee(node) or ""
    if callee in known.SLEEPS:
        return True
    if callee == "asyncio.wait_for" and node.args and (
            len(node.args) > 1 or any(k.arg == "timeout" for k in node.keywords)):
        # ``await asyncio.wait_for(stop.wait(), timeout=30)``: an Event's wait bounded by a timeout, as
        # ``stop.wait(30)`` is
        inner = node.args[0]
        return isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "wait"
    func = node.func
    return isinstance(func, ast.Attribute) and func.attr == "wait" and (
        len(node.args) == 1 or any(k.arg == "timeout" for k in node.keywords))


def _sleeps(nodes: List[ast.AST], facts: ModuleFacts) -> bool:
    return any(is_pause(node, facts) for node in nodes)


def consumes(node: ast.AST) -> bool:
    """A queue, stream or notification consumer is a worker, not a ticker: its passes follow what arrives."""
    if isinstance(node, ast.AsyncFor):
        return True
    if isinstance(node, ast.Await) and isinstance(node.value, ast.Call):
        func = node.value.func
        if isinstance(func, ast.Attribute) and func.attr == "get" and node.value.args:
            # ``await queue.get()`` waits for the next item and names none; ``await client.get(url)`` and
            # ``await cache.get(key)`` read the thing they name, and a loop of them is still a ticker.
            return False
        return isinstance(func, ast.Attribute) and func.attr in known.CONSUMER_METHODS
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        attr = node.func.attr
        if isinstance(node.func.value, ast.Name) and node.func.value.id in ("self", "cls"):
            return False  # ``self.poll()``: the object's own method, whatever its name, not a consumer's wait
        if attr in known.CONSUMER_METHODS and attr not in ("get", "get_nowait"):
            return True
        if attr == "get" and any(k.arg in ("block", "timeout") for k in node.keywords):
            return True
    return False


def repeating_loops(facts: ModuleFacts) -> List[ast.While]:
    """The module's never-ending loops that pause between passes and wait for nothing to arrive: a program's
    own worker loop, a registry's loop (built once per module)."""
    def build(_facts: ModuleFacts) -> List[ast.While]:
        found = []
        for loop in facts.loops:
            if type(loop) is ast.While and endless(loop):
                nodes = list(walk_no_nested_functions(loop))
                if _sleeps(nodes, facts) and not any(consumes(node) for node in nodes):
                    found.append(loop)
        return found

    return facts.cached("registries:repeating-loops", build)


def _called_by_name(loop: ast.While, facts: ModuleFacts) -> Set[str]:
    """Names of this module's functions a pass of ``loop`` calls (``run_pending()``, ``self.tick()``)."""
    names = set()
    for node in walk_no_nested_functions(loop):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                names.add(func.id)
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
                names.add(func.attr)
    return names


def repeated_in(facts: ModuleFacts) -> List[Tuple[str, ast.While]]:
    """(qualified container, loop) for each container whose items a never-ending loop with a pause of this
    module calls on each pass: in the loop itself, or in a function of this module the loop calls."""
    def build(_facts: ModuleFacts) -> List[Tuple[str, ast.While]]:
        found: List[Tuple[str, ast.While]] = []
        loops = repeating_loops(facts)
        if not loops:
            return found
        module = _module_name(facts)
        defined = {f.name: f for f in facts.functions}
        for loop in loops:
            scopes: List[ast.AST] = [loop]
            scopes.extend(defined[name] for name in sorted(_called_by_name(loop, facts)) if name in defined)
            for scope in scopes:
                for node in walk_no_nested_functions(scope):
                    if not isinstance(node, ast.For) or not _calls_item(node):
                        continue
                    qualified = _qualified_container(node, facts, module)
                    if qualified and (qualified, loop) not in found:
                        found.append((qualified, loop))
        for qualified, loop in _fanned_out(facts, loops, module):
            if (qualified, loop) not in found:
                found.append((qualified, loop))
        return found

    return facts.cached("registries:repeated", build)


def _qualified_container(loop: ast.For, facts: ModuleFacts, module: str) -> str:
    """The container a ``for`` walks, qualified: a module-level or imported name, or ``module.Class.jobs`` for
    ``for job in self.jobs`` in a method (the attribute of every instance of the class); "" for anything else."""
    container = _iterated(loop.iter)
    function = facts.enclosing_function(loop)
    if isinstance(container, ast.Name) and function is not None and container.id in positional_parameters(function):
        # ``def install(scheduler, jobs): for job in jobs: scheduler.add_job(job.func, ...)``: the container its
        # callers hand it (``install(scheduler, collect())``, ``collect`` returning ``list(_JOBS.values())``)
        from .handed_containers import handed_container

        return handed_container(function, container.id, facts)
    if isinstance(container, ast.Name):
        if facts.imports.is_imported(container.id):
            return facts.imports.qualify_dotted(container.id) or ""
        return f"{module}.{container.id}" if module else ""
    if isinstance(container, ast.Attribute) and isinstance(container.value, ast.Name) \
            and container.value.id not in ("self", "cls"):
        # ``for entry in ROSTER.jobs``: an attribute of a module-level object, here or imported
        owner = container.value.id
        if facts.imports.is_imported(owner):
            qualified = facts.imports.qualify_dotted(owner)
            return f"{qualified}.{container.attr}" if qualified else ""
        if owner in facts.cached("registries:module-names", _module_level_names):
            return f"{module}.{owner}.{container.attr}" if module else ""
        return ""
    own_self, cls = _instance_of(function, facts) if function is not None else (None, None)
    attribute = _container_of(container, own_self, cls, set())
    return f"{module}.{attribute}" if attribute and module else ""


def _fanned_out(facts: ModuleFacts, loops: List[ast.While], module: str) -> Iterator[Tuple[str, ast.While]]:
    """One loop per entry: ``[create_task(_loop(job)) for job in REGISTRY]`` (or a ``for`` statement, a thread
    per entry) hands each item to a def of this module whose never-ending loop calls that parameter
    (``await job.func()`` then a sleep): every entry is repeated, each by its own loop."""
    repeating = {id(loop) for loop in loops}
    owners = {}
    for loop in loops:
        function = facts.enclosing_function(loop)
        if function is not None and facts.enclosing_class(function) is None:
            owners.setdefault(function.name, []).append((function, loop))
    if not owners or not module:
        return
    for over in [n for n in facts.nodes if isinstance(n, (ast.For, ast.comprehension))]:
        if not isinstance(over.target, ast.Name):
            continue
        container = _iterated(over.iter)
        if not isinstance(container, ast.Name):
            continue
        qualified = facts.imports.qualify_dotted(container.id) if facts.imports.is_imported(container.id) \
            else f"{module}.{container.id}"
        # a ``for`` statement's body; a comprehension's whole expression (its element and conditions)
        scope = over.body if isinstance(over, ast.For) else [parent(over) or over]
        for node in (n for statement in scope for n in [statement, *walk_no_nested_functions(statement)]):
            handed = _handed_item(node, over.target.id, owners)
            if handed is None:
                continue
            name, index = handed
            for function, loop in owners[name]:
                parameters = positional_parameters(function)
                if index < len(parameters) and id(loop) in repeating and _calls_name(loop, parameters[index]):
                    yield qualified, loop


def _handed_item(node: ast.AST, item: str, owners: Dict[str, list]) -> Optional[Tuple[str, int]]:
    """(def name, position) when ``node`` runs a def of ``owners`` with ``item`` as a positional argument:
    ``_repeat(entry)`` (also inside ``create_task(...)``), or ``Thread(target=_repeat, args=(entry,))``."""
    if not isinstance(node, ast.Call):
        return None
    if isinstance(node.func, ast.Name) and node.func.id in owners:
        for index, argument in enumerate(node.args):
            if isinstance(argument, ast.Name) and argument.id == item:
                return node.func.id, index
    keywords = {k.arg: k.value for k in node.keywords if k.arg}
    target, arguments = keywords.get("target"), keywords.get("args")
    if isinstance(target, ast.Name) and target.id in owners and isinstance(arguments, (ast.Tuple, ast.List)):
        for index, argument in enumerate(arguments.elts):
            if isinstance(argument, ast.Name) and argument.id == item:
                return target.id, index
    return None


def _calls_name(loop: ast.While, name: str) -> bool:
    """The loop calls ``name`` or a part of it (``job()``, ``job.func()``, ``job["run"]()``)."""
    for node in walk_no_nested_functions(loop):
        if isinstance(node, ast.Call):
            func = node.func
            while isinstance(func, (ast.Attribute, ast.Subscript)):
                func = func.value
            if isinstance(func, ast.Name) and func.id == name:
                return True
    return False


def _module_names(facts: ModuleFacts) -> List[str]:
    """The names the module may be imported as, longest first."""
    from .bindings import own_module_names

    return sorted(own_module_names(facts), key=len, reverse=True)


def _module_name(facts: ModuleFacts) -> str:
    """One name of the module, for the containers its own loops read (compared through ``_spellings``)."""
    names = _module_names(facts)
    return names[0] if names else ""


#: Text a module that repeats a registry must hold, as the reading above accepts it: an endless ``while``, and a
#: ``for`` over a plain name (or a view or copy of it) whose target is then called, or a part of it.
_ENDLESS = re.compile(rb"while\s*\(?\s*(?:True\b|1\b|not\s+[\w.]+\.is_set\(\))")
_FOR_OVER_NAME = re.compile(
    rb"for\s+\(?\s*([A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*)\s*\)?\s+in\s+"
    rb"(?:(?:list|tuple|sorted|reversed)\(\s*)*(self\.)?([A-Za-z_][A-Za-z0-9_]*)(?:\.(?:values|items|copy)\(\s*\))*[\s)]*:")
#: How far after a ``for`` its body is looked for a call of the target (a loop body longer than this is rare).
_BODY_BYTES = 4000


#: How near an endless ``while`` the ``for`` over the container stands (in the loop, or in a small function of
#: the module the loop calls): far apart in a large module, they are two unrelated loops.
_NEAR_BYTES = 4000


def _may_repeat(source: bytes) -> bool:
    if not (b"sleep" in source or b".wait(" in source):
        return False
    loops = [match.start() for match in _ENDLESS.finditer(source)]
    if not loops:
        return False
    for match in _FOR_OVER_NAME.finditer(source):
        if not any(abs(match.start() - at) < _NEAR_BYTES for at in loops):
            continue
        owned, name = match.group(2) is not None, match.group(3)
        if owned and not _filled_here(b"self." + name, source):
            continue  # an attribute: the class that loops over it fills it, in this file
        if not owned and not (_module_level(name, source) and (_filled_here(name, source) or _imported(name, source))):
            continue
        for name in match.group(1).split(b","):
            called = _item_call(name.strip())
            if called.search(source, match.end(), match.end() + _BODY_BYTES) is not None:
                return True
    return _may_fan_out(source, loops)


#: ``for job in REGISTRY`` as a statement or a comprehension's clause (no colon after a comprehension's).
_FOR_IN_NAME = re.compile(
    rb"for\s+([A-Za-z_][A-Za-z0-9_]*)\s+in\s+(?:(?:list|tuple|sorted|reversed)\(\s*)*([A-Za-z_][A-Za-z0-9_]*)")


def _may_fan_out(source: bytes, loops: List[int]) -> bool:
    """``[create_task(_loop(job)) for job in REGISTRY]`` near an endless loop: each item handed to a call (the
    loop of its own, as ``_fanned_out`` reads it)."""
    for match in _FOR_IN_NAME.finditer(source):
        if not any(abs(match.start() - at) < _NEAR_BYTES for at in loops):
            continue
        item, name = match.group(1), match.group(2)
        if not (_module_level(name, source) and (_filled_here(name, source) or _imported(name, source))):
            continue
        handed = re.compile(rb"\(\s*" + re.escape(item) + rb"\s*[,)]")
        if handed.search(source, max(0, match.start() - _BODY_BYTES), match.end() + _BODY_BYTES) is not None:
            return True
    return False


def _module_level(name: bytes, source: bytes) -> bool:
    """``name`` is bound at the top of the module (``JOBS = []``, ``JOBS: list = []``) or imported."""
    binding = re.search(rb"(?m)^" + re.escape(name) + rb"\s*(?::[^=\n]*)?=", source)
    return binding is not None or _imported(name, source)


def _imported(name: bytes, source: bytes) -> bool:
    return any(spells(statement, name) for statement in import_statements(source))


def _filled_here(spelled: bytes, source: bytes) -> bool:
    """Something is put into ``spelled`` in this text: ``JOBS.append(``, ``self.jobs[name] =``, as
    ``stored_into`` reads a registration."""
    return re.search(rb"(?<![\w.])" + re.escape(spelled)
                     + rb"(?:\.(?:append|appendleft|add|insert|setdefault)\s*\(|\[[^\]\n]*\]\s*=[^=])",
                     source) is not None


_item_calls: Dict[bytes, "re.Pattern[bytes]"] = {}


def _item_call(name: bytes) -> "re.Pattern[bytes]":
    pattern = _item_calls.get(name)
    if pattern is None:
        pattern = _item_calls[name] = re.compile(
            rb"(?<![\w.])" + re.escape(name) + rb"(?:\.\w+|\[[^\]\n]*\])*\s*\(")
    return pattern


@dataclass(frozen=True)
class _LoopSite:
    line: int
    column: int
    path: str  # the loop's module
    home: str  # the module that defines the container


_loops_by_root: Dict[str, Dict[str, List[_LoopSite]]] = {}


def _project_root(config: Config, facts: Optional[ModuleFacts] = None) -> str:
    return config.root or (project.search_root(facts) if facts is not None else "")


def _loop_sites(config: Config, root: str) -> Dict[str, List[_LoopSite]]:
    """qualified container -> where loops repeat it, over the project: only the modules whose text may repeat
    a registry are parsed (once per project and process)."""
    cached = _loops_by_root.get(root)
    if cached is not None:
        return cached
    candidates = [path for path in project.files_mentioning("while", root) if _may_repeat(project.read_bytes(path))]
    found = _sites_of(candidates, config, repeated_in)
    _loops_by_root[root] = found
    return found


def _sites_of(candidates: List[str], config: Config, loops_of) -> Dict[str, List[_LoopSite]]:
    """qualified container -> the loops ``loops_of(facts)`` finds over it (``(container, loop, ...)``) in the
    candidate modules (the first ``_MAX_LOOP_FILES``, tests left out)."""
    found: Dict[str, List[_LoopSite]] = {}
    for path in candidates[:_MAX_LOOP_FILES]:
        facts = project.module_facts(path, config)
        if facts is None or facts.context.is_test:
            continue
        for container, loop, *_ in loops_of(facts):
            home = _home_of(container, facts)
            if home:
                found.setdefault(container, []).append(
                    _LoopSite(loop.lineno, loop.col_offset, os.path.abspath(path), home))
    return found


def loops_at_sites(spellings: Set[str], sites: Dict[str, List[_LoopSite]], facts: ModuleFacts, loops_of):
    """(what ``loops_of(module)`` finds for a loop, the loop's module) at each recorded site of the containers
    spelled ``spellings``, in modules other than ``facts``'s. Found by place: the index may have parsed the module
    again since the site was recorded."""
    for container in sorted(spellings & set(sites)):
        for site in sites[container]:
            loop_facts = project.module_facts(site.path, facts.config)
            if loop_facts is None or loop_facts is facts:
                continue
            for found in loops_of(loop_facts):
                name, loop = found[0], found[1]
                if name == container and (loop.lineno, loop.col_offset) == (site.line, site.column):
                    yield found, loop_facts


def _home_of(container: str, facts: ModuleFacts) -> str:
    """The file that defines ``container`` (qualified) as the loop's module sees it."""
    name = container.rpartition(".")[2]
    if not facts.imports.is_imported(name):
        return os.path.abspath(facts.context.path or "")
    located = definition_facts(container, facts)
    return os.path.abspath(located[0].context.path or "") if located is not None else ""


project.on_clear(_loops_by_root.clear)

def repeated_registry(relative: str, facts: ModuleFacts) -> Optional[RepeatedRegistry]:
    """The loop that calls the items of the container ``relative`` of ``facts``'s module (``JOBS``,
    ``Class.jobs``), when it runs in every replica: a loop of this module, else (CLI) one anywhere in the
    project, whatever name it imports the module by."""
    spellings = _spellings(relative, facts)
    candidates: List[Tuple[str, ast.While, ModuleFacts]] = [(name, loop, facts) for name, loop in repeated_in(facts)
                                                             if name in spellings]
    if facts.context.cross_file:
        sites = _loop_sites(facts.config, _project_root(facts.config, facts))
        candidates.extend((name, loop, loop_facts)
                          for (name, loop), loop_facts in loops_at_sites(spellings, sites, facts, repeated_in))
    for container, loop, loop_facts in candidates:
        where = runs(loop, loop_facts)
        if where.every_replica:
            return RepeatedRegistry(container, loop, loop_facts.enclosing_function(loop), loop_facts, where)
    from .scheduler_handoffs import handed_registry

    return handed_registry(spellings, facts)


def _registering_function(reference: ast.AST, qualified: str,
                          facts: ModuleFacts) -> Optional[Tuple[FunctionNode, ModuleFacts]]:
    """The def ``reference`` names: a function of this or another module of the project, or a method of a
    module-level instance (``tasks.routine`` with ``tasks = Tasks()``)."""
    if "." not in qualified:
        found = top_level(facts, qualified)
        return (found, facts) if isinstance(found, _FUNCTION_TYPES) else None
    local = facts.module_method(reference)
    if local is not None:
        return local, facts
    located = definition_facts(qualified, facts)
    if located is not None:
        found = top_level(located[0], located[1])
        if isinstance(found, _FUNCTION_TYPES):
            return found, located[0]
    owner, _, method = qualified.rpartition(".")
    located = definition_facts(owner, facts) if "." in owner else None
    if located is not None:
        where, instance = located
        found = where.module_method(ast.Attribute(value=ast.Name(id=instance, ctx=ast.Load()), attr=method))
        if found is not None:
            return found, where
    return None


# -- from a decorator or a registering call -----------------------------------------------------------------
def registration_of(expr: ast.AST, facts: ModuleFacts) -> Optional[RepeatedRegistry]:
    """``expr`` (a decorator, or the function of a call handed a job) puts the function it is given into a
    container a never-ending loop repeats: ``@periodic(seconds=60)`` (a factory whose returned function stores
    its parameter), ``@register`` or ``register(job)`` (a function that stores it)."""
    factory = isinstance(expr, ast.Call)
    reference = expr.func if factory else expr
    if not isinstance(reference, (ast.Name, ast.Attribute)):
        return None
    qualified = facts.qualify(reference) or ""
    if not qualified:
        return None
    if facts.context.cross_file and "." in qualified:
        # Another module's function is read only when the project's loops show it registers (most
        # decorators of a project are routes, properties and fixtures).
        spelled = qualified.rpartition(".")[2].encode()
        if spelled not in registering_words(facts.config, _project_root(facts.config, facts)):
            return None
    found = _registering_function(reference, qualified, facts)
    if found is None:
        return None
    function, where = found
    if factory:
        function = _returned_function(function)
        if function is None:
            return None
    container = stored_into(function, where)
    if container is None:
        return None
    return repeated_registry(container, where)


_words_by_root: Dict[str, Tuple[bytes, ...]] = {}
project.on_clear(_words_by_root.clear)


def registering_words(config: Config, root: str = "") -> Tuple[bytes, ...]:
    """The names of the project's functions that put a function into a repeated container (directly or as a
    decorator factory's returned function), for the prefilter: a file that uses one may hold a job."""
    root = root or _project_root(config)
    if not root:
        return ()
    cached = _words_by_root.get(root)
    if cached is None:
        cached = _words_by_root[root] = _registering_words(config, root)
    return cached


def _registering_words(config: Config, root: str) -> Tuple[bytes, ...]:
    words: Set[bytes] = set()
    from .scheduler_handoffs import handing_sites

    repeated = list(_loop_sites(config, root).items()) + list(handing_sites(config, root).items())
    for container, sites in repeated:
        for home in {site.home for site in sites}:
            facts = project.module_facts(home, config)
            if facts is None:
                continue
            name = _relative(container, facts)
            words.update(function.name.encode() for function in _defined_functions(facts)
                         if _stores_into(function, facts, name))
    return tuple(sorted(words))


def registering_names(facts: ModuleFacts) -> Set[str]:
    """Names a call of this module may register a job by: the project's registering functions (CLI), and this
    module's own functions that put a function into a container a loop of this module repeats."""
    names = {word.decode() for word in registering_words(facts.config, _project_root(facts.config, facts))} \
        if facts.context.cross_file else set()
    modules = _module_names(facts)
    from .scheduler_handoffs import handed_in

    containers = [container for container, _ in repeated_in(facts)] + [c for c, _, _ in handed_in(facts)]
    local = {_relative(container, facts) for container in containers
             if any(container.startswith(module + ".") for module in modules)}
    names.update(function.name for function in _defined_functions(facts) for name in local
                 if _stores_into(function, facts, name))
    return names


def repeats_a_registry(loop: ast.AST, facts: ModuleFacts) -> bool:
    """``loop`` calls the items of a container that a function of the project registers jobs into: the jobs are
    judged one by one where they are registered, not the loop as one job."""
    return any(repeated is loop and filled_by_registrations(container, facts)
               for container, repeated in repeated_in(facts))


def filled_by_registrations(container: str, facts: ModuleFacts) -> bool:
    """A function of the project puts the functions it is handed into ``container`` (qualified, as ``facts``'s
    module spells it): a registry, whose jobs are judged one by one where they are registered."""
    home = facts if not facts.imports.is_imported(_relative(container, facts).split(".")[0]) else (
        definition_facts(container, facts) or (None,))[0]
    if home is None:
        return False
    name = _relative(container, home)
    return any(_stores_into(function, home, name) for function in _defined_functions(home))
