"""What a name holds where a call uses it, when the name is not the value itself but a slot filled elsewhere.

``def _register(scheduler, func, trigger): scheduler.add_job(func, trigger)`` schedules whatever its callers
hand it, and ``for func, trigger in JOBS: _register(scheduler, func, trigger)`` hands it each row of ``JOBS``.
To know what is scheduled, the parameter is followed to the arguments of the callers, and a loop variable to
the items of the literal container the loop reads. Names read together (the job and its trigger) are followed
together, so each case keeps the values that belong to one another (one caller, one row).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from ..analysis.facts import ModuleFacts, ancestors, parent
from ..analysis.handed import argument_for, parameter_names, unwrapped
from ..model import Related
from .fixed_arguments import callers_of

#: How many hand-offs (a caller passing its own parameter or loop variable on) are followed.
_MAX_DEPTH = 3
#: Cases beyond this many are not listed: a name filled from so many places is a general-purpose helper's.
_MAX_CASES = 40
_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
#: Views and copies of a container whose items a loop reads as the container's own (``for name, job in
#: JOBS.items()``, ``list(JOBS)``): the loop reads ``JOBS``.
_VIEWS = frozenset({"values", "items", "copy"})
_COPIES = frozenset({"list", "tuple", "sorted", "reversed"})


@dataclass
class Case:
    """One way the names are filled: what each holds, the module those expressions are written in, and the
    places that show how they get there (a call site, a row of a table)."""

    values: Dict[str, ast.AST]
    facts: ModuleFacts
    via: List[Related] = field(default_factory=list)


def cases_of(names: Sequence[str], at: ast.AST, facts: ModuleFacts, depth: int = 0) -> Optional[List[Case]]:
    """The cases of what ``names``, read at ``at``, hold: each a parameter of the enclosing function (followed to
    every caller the project shows) or a variable of a ``for`` around ``at`` over a literal container (followed
    to each item). None when a name is neither, when they are of different kinds, or when no case is seen."""
    if depth > _MAX_DEPTH or not names:
        return None
    function = facts.enclosing_function(at)
    loop = _loop_binding(names, at, function)
    if loop is not None:
        return _items(names, loop, facts, depth)
    if function is not None and all(name in parameter_names(function) for name in names):
        return _callers(names, function, facts, depth)
    return None


def _loop_binding(names: Sequence[str], at: ast.AST, function: Optional[ast.AST]) -> Optional[ast.For]:
    """The innermost ``for`` around ``at`` (inside its function) whose target binds every one of ``names``."""
    node = parent(at)
    while node is not None and node is not function and not isinstance(node, (ast.ClassDef, ast.Module)):
        if isinstance(node, (ast.For, ast.AsyncFor)):
            bound = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
            if all(name in bound for name in names):
                return node  # type: ignore[return-value]
            if bound & set(names):
                return None  # some of them bound here, some elsewhere: not one row
        node = parent(node)
    return None


def _items(names: Sequence[str], loop: ast.For, facts: ModuleFacts, depth: int) -> Optional[List[Case]]:
    found = _literal_anywhere(iterated(loop.iter), facts)
    if found is None:
        return None
    # (the items are read in the module that writes them out: their names are that module's)
    container, facts = found
    items: List[ast.AST]
    if isinstance(container, ast.Dict):
        view = loop.iter.func.attr if (isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Attribute)) else ""
        if view == "items":
            items = [ast.Tuple(elts=[k, v], ctx=ast.Load()) for k, v in zip(container.keys, container.values)
                     if k is not None]
        elif view == "values":
            items = list(container.values)
        else:
            items = [k for k in container.keys if k is not None]
    else:
        items = list(container.elts)
    cases: List[Case] = []
    for item in items[:_MAX_CASES]:
        bound: Dict[str, ast.AST] = {}
        if not _unpack(loop.target, item, bound) or not all(name in bound for name in names):
            continue
        where = Related(facts.context.path, item.lineno, item.col_offset + 1, "one of the items the loop hands on") \
            if hasattr(item, "lineno") else None
        cases.append(Case({name: bound[name] for name in names}, facts, [where] if where else []))
    return cases or None


def iterated(expr: ast.AST) -> ast.AST:
    """The container a ``for`` reads: ``JOBS`` of ``JOBS.values()``, ``list(JOBS)``, ``sorted(JOBS.items())``."""
    while True:
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in _VIEWS \
                and not expr.args:
            expr = expr.func.value
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in _COPIES \
                and len(expr.args) == 1:
            expr = expr.args[0]
        else:
            return expr


def _literal(expr: ast.AST, facts: ModuleFacts) -> Optional[ast.AST]:
    """A list, tuple, set or dict written out, directly or as the one value a module-level name is given."""
    if isinstance(expr, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
        return expr
    if not isinstance(expr, ast.Name):
        return None
    values = []
    for statement in facts.tree.body:
        if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == expr.id
                                                     for t in statement.targets):
            values.append(statement.value)
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) \
                and statement.target.id == expr.id and statement.value is not None:
            values.append(statement.value)
    if len(values) == 1 and isinstance(values[0], (ast.List, ast.Tuple, ast.Set, ast.Dict)):
        return values[0]
    return None


def _literal_anywhere(expr: ast.AST, facts: ModuleFacts) -> Optional[Tuple[ast.AST, ModuleFacts]]:
    """``_literal`` in this module or, on the command line, in the project module a name is imported from
    (``from app.jobs.registry import JOBS``): the container and the module that writes it out."""
    container = _literal(expr, facts)
    if container is not None:
        return container, facts
    if not (isinstance(expr, ast.Name) and facts.context.cross_file and facts.imports.is_imported(expr.id)):
        return None
    from .definitions import definition_facts

    qualified = facts.qualify(expr) or ""
    found = definition_facts(qualified, facts) if "." in qualified else None
    if found is None or found[0] is facts or found[0].context.is_test:
        return None
    home, name = found
    container = _literal(ast.Name(id=name, ctx=ast.Load()), home)
    return (container, home) if container is not None else None


def _unpack(target: ast.AST, item: ast.AST, bound: Dict[str, ast.AST]) -> bool:
    """Binds the names of a ``for`` target to the parts of one written-out item; False when the shapes differ."""
    if isinstance(target, ast.Name):
        bound[target.id] = item
        return True
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(item, (ast.Tuple, ast.List)):
        if any(isinstance(t, ast.Starred) for t in target.elts) or len(target.elts) != len(item.elts):
            return False
        return all(_unpack(t, i, bound) for t, i in zip(target.elts, item.elts))
    return False


def _callers(names: Sequence[str], function: ast.AST, facts: ModuleFacts, depth: int) -> Optional[List[Case]]:
    cases: List[Case] = []
    for call, other in callers_of(function, facts):
        if other.context.is_test:
            continue
        arguments = {name: argument_for(call, function, name) for name in names}
        if any(value is None for value in arguments.values()):
            continue  # (a default, or the value behind a ``*args``: not a value this caller shows)
        where = Related(other.context.path, call.lineno, call.col_offset + 1,
                        f"`{getattr(function, 'name', '')}` is called here")
        passed_on = [name for name, value in arguments.items() if isinstance(value, ast.Name)
                     and _fills_slot(value, call, other)]
        if not passed_on:
            cases.append(Case(dict(arguments), other, [where]))
        else:
            inner = cases_of([arguments[name].id for name in passed_on], call, other, depth + 1)  # type: ignore[attr-defined]
            for case in inner or ():
                values = dict(arguments)
                for name in passed_on:
                    values[name] = case.values[arguments[name].id]  # type: ignore[attr-defined]
                cases.append(Case(values, case.facts, [where, *case.via]))
        if len(cases) >= _MAX_CASES:
            break
    return cases or None


def _fills_slot(name: ast.Name, at: ast.AST, facts: ModuleFacts) -> bool:
    """The name is itself a slot the caller's own callers or loop fill: a parameter or a ``for`` variable."""
    function = facts.enclosing_function(at)
    if function is not None and name.id in parameter_names(function):
        return True
    return _loop_binding([name.id], at, function) is not None


def constructor_handed(call: ast.Call, facts: ModuleFacts) -> List[Tuple[ast.AST, ModuleFacts]]:
    """What ``self.job(...)`` calls, ``self.job`` being set in the class's ``__init__`` from one of its
    parameters (``self.job = job``): the argument each construction of the class hands that parameter
    (``DailyTicker(8, partial(run_report, app))``, found in the project on the command line), a
    ``functools.partial`` or a lambda read as the function it runs.  Empty when a construction does not say."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
        return []
    cls = next((a for a in ancestors(call) if isinstance(a, ast.ClassDef)), None)
    init = next((s for s in cls.body if isinstance(s, _FUNCTION_TYPES) and s.name == "__init__"), None) \
        if cls is not None else None
    if init is None:
        return []
    kept = [n.value.id for n in ast.walk(init) if isinstance(n, ast.Assign) and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Attribute) and isinstance(n.targets[0].value, ast.Name)
            and n.targets[0].value.id == "self" and n.targets[0].attr == func.attr and isinstance(n.value, ast.Name)]
    if len(kept) != 1 or kept[0] not in parameter_names(init, receiver=False):
        return []
    handed = []
    for made, where in callers_of(init, facts):
        value = unwrapped(argument_for(made, init, kept[0]), where)
        if value is None:
            return []
        handed.append((value, where))
    return handed
