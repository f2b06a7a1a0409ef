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
import re
from typing import Iterator, List, Optional, Tuple

from ..analysis.facts import FunctionNode, ModuleFacts, parent, walk, walk_no_nested_functions
from ..analysis.names import dotted
from ..knowledge import process_local as known
from ..knowledge.startup import APP_MAPPINGS
from ..model import Diagnostic, Related
from ..project import index as project
from ..project.app_namespaces import namespace_attribute
from ..project.prefilter_words import counting_class_words
from .base import Rule
from ..project.middleware_classes import middleware_registration, passes_requests
from .fix_plans import shared_store_snippet
from .held_limiters import limiters_kept_by_services
from .limit_refusals import functions_using, other_modules, refusal_for, users_elsewhere
from .memoized_effects import memoised
from .limiter_state import (
    containers_made_by_functions, first_write, holder_kind, is_container, mutates, mutates_attribute, reads_clock)
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
#: ``name = <a container>`` at a module's top level (a type annotation allowed).
_MODULE_CONTAINER = re.compile(
    rb"^[A-Za-z_][A-Za-z0-9_]*[ \t]*(?::[^=\n]*)?=[ \t]*(?:\{|\[|set\(|dict\(|list\(|"
    rb"(?:collections\.)?(?:defaultdict|deque|Counter|OrderedDict)\(|[A-Za-z_.]*Cache\()", re.MULTILINE)


def keeps_limiter_state(source: bytes) -> bool:
    """The text describes a limiter, keeps a container at its top level and reads a clock (a hand-written limiter's
    window is measured in the module that keeps it: ``_handwritten``)."""
    return any(word in source for word in known.LIMITER_WORDS) and any(word in source for word in known.CLOCK_WORDS) \
        and _MODULE_CONTAINER.search(source) is not None


def _handwritten(rule: Rule, facts: ModuleFacts) -> Iterator[Diagnostic]:
    if not facts.context.cross_file:
        text = "\n".join(facts.lines)
        if str(known.TOO_MANY_REQUESTS) not in text and not any(n in text for n in known.TOO_MANY_REQUESTS_NAMES):
            return  # one file alone: the refusal must be in it
    for name, value, statement in _module_assignments(facts):
        if not isinstance(value, (ast.Call, ast.IfExp, ast.Dict, ast.Set, ast.List, ast.DictComp, ast.ListComp,
                                  ast.SetComp)):
            continue
        using = functions_using(name, facts)
        container = is_container(value, facts)
        if not using and (container or not facts.context.cross_file):
            continue
        # the cheap fact first: what the value keeps (a class is looked up once per module), then who refuses
        kind = ("container", None) if container else holder_kind(value, facts)
        if kind is None:
            continue
        candidates = [(f, name, facts) for f in using if not container or (reads_clock(f, facts) and mutates(name, f))]
        if not container:
            # a limiter object other modules import and ask (``from app.limits import resend_limiter``)
            candidates += users_elsewhere(name, facts)
        refusal = next(((f, r) for f, local, where in candidates for r in [refusal_for(local, f, where)]
                        if r is not None), None)
        if refusal is None:
            continue
        _, cls = kind
        function, (node, where, how) = refusal
        described = f"a `{cls.name}` kept at module level" if cls is not None else "a module-level container"
        refuses = (f"a caller of `{function.name}()` refuses with 429 on its answer" if how == "caller"
                   else f"`{function.name}()` {how} on it, answered with 429" if how.startswith("raises ")
                   else f"`{function.name}()` refuses with 429 on it")
        yield rule.finding(
            statement,
            f"`{name}` ({described}) holds rate-limit state in process memory and {refuses}, so N replicas allow N "
            "times the limit.",
            "Each replica keeps its own counts, and a client blocked on one replica is let in by the others. "
            + known.HANDWRITTEN_INSTEAD,
            related=[_refused_here(node, where)],
        )


def _made_by_a_function(rule: Rule, facts: ModuleFacts) -> Iterator[Diagnostic]:
    """A container a module function makes for the module (``global _hits`` … ``_hits = {}`` in an ``init()``),
    one per process as a module-level one is.  A function of the module that reads a clock and writes into it,
    itself or through a helper of the module that does (``_window(key, now).append(now)``), stamps it; the
    functions that name it or call such a helper may be refused on with 429.  Reported at the stamp: there is
    no module-level container to point at."""
    module_functions = [f for f in facts.tree.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for name, _, made in containers_made_by_functions(facts):
        using = [f for f in functions_using(name, facts) if f in module_functions]
        helpers = {f.name for f in using}
        writers = {f.name for f in using if mutates(name, f)}

        def is_the_container(node: ast.AST, name=name, writers=writers) -> bool:
            return (isinstance(node, ast.Name) and node.id == name) or (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in writers)

        stamp = next(((f, write) for f in module_functions if reads_clock(f, facts)
                      for write in [first_write(f, is_the_container)] if write is not None), None)
        if stamp is None:
            continue
        askers = [f for f in module_functions if f in using or any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in helpers for n in walk(f))]
        refusal = _first_refusal(name, askers, facts)
        if refusal is None:
            continue
        function, (node, where, how) = refusal
        maker = facts.enclosing_function(made)
        refuses = f"a caller of `{function.name}()`" if how == "caller" else f"`{function.name}()`"
        yield rule.finding(
            facts.statement_of(stamp[1]),
            f"`{name}` (a container `{maker.name if maker else name}()` makes once per process) is stamped here "
            f"and {refuses} refuses with 429 on it, so N replicas allow N times the limit.",
            "Each replica keeps its own counts, and a client blocked on one replica is let in by the others. "
            + known.HANDWRITTEN_INSTEAD,
            related=[Related(facts.context.path, made.lineno, made.col_offset + 1, f"`{name}` is made here"),
                     _refused_here(node, where)],
        )


def _class_level_state(rule: Rule, facts: ModuleFacts) -> Iterator[Diagnostic]:
    """A container assigned in a class's body (``_failures = defaultdict(deque)``) is one per process, however
    many instances are made (one per request included), and so is one a middleware class keeps on ``self``: the
    framework makes one instance per process.  A class whose methods count in it against a clock, and one of
    whose methods a caller refuses with 429 on, counts in this process alone."""
    for cls in facts.classes:
        methods = [m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for statement, name, holder, made in _kept_containers(cls, methods, facts):
            # (the window may be pruned in one method and stamped in another, with the time read in a third;
            # only methods that name the attribute can write into it)
            naming = [m for m in methods if any(isinstance(n, ast.Attribute) and n.attr == name for n in walk(m))]
            if not (any(mutates_attribute(name, cls.name, m) for m in naming)
                    and any(reads_clock(m, facts) for m in methods)):
                continue  # (the syntax first: reading a clock follows calls through helpers)
            registration = made() if made is not None else None
            if made is not None and registration is None:
                continue  # (an instance's container: per process only where the framework makes one per process)
            refusal = _first_refusal(name, methods, facts)
            if refusal is None:
                continue
            function, (node, where, how) = refusal
            refuses = f"a caller of `{function.name}()`" if how == "caller" else f"`{function.name}()`"
            related = [_refused_here(node, where)]
            if registration is not None:
                related.append(Related(registration.path, registration.line, 1, registration.how))
            yield rule.finding(
                statement,
                f"`{cls.name}.{name}` ({holder}) holds rate-limit state and {refuses} refuses with 429 on it, so N "
                "replicas allow N times the limit.",
                "Each replica (and each worker process) keeps its own counts, whatever instances are made. "
                + known.HANDWRITTEN_INSTEAD,
                related=related,
            )


def _kept_containers(cls: ast.ClassDef, methods, facts: ModuleFacts):
    """(statement, attribute, what holds it, None or how to ask whether the framework makes one instance per
    process) for the containers of the class's body and those its ``__init__`` keeps on ``self``."""
    for statement in cls.body:
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None \
                and is_container(statement.value, facts):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if names:
                yield statement, names[0], "a container of the class, one per process", None
    # (only a class a request passes through is made by the framework, once per process)
    init = next((m for m in methods if m.name == "__init__"), None) if passes_requests(cls) else None
    for statement in init.body if init is not None else ():
        target = statement.targets[0] if isinstance(statement, ast.Assign) and len(statement.targets) == 1 else \
            statement.target if isinstance(statement, ast.AnnAssign) and statement.value is not None else None
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self" \
                and is_container(statement.value, facts):
            yield (statement, target.attr, "a container of a middleware, made once per process",
                   lambda: middleware_registration(cls, facts))


def _first_refusal(name: str, functions, facts: ModuleFacts):
    """The first of ``functions`` that refuses with 429 on ``name`` (itself, a callee or a caller), with where."""
    return next(((function, found) for function in functions for found in [refusal_for(name, function, facts)]
                 if found is not None), None)


def _handed_at_startup(rule: Rule, facts: ModuleFacts) -> Iterator[Diagnostic]:
    """A limiter object made by start-up code and handed straight to a project function (``install_quota(app,
    SlidingWindow(60))`` in an app factory) that refuses with 429 on it, itself or in the request hook it
    defines over it and registers: one object for the process's life, counting the requests of this process
    alone (command line only)."""
    if not facts.context.cross_file:
        return
    from ..analysis.handed import parameter_names
    from ..project.reach import runs
    from ..project.summaries import resolve

    for call in facts.calls:
        # (a class made in the call's arguments: ``Name(...)`` or ``module.Name(...)``)
        made = [(index, argument) for index, argument in enumerate(call.args) if isinstance(argument, ast.Call)
                and (dotted(argument.func) or "").rsplit(".", 1)[-1][:1].isupper()]
        for index, argument in made:
            kind = holder_kind(argument, facts)
            if kind is None or kind[1] is None:
                continue
            function = facts.enclosing_function(call)
            targets = resolve(call, facts, function, by_name=False)
            if len(targets) != 1:
                continue
            target, where = targets[0]
            parameters = [p for p in parameter_names(target) if p not in ("self", "cls")]
            if index >= len(parameters):
                continue
            handed = parameters[index]
            scopes = [target] + [n for n in walk(target) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                                 and n is not target]
            refusal = _first_refusal(handed, scopes, where)
            if refusal is None or not runs(call, facts, startup_only=True).every_replica:
                continue
            scope, (node, place, _) = refusal
            yield rule.finding(
                argument,
                f"`{kind[1].name}` made here at start-up is handed to `{target.name}()`, which keeps it for the "
                f"process's life and refuses with 429 on it, so N replicas allow N times the limit.",
                "Each replica (and each worker process) makes its own and counts only the requests it serves. "
                + known.HANDWRITTEN_INSTEAD,
                related=[_refused_here(node, place)],
            )


def _application_state(rule: Rule, facts: ModuleFacts) -> Iterator[Diagnostic]:
    """A limiter object kept in the application's state for the process's life (``app[THROTTLE] =
    SlidingWindow(...)`` in aiohttp's start-up, ``app.state.limiter = Limiter(...)`` in a lifespan,
    ``app.extensions["limiter"] = ...`` in a Flask app factory): a request handler reading it from there
    (``request.app[THROTTLE]``, ``request.app.state.limiter``, ``current_app.extensions["limiter"]``) and refusing
    with 429 counts in this process alone, as with a module-level limiter (command line only)."""
    if not facts.context.cross_file:
        return
    for statement in facts.assigns:
        if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
            continue
        place = namespace_attribute(statement.targets[0])
        if place is None:
            continue
        key = place[1].strip("'\"")  # (the word other modules spell: an ``AppKey`` name, a string key)
        container = is_container(statement.value, facts)
        kind = ("container", None) if container else holder_kind(statement.value, facts)
        if kind is None or (kind[1] is None and not container):
            continue
        # (a plain container is a limiter's state where the function reading it counts against a clock)
        refusal = next(((function, found) for other in [facts] + other_modules(key, facts)
                        for function in other.functions if _reads_state(function, place)
                        and (not container or reads_clock(function, other))
                        for found in [refusal_for(key, function, other)] if found is not None), None)
        if refusal is None:
            continue
        function, (node, where, _) = refusal
        held = f"`{kind[1].name}`" if kind[1] is not None else "A container"
        yield rule.finding(
            statement,
            f"{held} kept in the application's state holds rate-limit state in process memory and "
            f"`{function.name}()` refuses with 429 on it, so N replicas allow N times the limit.",
            "Each replica (and each worker process) makes its own at start-up and counts only the requests it "
            "serves. " + known.HANDWRITTEN_INSTEAD,
            related=[_refused_here(node, where)],
        )


def _memoized_holders(rule: Rule, facts: ModuleFacts) -> Iterator[Diagnostic]:
    """A limiter object a memoised factory makes (``@lru_cache`` ``def get_limiter(): return SlidingWindow(...)``)
    lives as long as the process, one per process, as a module-level one does; handlers get it by calling the
    factory or as a dependency (``limiter = Depends(get_limiter)``) and refuse with 429 on its answer."""
    for function in facts.tree.body:
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or not memoised(function, facts):
            continue
        made = next(((node, kind[1]) for node in walk_no_nested_functions(function)
                     if isinstance(node, ast.Return) and node.value is not None
                     for kind in [holder_kind(node.value, facts)] if kind is not None and kind[1] is not None), None)
        if made is None:
            continue
        refusal = next(((user, found) for user, local, where in _factory_users(function.name, facts)
                        for found in [refusal_for(local, user, where)] if found is not None), None)
        if refusal is None:
            continue
        statement, cls = made
        user, (node, where, _) = refusal
        yield rule.finding(
            statement,
            f"`{cls.name}` made once per process by `{function.name}()` (memoised) holds rate-limit state in process "
            f"memory and `{user.name}()` refuses with 429 on it, so N replicas allow N times the limit.",
            "The memoised factory keeps one limiter in each worker process of each replica, each counting only the "
            "requests it serves. " + known.HANDWRITTEN_INSTEAD,
            related=[_refused_here(node, where)],
        )


def _refused_here(node: ast.AST, where: ModuleFacts) -> Related:
    return Related(where.context.path, getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1,
                   "the request is refused with 429 here")


def _factory_users(name: str, facts: ModuleFacts) -> List[Tuple[FunctionNode, str, ModuleFacts]]:
    """(function, the name it holds the factory's object by, its module): functions of this module and of the
    modules importing the factory that call it into a name (``limiter = get_limiter()``) or take it as a
    dependency parameter (``limiter = Depends(get_limiter)``, ``Annotated[Limiter, Depends(get_limiter)]``)."""
    users = [(function, name, facts) for function in functions_using(name, facts)]
    if facts.context.cross_file:
        users += users_elsewhere(name, facts)
    return [(function, held, where) for function, local, where in users for held in _holding_names(function, local)]


def _holding_names(function: FunctionNode, factory: str) -> List[str]:
    def hands_factory(node: Optional[ast.AST], called: bool) -> bool:
        return node is not None and any(
            isinstance(call, ast.Call) and (
                (called and isinstance(call.func, ast.Name) and call.func.id == factory) or
                (not called and any(isinstance(a, ast.Name) and a.id == factory for a in call.args)))
            for call in walk(node))

    arguments = function.args
    positional = arguments.posonlyargs + arguments.args
    defaults = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
    names = [a.arg for a, default in zip(positional, defaults)
             if hands_factory(default, False) or hands_factory(a.annotation, False)]
    names += [a.arg for a, default in zip(arguments.kwonlyargs, arguments.kw_defaults)
              if hands_factory(default, False) or hands_factory(a.annotation, False)]
    names += [target.id for node in walk_no_nested_functions(function) if isinstance(node, ast.Assign)
              and hands_factory(node.value, True) for target in node.targets if isinstance(target, ast.Name)]
    return names


def _reads_state(function: FunctionNode, place: Tuple[str, str]) -> bool:
    """``function`` reads the application's place (``request.app[KEY]``, ``...state.key``,
    ``current_app.extensions["key"]``); a key constant of aiohttp's application mapping names its entry through any
    mapping of the application (``request.config_dict[KEY]``)."""
    namespace, name = place
    for node in walk(function):
        if not isinstance(node, (ast.Subscript, ast.Attribute)) or not isinstance(node.ctx, ast.Load):
            continue
        if namespace_attribute(node) == place or (namespace in APP_MAPPINGS and isinstance(node, ast.Subscript)
                                                  and isinstance(node.slice, ast.Name) and node.slice.id == name):
            return True
    return False


@register
class InMemoryRateLimit(Rule):
    code = "OG604"
    name = "in-memory-rate-limit"
    summary = "a rate limit whose counters live in one process's memory: N replicas allow N times the limit"
    triggers = known.RATE_LIMIT_TRIGGERS
    skips_tests = True
    skips_migration_code = True

    @staticmethod
    def project_triggers(config) -> tuple:
        """A module making a limiter object of a class in another module (``limiter = SlidingWindow(5, 60)``)
        that keeps its counts in containers against a clock: every word of that is in the class's module."""
        return counting_class_words(config)

    @staticmethod
    def project_files(config, path: str) -> bool:
        """A module that describes a limiter and keeps its counts at its top level against a clock, whose refusal
        may be written in the module that asks it."""
        return keeps_limiter_state(project.read_bytes(path))

    def check(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        if facts.context.is_test or facts.context.is_migration:
            return
        yield from _library_limiters(self, facts)
        yield from _django_throttles(self, facts)
        yield from _handwritten(self, facts)
        yield from _made_by_a_function(self, facts)
        yield from _class_level_state(self, facts)
        yield from _handed_at_startup(self, facts)
        yield from _application_state(self, facts)
        yield from _memoized_holders(self, facts)
        yield from limiters_kept_by_services(self, facts)
