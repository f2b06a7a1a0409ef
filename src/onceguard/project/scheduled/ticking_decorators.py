"""A project's own ``repeat_every``: a decorator whose def keeps, in a def nested in it, a loop that calls the
function it is handed and sleeps, with no way out but an error (a retry decorator returns the first result), or
a timer that calls it and arms itself again (``threading.Timer(seconds, tick)`` with ``tick`` calling the function
and then arming the next timer).  Calling the decorated name starts the loop, or applying the decorator arms the
first timer; the decorated function is a ticker's job."""
from __future__ import annotations

import ast
from typing import Optional

from ...analysis.facts import FunctionNode, ModuleFacts, ancestors, walk_no_nested_functions
from ...analysis.handed import positional_parameters
from ...knowledge import schedulers as known

_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)

#: What the module of a decorator that starts a ticker says: it sleeps between the calls of its loop.
TICKING_WORDS = (b"sleep(", b"Timer(", b"call_later(")


def loop_repeating(applied: FunctionNode, handed: str, facts: ModuleFacts) -> Optional[ast.While]:
    """A ``while`` loop, in a def nested in ``applied``, that calls ``handed`` (``await func()``, or hands it to a
    runner: ``await run_in_threadpool(func)``) and sleeps (``await asyncio.sleep(seconds)``)."""
    for node in ast.walk(applied):
        if node is applied or not isinstance(node, _FUNCTION_TYPES):
            continue
        own = set(positional_parameters(node)) | {a.arg for a in node.args.kwonlyargs}
        if handed in own:
            continue  # (a nested def of its own with that parameter name: another function)
        for loop in walk_no_nested_functions(node):
            if not isinstance(loop, ast.While):
                continue
            calls = [n for n in walk_no_nested_functions(loop) if isinstance(n, ast.Call)]
            runs = any((isinstance(c.func, ast.Name) and c.func.id == handed)
                       or any(isinstance(a, ast.Name) and a.id == handed for a in c.args) for c in calls)
            if runs and any((facts.callee(c) or "") in known.SLEEPS for c in calls) and _runs_on(loop):
                return loop
    return None


def _runs_on(loop: ast.While) -> bool:
    """The loop has no way out but an error or its condition: no ``return``, and no ``break`` of its own (a
    retry loop returns the first result that comes back; a ticker goes on)."""
    for node in walk_no_nested_functions(loop):
        if isinstance(node, ast.Return):
            return False
        if isinstance(node, ast.Break):
            inner = next((above for above in ancestors(node) if isinstance(above, (ast.While, ast.For, ast.AsyncFor))),
                         None)
            if inner is loop:
                return False
    return True


def timer_repeating(applied: FunctionNode, handed: str, facts: ModuleFacts) -> Optional[ast.Call]:
    """A timer made in ``applied`` (or a def nested in it) whose callback, a def nested there, calls ``handed`` and
    arms a timer again (itself, or through another nested def that makes the timer): the timer call."""
    nested = {node.name: node for node in ast.walk(applied) if node is not applied and isinstance(node, _FUNCTION_TYPES)}
    for timer in ast.walk(applied):
        if not isinstance(timer, ast.Call):
            continue
        callback = timer_callback(timer, facts)
        if not isinstance(callback, ast.Name) or callback.id not in nested:
            continue
        target = nested[callback.id]
        calls = [n for n in walk_no_nested_functions(target) if isinstance(n, ast.Call)]
        runs = any(isinstance(c.func, ast.Name) and c.func.id == handed for c in calls)
        maker = _def_around(timer, nested)
        again = any(c is timer for c in calls) or (maker is not None and any(
            isinstance(c.func, ast.Name) and c.func.id == maker.name for c in calls))
        if runs and again:
            return timer
    return None


def timer_callback(call: ast.Call, facts: ModuleFacts) -> Optional[ast.AST]:
    """What a timer calls when it fires: ``threading.Timer(interval, function)``, ``loop.call_later(delay,
    callback)`` (and the other delayed calls); None for any other call."""
    if (facts.callee(call) or "") in known.TIMER_CLASSES:
        return call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "function"),
                                                              None)
    if isinstance(call.func, ast.Attribute) and call.func.attr in known.DELAYED_CALL_METHODS:
        position = known.DELAYED_CALL_METHODS[call.func.attr]
        return call.args[position] if len(call.args) > position else None
    return None


def _def_around(node: ast.AST, nested: dict) -> Optional[FunctionNode]:
    for above in ancestors(node):
        if isinstance(above, _FUNCTION_TYPES):
            return above if nested.get(above.name) is above else None
    return None
