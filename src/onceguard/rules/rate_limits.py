"""OG604: a rate limit counted in one process's memory.

A limiter allows a number of requests per client and window.  When the counts live in the process
(Flask-Limiter or slowapi with no storage, ``memory://``, ``limits.MemoryStorage``, Django throttles over a
LocMem cache, a module-level dict or limiter object that a handler reads before answering 429), every
replica counts on its own: N replicas allow N times the limit, and a lockout on one replica is not seen
by the others.  The rule needs both facts for hand-written limiters: the state is per-process and
long-lived (module level), and the code that reads it refuses the request as "too many".
"""
from __future__ import annotations

import ast
from typing import Dict, Iterator, List, Optional, Tuple

from ..analysis.facts import FunctionNode, ModuleFacts, ancestors, parent, walk, walk_no_nested_functions
from ..analysis.names import dotted
from ..knowledge import process_local as known
from ..model import Diagnostic, Related
from ..project import index as project
from ..project.forwarding import callee_through
from .base import Rule
from .fix_plans import shared_store_snippet
from .registry import register

#: How a display-only fix names the shared store.
_STORAGE_SNIPPET = 'storage_uri="redis://redis:6379/0"'


def _string(node: Optional[ast.AST]) -> Optional[str]:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _keyword(call: ast.Call, names) -> Optional[ast.keyword]:
    for keyword in call.keywords:
        if keyword.arg in names:
            return keyword
    return None


def _has_double_star(call: ast.Call) -> bool:
    return any(keyword.arg is None for keyword in call.keywords)


def project_mentions(facts: ModuleFacts, words) -> Optional[str]:
    """The first of ``words`` this file, or (command line) any file of the project, mentions."""
    text = "\n".join(facts.lines)
    for word in words:
        if word in text:
            return word
    if facts.context.cross_file:
        root = project.search_root(facts)
        for word in words:
            if project.files_mentioning(word, root):
                return word
    return None


# -- library limiters --------------------------------------------------------------------------------------
def _library_limiters(rule: Rule, facts: ModuleFacts) -> Iterator[Diagnostic]:
    for call in facts.calls:
        callee = facts.callee(call) or ""
        if callee in known.LIMITER_CONSTRUCTORS:
            found = _limiter_storage(rule, call, callee, facts)
            if found is not None:
                yield found
        elif callee in known.MEMORY_STORAGE_CONSTRUCTORS:
            yield rule.finding(
                call,
                f"`{dotted(call.func) or callee}()` keeps the rate-limit counters in this process, so N replicas "
                "allow N times the limit.",
                _OWN_COUNTS + known.LIMITER_INSTEAD,
            )
        elif callee in known.STORAGE_FROM_STRING and call.args:
            uri = _string(call.args[0]) or ""
            if uri.startswith(known.MEMORY_STORAGE_SCHEMES):
                yield rule.finding(
                    call,
                    f"`{uri}` keeps the rate-limit counters in this process, so N replicas allow N times the "
                    "limit.",
                    _OWN_COUNTS + known.LIMITER_INSTEAD,
                )


def _limiter_storage(rule: Rule, call: ast.Call, callee: str, facts: ModuleFacts) -> Optional[Diagnostic]:
    library = "slowapi" if callee.startswith("slowapi") else "Flask-Limiter"
    if _counts_one_key(call, facts):
        return None
    keyword = _keyword(call, known.LIMITER_STORAGE_KEYWORDS)
    if keyword is not None:
        uri = _string(keyword.value)
        if uri is None or not uri.startswith(known.MEMORY_STORAGE_SCHEMES):
            return None  # a shared store, or one the deployment chooses
        return rule.finding(
            call,
            f"This {library} `Limiter` keeps its counters at `{uri}`, in this process, so N replicas allow N times "
            "each limit.",
            _OWN_COUNTS + known.LIMITER_INSTEAD,
            fix=_storage_fix(),
        )
    if _has_double_star(call) or project_mentions(facts, known.LIMITER_STORAGE_SETTINGS):
        return None
    where = "the project's configuration" if facts.context.cross_file else "this file"
    return rule.finding(
        call,
        f"This {library} `Limiter` has no `storage_uri`, so it counts in each process's memory and N replicas "
        "allow N times each limit.",
        f"With no `storage_uri` (and {where} sets no `RATELIMIT_STORAGE_URI`) the limiter counts at `memory://`. "
        + _OWN_COUNTS + known.LIMITER_INSTEAD,
        fix=_storage_fix(),
    )


def _counts_one_key(call: ast.Call, facts: ModuleFacts) -> bool:
    """The limiter's key function names no client (``key_func=lambda: "global"``, or a function of this module
    whose every return is a constant) and no ``limit(...)`` in this module gives a route another key: it counts
    the load of the process that serves the requests, a capacity that grows with the replicas as the load
    spreads over them, not a client's allowance that N replicas would multiply."""
    keyword = _keyword(call, ("key_func",))
    key = keyword.value if keyword is not None else (call.args[0] if call.args else None)
    if key is None or not _returns_a_constant(key, facts):
        return False
    bound = parent(call)
    names = {dotted(target) for target in bound.targets} if isinstance(bound, ast.Assign) else set()
    for other in facts.calls:
        func = other.func
        if isinstance(func, ast.Attribute) and func.attr in known.LIMIT_DECORATOR_METHODS \
                and dotted(func.value) in names:
            route_key = _keyword(other, ("key_func",))
            if route_key is not None and not _returns_a_constant(route_key.value, facts):
                return False
    return True


def _returns_a_constant(key: ast.AST, facts: ModuleFacts) -> bool:
    if isinstance(key, ast.Lambda):
        return isinstance(key.body, ast.Constant)
    if isinstance(key, ast.Name):
        function = next((f for f in facts.functions_by_name.get(key.id, ())
                         if facts.enclosing_class(f) is None and facts.enclosing_function(f) is None), None)
        if function is None:
            return False
        returns = [node for node in walk_no_nested_functions(function) if isinstance(node, ast.Return)]
        return bool(returns) and all(isinstance(r.value, ast.Constant) for r in returns)
    return False


#: Why per-process counters multiply a limit, before each finding's remedy.
_OWN_COUNTS = "Every replica (and every worker process) counts only the requests it serves itself. "


def _storage_fix():
    return shared_store_snippet("limiter-storage-uri", _STORAGE_SNIPPET, "pass a store every replica shares")


# -- Django throttles ---------------------------------------------------------------------------------------
def _module_assignments(facts: ModuleFacts) -> List[Tuple[str, ast.AST, ast.AST]]:
    """(name, value, statement) of each module-level ``NAME = value``."""
    found = []
    for statement in facts.tree.body:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    found.append((target.id, statement.value, statement))
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value:
            found.append((statement.target.id, statement.value, statement))
    return found


def _dict_value(node: ast.AST, key: str) -> Optional[ast.AST]:
    if isinstance(node, ast.Dict):
        for k, v in zip(node.keys, node.values):
            if _string(k) == key:
                return v
    return None


def _django_throttles(rule: Rule, facts: ModuleFacts) -> Iterator[Diagnostic]:
    assignments = _module_assignments(facts)
    names = {name for name, _, _ in assignments}
    if not names & known.DJANGO_SETTINGS_MARKERS:
        return
    throttles = None
    for name, value, _ in assignments:
        if name == "REST_FRAMEWORK" and isinstance(value, ast.Dict):
            for key, item in zip(value.keys, value.values):
                if _string(key) == "DEFAULT_THROTTLE_CLASSES" and isinstance(item, (ast.List, ast.Tuple)) and item.elts:
                    throttles = key
    if throttles is None:
        return
    caches = [value for name, value, _ in assignments if name == "CACHES"]
    if caches:
        backend = _string(_dict_value(_dict_value(caches[-1], "default") or ast.Dict([], []), "BACKEND"))
        if backend not in known.PER_PROCESS_CACHE_BACKENDS:
            return
        why = f"`{backend.rsplit('.', 1)[-1]}`, private to each process or host"
    else:
        if any(isinstance(s, ast.ImportFrom) and any(a.name == "*" for a in s.names) for s in facts.tree.body):
            return  # the settings are split over modules this one imports: CACHES may be there
        if facts.context.cross_file and project_mentions(facts, ("CACHES",)):
            return
        why = "`LocMemCache` (`CACHES` is not set), private to each process"
    yield rule.finding(
        throttles,
        f"Django REST framework throttles count in the default cache, {why}, so N replicas allow N times each "
        "throttle rate.",
        _OWN_COUNTS + known.DJANGO_INSTEAD,
    )


# -- hand-written limiters -----------------------------------------------------------------------------------
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


def _refusal_in(scope: ast.AST) -> Optional[ast.AST]:
    for node in walk_no_nested_functions(scope):
        if isinstance(node, ast.Constant) and node.value == known.TOO_MANY_REQUESTS and type(node.value) is int:
            above = parent(node)
            if isinstance(above, (ast.Call, ast.keyword)):
                return node
        elif isinstance(node, ast.Attribute) and node.attr in known.TOO_MANY_REQUESTS_NAMES:
            return node
        elif isinstance(node, ast.Name) and node.id in known.TOO_MANY_REQUESTS_NAMES:
            return node
    return None


def _reads_clock(scope: ast.AST, facts: ModuleFacts) -> bool:
    for node in walk(scope):
        if isinstance(node, ast.Call):
            qualified = callee_through(node, facts)  # (also a clock read behind a small helper)
            if qualified in known.CLOCK_CALLS or (dotted(node.func) or "") in known.CLOCK_CALLS:
                return True
    return False


def _is_container(value: ast.AST, facts: ModuleFacts) -> bool:
    if isinstance(value, (ast.Dict, ast.Set, ast.List, ast.DictComp, ast.ListComp, ast.SetComp)):
        return True
    if isinstance(value, ast.Call):
        return callee_through(value, facts) in known.CONTAINER_CONSTRUCTORS  # (also behind a small helper)
    return False


def _keeps_containers(cls: ast.ClassDef, facts: ModuleFacts) -> bool:
    """The class stores per-key containers on its instances (``self.hits = defaultdict(list)``)."""
    for node in walk(cls):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is None:
                continue
            if any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                   for t in targets) and _contains_container(node.value, facts):
                return True
    return False


def _counts_in_shared_store(cls: ast.ClassDef) -> bool:
    """The class also counts in Redis or Memcached (``incr``, a script): its containers are a fallback."""
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and node.func.attr in known.SHARED_COUNTER_METHODS for node in walk(cls))


def _contains_container(value: ast.AST, facts: ModuleFacts) -> bool:
    return any(_is_container(node, facts) for node in walk(value))


def _class_of_call(value: ast.AST, facts: ModuleFacts) -> Optional[Tuple[ast.ClassDef, ModuleFacts]]:
    if not isinstance(value, ast.Call):
        return None
    func = value.func
    if isinstance(func, ast.Name):
        for statement in facts.tree.body:
            if isinstance(statement, ast.ClassDef) and statement.name == func.id:
                return statement, facts
    if not facts.context.cross_file:
        return None
    qualified = facts.callee(value) or ""
    head = (dotted(func) or "").split(".")[0]
    if "." not in qualified or not facts.imports.is_imported(head):
        return None
    return project.find_class(qualified, facts.config, project.roots_for(facts))


def _holder_kind(value: ast.AST, facts: ModuleFacts) -> Optional[Tuple[str, Optional[ast.ClassDef]]]:
    """What a module-level value keeps: per-key containers ("container") or a limiter object whose class
    keeps them and reads a clock."""
    if isinstance(value, ast.IfExp):  # ``None if disabled else Limiter(...)``
        for branch in (value.body, value.orelse):
            found = _holder_kind(branch, facts)
            if found is not None:
                return found
        return None
    if _is_container(value, facts):
        return "container", None
    found = _class_of_call(value, facts)
    if found is None:
        return None
    cls, where = found
    if _keeps_containers(cls, where) and _reads_clock(cls, where) and not _counts_in_shared_store(cls):
        return "object", cls
    return None


def _functions_using(name: str, facts: ModuleFacts) -> List[FunctionNode]:
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


_MUTATORS = frozenset({"append", "appendleft", "add", "setdefault", "update", "pop", "popleft", "remove", "clear",
                       "extend", "discard"})


def _mutates(name: str, function: FunctionNode) -> bool:
    """``function`` writes into the container ``name`` (``hits[ip] = ...``, ``hits[ip].append(now)``), also
    through a name bound to one of its entries (``window = hits[ip]`` ... ``window.append(now)``)."""
    roots = {name}

    def rooted(node: ast.AST) -> bool:
        while isinstance(node, (ast.Subscript, ast.Attribute, ast.Call)):
            node = node.func if isinstance(node, ast.Call) else node.value
        return isinstance(node, ast.Name) and node.id in roots

    for node in walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, (ast.Subscript, ast.Call)) and rooted(node.value):
            roots.add(node.targets[0].id)

    for node in walk(function):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, (ast.Subscript, ast.Attribute)) and rooted(t) for t in targets):
                return True
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
            if rooted(node.func.value):
                return True
    return False


def _refusal_for(name: str, function: FunctionNode, facts: ModuleFacts) -> Optional[Tuple[ast.AST, ModuleFacts, str]]:
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


def _answers_yes_or_no(function: FunctionNode) -> bool:
    """``function`` returns ``True`` or ``False`` somewhere: a yes-or-no its callers act on."""
    return any(isinstance(n, ast.Return) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, bool)
               for n in walk_no_nested_functions(function))


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


def _handwritten(rule: Rule, facts: ModuleFacts) -> Iterator[Diagnostic]:
    if not facts.context.cross_file:
        text = "\n".join(facts.lines)
        if str(known.TOO_MANY_REQUESTS) not in text and not any(n in text for n in known.TOO_MANY_REQUESTS_NAMES):
            return  # one file alone: the refusal must be in it
    for name, value, statement in _module_assignments(facts):
        if not isinstance(value, (ast.Call, ast.IfExp, ast.Dict, ast.Set, ast.List, ast.DictComp, ast.ListComp,
                                  ast.SetComp)):
            continue
        using = _functions_using(name, facts)
        if not using:
            continue
        container = _is_container(value, facts)
        # the cheap fact first: what the value keeps (a class is looked up once per module), then who refuses
        kind = ("container", None) if container else _holder_kind(value, facts)
        if kind is None:
            continue
        candidates = [f for f in using if _reads_clock(f, facts) and _mutates(name, f)] if container else using
        refusal = next(((f, r) for f in candidates for r in [_refusal_for(name, f, facts)] if r is not None), None)
        if refusal is None:
            continue
        _, cls = kind
        function, (node, where, how) = refusal
        described = f"a `{cls.name}` kept at module level" if cls is not None else "a module-level container"
        refuses = (f"a caller of `{function.name}()` refuses with 429 on its answer" if how == "caller"
                   else f"`{function.name}()` refuses with 429 on it")
        yield rule.finding(
            statement,
            f"`{name}` ({described}) holds rate-limit state in process memory and {refuses}, so N replicas allow N "
            "times the limit.",
            "Each replica keeps its own counts, and a client blocked on one replica is let in by the others. "
            + known.HANDWRITTEN_INSTEAD,
            related=[Related(where.context.path, getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1,
                             "the request is refused with 429 here")],
        )


@register
class InMemoryRateLimit(Rule):
    code = "OG604"
    name = "in-memory-rate-limit"
    summary = "a rate limit whose counters live in one process's memory: N replicas allow N times the limit"
    triggers = known.RATE_LIMIT_TRIGGERS
    skips_tests = True
    skips_migration_code = True

    def check(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        if facts.context.is_test or facts.context.is_migration:
            return
        yield from _library_limiters(self, facts)
        yield from _django_throttles(self, facts)
        yield from _handwritten(self, facts)
