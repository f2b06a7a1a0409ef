"""Callables handed to a call that runs them: ``asyncio.to_thread(upgrade)``, ``pool.submit(partial(sync, x))``,
``threading.Thread(target=collector.run_forever)``, ``run_in_threadpool(lambda: upgrade())``.

Such a call runs the callable in the process that makes it: for where code runs, and for what a job does, the
site is a call of the callable (``knowledge.runners`` lists the runners and the wrappers).
"""
from __future__ import annotations

import ast
from typing import Dict, List, Optional, Tuple

from ..knowledge import runners as known
from .facts import IMPORTED_NAME, ModuleFacts, parent

_REFERENCES = (ast.Name, ast.Attribute)
_MAX_UNWRAP = 4


def handed_value(call: ast.Call, facts: ModuleFacts, qualified: Optional[str] = None,
                 helpers: bool = True) -> Optional[ast.AST]:
    """The expression a runner call is handed as the callable to run (``pool.submit(fn, x)`` -> ``fn``), as
    written: a name, a wrapper call or a lambda; None when ``call`` runs no callable it is handed.  A function
    of the module that hands its parameter to a runner (``def in_thread(fn): return loop.run_in_executor(None,
    fn)``) is a runner too."""
    if qualified is None:
        qualified = facts.callee(call) or ""
    slot = known.RUNNER_FUNCTIONS.get(qualified)
    if slot is None and isinstance(call.func, ast.Attribute):
        slot = known.RUNNER_METHODS.get(call.func.attr)
    if slot is None and helpers and isinstance(call.func, ast.Name):
        slot = runner_helpers(facts).get(call.func.id)
    if slot is None:
        return None
    position, keyword = slot
    return call_argument(call, position, keyword)


def call_argument(call: ast.Call, position: Optional[int], keyword: Optional[str]) -> Optional[ast.AST]:
    """The argument a call passes by ``keyword``, else at ``position`` (none when a ``*args`` comes first)."""
    if keyword:
        for item in call.keywords:
            if item.arg == keyword:
                return item.value
    if position is not None and len(call.args) > position and not any(
            isinstance(a, ast.Starred) for a in call.args[:position + 1]):
        return call.args[position]
    return None


def positional_parameters(function: ast.AST) -> List[str]:
    """A def's positional parameter names, without the ``self``/``cls`` a method is called through."""
    arguments = function.args  # type: ignore[attr-defined]
    names = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
    return names[1:] if names and names[0] in ("self", "cls") else names


def parameter_names(function: ast.AST, receiver: bool = True) -> List[str]:
    """A def's parameters a call can name (positional and keyword-only); ``receiver=False`` leaves out the
    ``self``/``cls`` a method is called through."""
    arguments = function.args  # type: ignore[attr-defined]
    positional = ([a.arg for a in (*arguments.posonlyargs, *arguments.args)] if receiver
                  else positional_parameters(function))
    return positional + [a.arg for a in arguments.kwonlyargs]


def parameter_defaults(function: ast.AST) -> Dict[str, ast.AST]:
    """A def's parameters that have a default -> that default, as written in the def."""
    arguments = function.args  # type: ignore[attr-defined]
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults = {a.arg: d for a, d in zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults)}
    defaults.update({a.arg: d for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None})
    return defaults


def closed_over_parameter(inner: ast.AST, outer: ast.AST, calls: List[ast.Call]) -> Optional[str]:
    """The one positional parameter of ``outer`` that ``calls`` (calls made in ``inner``, a def nested in it) call
    by name, ``inner``'s own parameters aside: a wrapper or a loop runs what ``outer`` was handed
    (``def every(m): def deco(func): def runner(): func()``); None when it calls none, or several."""
    own = set(positional_parameters(inner)) | {a.arg for a in inner.args.kwonlyargs}  # type: ignore[attr-defined]
    handed = set(positional_parameters(outer)) - own
    called = {call.func.id for call in calls if isinstance(call.func, ast.Name) and call.func.id in handed}
    return called.pop() if len(called) == 1 else None


def argument_for(call: ast.Call, function: ast.AST, parameter: str) -> Optional[ast.AST]:
    """The argument ``call`` gives ``function``'s ``parameter``: by keyword, else at its position."""
    positional = positional_parameters(function)
    return call_argument(call, positional.index(parameter) if parameter in positional else None, parameter)


def switched_on(call: ast.Call, *names: str) -> bool:
    """Some keyword of ``call`` among ``names`` is given anything but a false literal (``incr=True``,
    ``with_for_update=flag``; not ``ignore_conflicts=False``)."""
    return any(keyword.arg in names and not (isinstance(keyword.value, ast.Constant) and not keyword.value.value)
               for keyword in call.keywords)


def unwrapped(value: Optional[ast.AST], facts: ModuleFacts) -> Optional[ast.AST]:
    """The function a handed value runs, as a name or a dotted reference: ``fn`` for ``fn``, for
    ``functools.partial(fn, x)`` and for ``lambda: fn(x)``; None when it is none of these."""
    for _ in range(_MAX_UNWRAP):
        if isinstance(value, _REFERENCES):
            return value
        if isinstance(value, ast.Lambda):
            body = value.body.value if isinstance(value.body, ast.Await) else value.body
            value = body.func if isinstance(body, ast.Call) else None
            continue
        if isinstance(value, ast.Call):
            position = known.WRAPPERS.get(facts.callee(value) or "")
            if position is None or len(value.args) <= position or any(
                    isinstance(a, ast.Starred) for a in value.args[:position + 1]):
                return None
            value = value.args[position]
            continue
        return None
    return None


def handed_callable(call: ast.Call, facts: ModuleFacts, qualified: Optional[str] = None) -> Optional[ast.AST]:
    """The function ``call`` runs because it is handed to it (see ``handed_value`` and ``unwrapped``), or the
    one a wrapper called at once runs (``await sync_to_async(fn)()`` -> ``fn``); None otherwise."""
    func = call.func
    if isinstance(func, ast.Call):
        return unwrapped(func, facts)
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if (qualified is None and name not in _SITE_NAME_SET and getattr(call, IMPORTED_NAME, None) not in _SITE_NAME_SET
            and name not in runner_helpers(facts)):
        return None  # (asked of every call on the way: the name alone rules most out)
    value = handed_value(call, facts, qualified)
    return unwrapped(value, facts) if value is not None else None


#: The names runners are called by (``to_thread``, ``submit``, ``Thread``).
_SITE_NAMES = tuple(sorted({name.rsplit(".", 1)[-1] for name in known.RUNNER_FUNCTIONS}
                           | set(known.RUNNER_METHODS)))
_SITE_NAME_SET = frozenset(_SITE_NAMES)


def handed_sites(facts: ModuleFacts) -> Dict[str, List[Tuple[ast.Call, ast.AST]]]:
    """Last name of the function (``upgrade_to_head`` for ``schema.upgrade_to_head``) -> (the call that runs
    it, the reference) for each function this module hands to a runner, or wraps and calls at once.  A lambda
    handed to a runner is left out: the call in its body is an ordinary call of the function."""
    return facts.cached("handed-sites", _build_sites)


def _build_sites(facts: ModuleFacts) -> Dict[str, List[Tuple[ast.Call, ast.AST]]]:
    found: Dict[str, List[Tuple[ast.Call, ast.AST]]] = {}

    def add(site: ast.Call, reference: Optional[ast.AST]) -> None:
        if isinstance(reference, _REFERENCES):
            name = reference.attr if isinstance(reference, ast.Attribute) else reference.id
            found.setdefault(name, []).append((site, reference))

    for call in facts.calls_named(*_SITE_NAMES, *sorted(runner_helpers(facts))):
        value = handed_value(call, facts)
        if value is not None and not isinstance(value, ast.Lambda):
            add(call, unwrapped(value, facts))
    for wrapper in known.WRAPPERS:
        for call in facts.calls_named(wrapper.rsplit(".", 1)[-1]):
            outer = parent(call)
            if isinstance(outer, ast.Call) and outer.func is call:
                add(outer, unwrapped(call, facts))
    return found


def runner_helpers(facts: ModuleFacts) -> Dict[str, known.Slot]:
    """The module's own top-level functions that hand one of their parameters to a runner, by name, with
    that parameter's place (``def run_blocking(fn, *args): return loop.run_in_executor(None, fn, *args)``)."""
    return facts.cached("handed-helpers", _build_helpers)


def _build_helpers(facts: ModuleFacts) -> Dict[str, known.Slot]:
    found: Dict[str, known.Slot] = {}
    top = {id(node) for node in facts.tree.body}
    for call in facts.calls_named(*_SITE_NAMES):
        reference = unwrapped(handed_value(call, facts, helpers=False), facts)
        if not isinstance(reference, ast.Name):
            continue
        function = facts.enclosing_function(call)
        if function is None or id(function) not in top:
            continue
        arguments = function.args
        positional = [a.arg for a in arguments.posonlyargs + arguments.args]
        if reference.id in positional:
            found.setdefault(function.name, (positional.index(reference.id), reference.id))
        elif reference.id in {a.arg for a in arguments.kwonlyargs}:
            found.setdefault(function.name, (None, reference.id))
    return found
