"""Where a hand-written rate limiter's "no" becomes a refusal of the request (429), and who asks the limiter.

A module-level limiter is a rate limit only when the code that asks it refuses the request as "too many": in
the function that asks (``abort(429)``, ``return body, 429``), in a function it hands the limiter to, in a caller
acting on a yes-or-no answer, or in a handler of the exception the function raises on the no (``except
TooManyResends: return ..., 429``, ``@app.errorhandler(TooManyResends)``).  The functions that ask are this
module's and, reading the project, those of the modules that import the limiter.
"""
from __future__ import annotations

import ast
from typing import Dict, List, Optional, Tuple

from ..analysis.facts import FunctionNode, ModuleFacts, ancestors, parent, walk, walk_no_nested_functions
from ..analysis.names import dotted
from ..knowledge import process_local as known
from ..project import index as project

def _refuses_too_many(scope: ast.AST, limiter: Optional[str] = None) -> Optional[ast.AST]:
    """The node in ``scope`` that answers "too many requests" (429), if any: in its own body (an error handler
    defined inside a function that also uses the state answers for an upstream error, not for the limiter) —
    and, for a function handed the limiter as ``limiter``, in a function it defines that uses it (a dependency
    factory returns the closure that refuses)."""
    bodies = [scope]
    if limiter is not None:
        bodies.extend(node for node in walk(scope)
                       if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not scope
                       and any(isinstance(n, ast.Name) and n.id == limiter for n in walk(node)))
    for body in bodies:
        found = _refusal_in(body)
        if found is not None:
            return found
    return None


#: The attribute a response's status is set through (Flask, Django, Starlette; aiohttp's ``set_status`` is a call).
_STATUS_ATTRIBUTES = frozenset({"status_code", "status"})


def _refusal_in(scope: ast.AST) -> Optional[ast.AST]:
    for node in walk_no_nested_functions(scope):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Name):
            made = _module_constant(node.exc)
            if made is not None and _refusal_in(made) is not None:
                return node  # ``raise TOO_MANY``, a module-level ``HTTPException(status_code=429, ...)``
        if isinstance(node, ast.Constant) and node.value == known.TOO_MANY_REQUESTS and type(node.value) is int:
            above = parent(node)
            if isinstance(above, (ast.Call, ast.keyword)):
                return node
            if isinstance(above, ast.Tuple) and isinstance(parent(above), ast.Return):
                return node  # ``return jsonify(error=...), 429`` (Flask, Quart)
            if isinstance(above, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr in _STATUS_ATTRIBUTES
                                                     for t in above.targets):
                return node  # ``response.status_code = 429``
        elif isinstance(node, ast.Attribute) and node.attr in known.TOO_MANY_REQUESTS_NAMES:
            return node
        elif isinstance(node, ast.Name) and node.id in known.TOO_MANY_REQUESTS_NAMES:
            return node
    return None


def _module_constant(name: ast.Name) -> Optional[ast.AST]:
    """The value a module-level assignment gives ``name`` in the module around it (one assignment only)."""
    module = next((above for above in ancestors(name) if isinstance(above, ast.Module)), None)
    if module is None:
        return None
    values = [s.value for s in module.body if isinstance(s, ast.Assign)
              and any(isinstance(t, ast.Name) and t.id == name.id for t in s.targets)]
    return values[0] if len(values) == 1 and isinstance(values[0], ast.Call) else None


def functions_using(name: str, facts: ModuleFacts) -> List[FunctionNode]:
    return _loads_by_name(facts).get(name, [])


def _function_above(node: ast.AST) -> Optional[FunctionNode]:
    """The nearest function around ``node``, through classes and lambdas (whose code is part of it)."""
    for above in ancestors(node):
        if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return above
    return None


def _functions_around(function: FunctionNode, facts: ModuleFacts) -> Tuple[FunctionNode, ...]:
    """``function`` and the functions it is nested in, innermost first (once per function)."""
    chains = facts.cached("rate_limits:nesting", lambda _facts: {})
    chain = chains.get(id(function))
    if chain is None:
        outer = _function_above(function)
        chain = chains[id(function)] = (function,) + (_functions_around(outer, facts) if outer is not None else ())
    return chain


def _loads_by_name(facts: ModuleFacts):
    """name -> the functions that read it (a nested function's reads are its enclosing functions' too), in the
    module's order of functions."""
    def build(_facts: ModuleFacts):
        # One pass over the module's names, each going up to the functions around it (a walk of every
        # function would read a nested function's body once per enclosing function).
        users: Dict[str, Dict[int, FunctionNode]] = {}
        Name, Load = ast.Name, ast.Load
        for node, innermost in zip(facts.nodes, facts.functions_around_nodes()):
            if type(node) is Name and type(node.ctx) is Load:
                if innermost is not None:
                    found = users.setdefault(node.id, {})
                    for function in _functions_around(innermost, facts):
                        found[id(function)] = function
        order = {id(function): index for index, function in enumerate(facts.functions)}
        return {name: sorted(found.values(), key=lambda f: order.get(id(f), 0)) for name, found in users.items()}

    return facts.cached("rate_limits:loads", build)


def refusal_for(name: str, function: FunctionNode, facts: ModuleFacts) -> Optional[Tuple[ast.AST, ModuleFacts, str]]:
    """Where ``function`` (or a function it hands ``name`` to, or a caller acting on its answer) refuses with
    429, and which of the three it is: ``here``, ``handed`` or ``caller``."""
    found = _refuses_too_many(function)
    if found is not None:
        return found, facts, "here"
    if _only_returns(function) or _answers_yes_or_no(function):
        # A small helper (``def _check(a): return guard.check(a)``) or a verdict (``return False`` over the
        # limit): its callers, here or (command line) in other modules, turn the no into the refusal.
        for call, where in _callers_here_and_elsewhere(function, facts):
            caller = where.enclosing_function(call)
            found = _refuses_too_many(caller) if caller is not None and caller is not function else None
            if found is not None:
                return found, where, "caller"
    if _returns_a_value(function):
        # ``retry_after = quota.consume(key)`` then ``if retry_after is not None: return ..., 429``: an answer other
        # than yes or no (how long to wait), which the caller tests before refusing
        found = _caller_refusing_on_answer(function, facts)
        if found is not None:
            return found[0], found[1], "caller"
    raised = _refused_through_exception(name, function, facts)
    if raised is not None:
        return raised
    for node in walk(function):
        if not isinstance(node, ast.Call):
            continue
        arguments = list(node.args) + [k.value for k in node.keywords]
        if not any(isinstance(a, ast.Name) and a.id == name for a in arguments):
            continue
        callee = _called_function(node, facts)
        if callee is not None:
            target, where = callee
            refusal = _refuses_too_many(target, _parameter_for(node, name, target))
            if refusal is not None:
                return refusal, where, "handed"
    return None


#: Modules read for the users of a module-level limiter, and for the handlers of the exception its no raises.
_MAX_OTHER_MODULES = 20


def users_elsewhere(name: str, facts: ModuleFacts) -> List[Tuple[FunctionNode, str, ModuleFacts]]:
    """(function, the name it reads the limiter by, its module) in the other modules that import ``name`` from
    this one (``from app.limits import resend_limiter``)."""
    from ..project.bindings import own_module_names

    wanted = {f"{module}.{name}" for module in own_module_names(facts)}
    found: List[Tuple[FunctionNode, str, ModuleFacts]] = []
    for other in other_modules(name, facts):
        for local, qualified in other.imports.aliases.items():
            if qualified in wanted:
                found.extend((function, local, other) for function in functions_using(local, other))
    return found


def other_modules(word: str, facts: ModuleFacts) -> List[ModuleFacts]:
    """The project's other modules (tests aside) whose text spells ``word``, a bounded number of them."""
    own = facts.context.path
    found = []
    for path in project.files_mentioning(word, project.search_root(facts))[:_MAX_OTHER_MODULES]:
        other = project.module_facts(path, facts.config) if path != own else None
        if other is not None and not other.context.is_test:
            found.append(other)
    return found


def _refused_through_exception(name: str, function: FunctionNode,
                               facts: ModuleFacts) -> Optional[Tuple[ast.AST, ModuleFacts, str]]:
    """``if not await limiter.allow(key): raise TooManyResends(...)``, where a handler of the project answers that
    exception with 429 (``except TooManyResends: return ..., 429`` around a caller, or a function registered for
    it: ``@app.errorhandler(TooManyResends)``)."""
    for node in walk_no_nested_functions(function):
        if not (isinstance(node, ast.If) and any(isinstance(n, ast.Name) and n.id == name for n in walk(node.test))):
            continue
        for statement in node.body:
            raised = statement.exc if isinstance(statement, ast.Raise) else None
            raised = raised.func if isinstance(raised, ast.Call) else raised
            exception = raised.id if isinstance(raised, ast.Name) else raised.attr if isinstance(
                raised, ast.Attribute) else None
            if exception is None or exception in _BUILTIN_EXCEPTIONS:
                continue
            modules = [facts] + (other_modules(exception, facts) if facts.context.cross_file else [])
            for where in modules:
                refusal = _handler_refusing(exception, where)
                if refusal is not None:
                    return refusal, where, f"raises `{exception}`"
    return None


_BUILTIN_EXCEPTIONS = frozenset(name for name in dir(__builtins__ if isinstance(__builtins__, dict) else
                                                     vars(__builtins__)) if name.endswith(("Error", "Exception")))


def _names_exception(expr: Optional[ast.AST], exception: str) -> bool:
    return any((isinstance(n, ast.Name) and n.id == exception) or (isinstance(n, ast.Attribute) and n.attr == exception)
               for n in (walk(expr) if expr is not None else ()))


def _handler_refusing(exception: str, facts: ModuleFacts) -> Optional[ast.AST]:
    """The 429 of an ``except <exception>:`` handler of the module, or of a function registered for it."""
    for node in facts.nodes:
        if isinstance(node, ast.ExceptHandler) and _names_exception(node.type, exception):
            found = _refusal_in(node)
            if found is not None:
                return found
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                isinstance(d, ast.Call) and any(_names_exception(a, exception) for a in d.args)
                for d in node.decorator_list):
            found = _refusal_in(node)
            if found is not None:
                return found
    return None


def _answers_yes_or_no(function: FunctionNode) -> bool:
    """``function`` returns ``True`` or ``False`` somewhere, or a comparison (``return used <= limit``), maybe
    first in a tuple (``return False, retry_after``): a yes-or-no its callers act on."""
    return any(isinstance(n, ast.Return) and _is_verdict(n.value) for n in walk_no_nested_functions(function))


def _is_verdict(value: Optional[ast.AST]) -> bool:
    if isinstance(value, ast.Tuple) and value.elts:
        return _is_verdict(value.elts[0])  # ``return False, retry_after``: the answer and how long to wait
    if isinstance(value, ast.Constant):
        return isinstance(value.value, bool)
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
        return True
    if isinstance(value, ast.BoolOp):
        return all(_is_verdict(v) for v in value.values)
    return isinstance(value, ast.Compare)


def _callers_here_and_elsewhere(function: FunctionNode, facts: ModuleFacts) -> List[Tuple[ast.Call, ModuleFacts]]:
    found = [(call, facts) for call in facts.calls_named(function.name)]
    if facts.context.cross_file:
        from ..project.summaries import callers

        found += [(call, where) for call, where in callers(function, facts) if where is not facts]
    return found


def _parameter_for(call: ast.Call, name: str, target: ast.AST) -> Optional[str]:
    """The parameter of ``target`` that ``call`` binds the argument ``name`` to."""
    parameters = [a.arg for a in getattr(getattr(target, "args", None), "posonlyargs", [])]
    parameters += [a.arg for a in getattr(getattr(target, "args", None), "args", [])]
    if parameters and parameters[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
        parameters = parameters[1:]
    for index, argument in enumerate(call.args):
        if isinstance(argument, ast.Name) and argument.id == name and index < len(parameters):
            return parameters[index]
    for keyword in call.keywords:
        if isinstance(keyword.value, ast.Name) and keyword.value.id == name and keyword.arg:
            return keyword.arg
    return None


def _returns_a_value(function: FunctionNode) -> bool:
    return any(isinstance(n, ast.Return) and n.value is not None
               and not (isinstance(n.value, ast.Constant) and n.value.value is None)
               for n in walk_no_nested_functions(function))


def _caller_refusing_on_answer(function: FunctionNode, facts: ModuleFacts,
                               depth: int = 0) -> Optional[Tuple[ast.AST, ModuleFacts]]:
    """The 429 of a caller testing ``function``'s answer, or of the callers of a function that only hands that
    answer back (``def check(key): return wait_for(key)``)."""
    for call, where in _callers_here_and_elsewhere(function, facts):
        caller = where.enclosing_function(call)
        if caller is None or caller is function:
            continue
        found = _refused_on_answer(call, caller)
        if found is not None:
            return found, where
        if depth < 1 and isinstance(parent(call), ast.Return):
            found = _caller_refusing_on_answer(caller, where, depth + 1)
            if found is not None:
                return found
    return None


def _refused_on_answer(call: ast.Call, caller: FunctionNode) -> Optional[ast.AST]:
    """The 429 of an ``if`` in ``caller`` whose test reads what ``call`` answered: the call itself, or the name
    its answer is bound to."""
    above = parent(call)
    while isinstance(above, ast.Await):
        above = parent(above)
    bound = above.targets[0].id if isinstance(above, ast.Assign) and len(above.targets) == 1 \
        and isinstance(above.targets[0], ast.Name) else None
    for node in walk_no_nested_functions(caller):
        if not isinstance(node, ast.If):
            continue
        tested = list(walk(node.test))
        if any(n is call for n in tested) or (bound is not None and any(
                isinstance(n, ast.Name) and n.id == bound for n in tested)):
            found = _refusal_in(node)
            if found is not None:
                return found
    return None


def _only_returns(function: FunctionNode) -> bool:
    body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return len(body) == 1 and isinstance(body[0], ast.Return)


def _called_function(call: ast.Call, facts: ModuleFacts) -> Optional[Tuple[FunctionNode, ModuleFacts]]:
    if isinstance(call.func, ast.Name):
        for function in facts.functions_by_name.get(call.func.id, ()):
            if facts.enclosing_function(function) is None and facts.enclosing_class(function) is None:
                return function, facts
    if not facts.context.cross_file:
        return None
    qualified = facts.callee(call) or ""
    head = (dotted(call.func) or "").split(".")[0]
    if "." not in qualified or not facts.imports.is_imported(head):
        return None
    return project.find_function(qualified, facts.config, project.roots_for(facts))
