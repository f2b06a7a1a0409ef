"""How a loop ends: by the process stopping (a shutdown event, a stop flag flipped from outside) or on its
own (its work reported done, a deadline passed).  A loop that only the process's stop ends is a ticker's; one
that leaves by itself retries a step until it is done."""
from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from ..analysis.facts import ancestors
from ..analysis.names import dotted


def _stop_event(test: ast.AST) -> Optional[str]:
    """``stop`` of a ``not stop.is_set()`` loop test, or of ``not stop.wait(600)`` (a pause that ends early
    when the event is set) (``self._stop`` as written), else None."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.Call):
        func = test.operand.func
        if isinstance(func, ast.Attribute) and (
                (func.attr == "is_set" and not test.operand.args) or func.attr in _EVENT_WAITS):
            return dotted(func.value)
    return None


#: An event's wait: it returns whether the event was set, so ``while not stop.wait(n)`` ends on shutdown.
_EVENT_WAITS = frozenset({"wait"})


def _stop_flag(loop: ast.While) -> Optional[str]:
    """``running`` of ``while running:`` / ``while not self.stopped:``, when the flag is only ever given ``True``
    or ``False`` (a module or class attribute flipped by a signal handler or a ``stop()`` method), else None."""
    test = loop.test.operand if isinstance(loop.test, ast.UnaryOp) and isinstance(loop.test.op, ast.Not) else loop.test
    flag = dotted(test) if isinstance(test, ast.Name) or (
        isinstance(test, ast.Attribute) and isinstance(test.value, ast.Name) and test.value.id in ("self", "cls")) else None
    if flag is None:
        return None
    scope = next((a for a in ancestors(loop) if isinstance(a, ast.ClassDef)), None) if "." in flag else None
    scope = scope or next((a for a in ancestors(loop) if isinstance(a, ast.Module)), None)
    if scope is None:
        return None
    values = [statement.value for statement in ast.walk(scope)
              if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign))
              and any(dotted(target) == flag for target in
                      (statement.targets if isinstance(statement, ast.Assign) else [statement.target]))]
    if not values or not all(isinstance(v, ast.Constant) and isinstance(v.value, bool) for v in values):
        return None
    return flag


def endless(loop: ast.While) -> bool:
    """A loop that runs until the process stops: ``while True:`` (any constant true test); ``while not
    stop.is_set():`` on an event only something outside the loop sets (a shutdown signal); or ``while running:``
    on a flag only ever set to ``True`` or ``False`` that the loop itself does not set — that no ``break`` or
    ``return`` of its own leaves (nor a ``stop.set()`` of its own)."""
    stop = _stop_event(loop.test)
    flag = _stop_flag(loop) if stop is None and not isinstance(loop.test, ast.Constant) else None
    if not (isinstance(loop.test, ast.Constant) and loop.test.value) and stop is None and flag is None:
        return False
    return not _leaves_by_itself(loop, stop, flag)


def leaves_on_its_own(loop: ast.While) -> bool:
    """The loop's own body leaves it when its work is done (a ``break`` or ``return`` other than a shutdown
    exit: its work reported done, a deadline passed), whatever its test reads.  Leaving from an ``except``
    handler (the pass failed, the task was cancelled) is giving up, not being done."""
    stop = _stop_event(loop.test)
    flag = _stop_flag(loop) if stop is None and not isinstance(loop.test, ast.Constant) else None
    return _leaves_by_itself(loop, stop, flag, failures_count=False)


def _leaves_by_itself(loop: ast.While, stop: Optional[str], flag: Optional[str],
                      failures_count: bool = True) -> bool:
    pending: List[Tuple[ast.AST, ast.AST]] = [(statement, loop) for statement in loop.body]
    while pending:
        node, above = pending.pop()
        if not failures_count and isinstance(node, ast.ExceptHandler):
            continue
        if isinstance(node, (ast.Break, ast.Return)):
            if _shutdown_exit(node, above, loop):
                continue  # leaves only when the process is told to stop, as ``while not stop.is_set()`` does
            if _fixed_before_loop(node, above, loop):
                continue  # ``if options["once"]: return``: one pass when asked, else no way out
            return True
        if stop is not None and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "set" and dotted(node.func.value) == stop:
            return True
        if flag is not None and isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and any(
                dotted(target) == flag for target in (node.targets if isinstance(node, ast.Assign) else [node.target])):
            return True
        if not isinstance(node, (ast.While, ast.For, ast.AsyncFor, ast.FunctionDef, ast.AsyncFunctionDef,
                                 ast.ClassDef, ast.Lambda)):
            pending.extend((child, node) for child in ast.iter_child_nodes(node))
    return False


def _fixed_before_loop(leave: ast.AST, above: ast.AST, loop: ast.While) -> bool:
    """``if options["once"]: return`` / ``if run_once: break``: the test reads only values nothing in the loop
    changes (a command's option, a parameter) and calls nothing, so the loop leaves after its first pass or
    never: a run-once switch, not a way for the work to end."""
    if not isinstance(above, ast.If) or not any(statement is leave for statement in above.body):
        return False
    names = set()
    for node in ast.walk(above.test):
        if isinstance(node, (ast.Call, ast.Await, ast.NamedExpr)):
            return False
        if isinstance(node, ast.Name):
            names.add(node.id)
    if not names:
        return False
    # (any binding of one of them in the loop: an assignment, a loop or ``with`` target, a walrus)
    return not any(isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and node.id in names
                   for node in ast.walk(loop))


def _shutdown_exit(leave: ast.AST, above: ast.AST, loop: ast.While) -> bool:
    """``if stop.wait(60): break`` / ``if stop.is_set(): return``: the pass's pause (or a look) on an event that
    only something outside the loop sets -- a shutdown signal -- is the only way out."""
    if not isinstance(above, ast.If) or not any(statement is leave for statement in above.body):
        return False
    test = above.test.value if isinstance(above.test, ast.Await) else above.test
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute)
            and test.func.attr in ("wait", "is_set")):
        return False
    event = dotted(test.func.value)
    return event is not None and not any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "set"
        and dotted(node.func.value) == event for node in ast.walk(loop))
