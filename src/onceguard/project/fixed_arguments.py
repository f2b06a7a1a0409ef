"""What the callers of a function hand its parameters: a helper keyed on a parameter (``def wait_for(conn, key)``)
is as job-wide as the keys its callers pass. The callers are the calls of its own module (by name, or through a
module-level instance) and, reading the project, those of other modules; a caller that only passes its own
parameter on (``def _hold(c, k): return wait_for(c, k)``) is followed up to what its callers pass."""
from __future__ import annotations

import ast
from typing import Callable, List, Optional, Tuple

from ..analysis.facts import ModuleFacts, ancestors, parent
from ..analysis.handed import argument_for, parameter_defaults, parameter_names

#: How many callers that pass their own parameter on are followed up.
_MAX_FORWARDS = 3

Call = Tuple[ast.Call, ModuleFacts]


def fixed_at_callers(function: ast.AST, names: List[str], facts: ModuleFacts,
                     is_fixed: Callable[[List[ast.AST], ModuleFacts], bool],
                     left_out: Callable[[ast.Call, ModuleFacts], bool], depth: int = 0) -> Optional[List[Call]]:
    """The calls that run ``function`` with values ``is_fixed`` accepts for its parameters ``names``, less those
    ``left_out`` sets aside (tests always are); None when a caller hands a value of its own making, or when no
    caller is seen."""
    if depth > _MAX_FORWARDS:
        return None
    seen = callers_of(function, facts)
    found: List[Call] = []
    for call, other in seen:
        if other.context.is_test:
            continue
        arguments = [argument_for(call, function, name) for name in names]
        if any(argument is None for argument in arguments):
            return None
        if not is_fixed(arguments, other):
            caller = other.enclosing_function(call)
            own = set(parameter_names(caller, receiver=False)) if caller is not None else set()
            if caller is None or not all(isinstance(a, ast.Name) and a.id in own for a in arguments):
                return None
            outer = fixed_at_callers(caller, [a.id for a in arguments], other, is_fixed, left_out, depth + 1)
            if outer is None:
                return None
            found.extend(outer)
            continue
        if not left_out(call, other):
            found.append((call, other))
    return found if seen else None


def ruled_out_for(call: ast.Call, function: ast.AST, node: ast.AST) -> bool:
    """``node`` (in ``function``'s body) sits in a branch on one of its parameters (``if wait:``, ``if not
    nowait:``, the ``else`` of ``if skip:``) that the constant ``call`` hands it, or the default it leaves, never
    takes: that call does not run ``node``."""
    child = node
    for above in ancestors(node):
        if above is function:
            return False
        if isinstance(above, ast.If):
            in_body = any(s is child for s in above.body)
            if in_body or any(s is child for s in above.orelse):
                truth = _parameter_truth(above.test, call, function)
                if truth is not None and truth is not in_body:
                    return True
        child = above
    return False


def _parameter_truth(test: ast.AST, call: ast.Call, function: ast.AST) -> Optional[bool]:
    """Whether ``test`` holds for ``call``, when it reads one parameter (``wait``, ``not wait``) and the call
    hands it a constant, or leaves it its constant default; None when that cannot be told."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        truth = _parameter_truth(test.operand, call, function)
        return None if truth is None else not truth
    if not isinstance(test, ast.Name) or test.id not in parameter_names(function):
        return None
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    value = argument_for(call, function, test.id)
    if value is None:
        value = parameter_defaults(function).get(test.id)
    return bool(value.value) if isinstance(value, ast.Constant) else None


def named_in_few_files(function: ast.AST, facts: ModuleFacts, most: int) -> bool:
    """At most ``most`` files of the project (its own included) mention ``function``'s name. A name many files
    use is a library's shared helper, not one flow's: reading its callers is the dearest question a run asks,
    and what they hand it is everyone's."""
    from . import index as project_index

    return len(project_index.files_mentioning(function.name, project_index.search_root(facts))) <= most  # type: ignore[attr-defined]


def callers_of(function: ast.AST, facts: ModuleFacts) -> List[Call]:
    """The calls of this module that name ``function``, or reach it as a method of a module-level instance
    (``locks.hold(conn, KEY)``); then, reading the project, the callers in other modules."""
    from .renamed_callers import project_callers

    seen = [(call, facts) for call in facts.calls_by_name.get(function.name, ())  # type: ignore[attr-defined]
            if facts.enclosing_function(call) is not function
            and ((isinstance(call.func, ast.Name) and parent(function) is facts.tree)
                 or facts.module_method(call.func) is function)]
    if facts.context.cross_file:
        known = {id(call) for call, _ in seen}
        seen += [(call, other) for call, other in project_callers(function, facts) if id(call) not in known]
    return seen
