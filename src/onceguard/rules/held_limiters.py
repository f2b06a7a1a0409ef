"""OG604: a hand-written limiter handed, at start-up, to a service object the application keeps in its state
(``app.ctx.otp = OtpService(limiter=SlidingWindow(3, 900))``), whose method a handler asks before refusing with 429.

The same holds for a limiter a start-up function makes into a local that the request hook it defines refuses on
(``install(app)``: ``limiter = SlidingWindow(...)``, ``@app.on_request`` over it).

The limiter lives as long as the service (or the hook), one per process, so its per-key containers count the
requests of this process alone.  The finding is on the container the limiter's ``__init__`` keeps on ``self``
(what the fix replaces), as for a middleware's; where the limiter is made and where the request is refused are
related places.
"""
from __future__ import annotations

import ast
from typing import Iterator, List, Optional, Tuple

from ..analysis.facts import FunctionNode, ModuleFacts, parent, walk
from ..analysis.handed import parameter_names
from ..knowledge import process_local as known
from ..model import Diagnostic, Related
from ..project.app_namespaces import namespace_attribute
from .base import Rule
from .limit_refusals import other_modules, refusal_for
from .limiter_state import class_of_call, counts_in_shared_store, is_container, mutates_attribute, reads_clock

#: (the service's assignment into the application's state, the place, the service's class and module, the
#: attribute the service keeps the limiter in)
Holding = Tuple[ast.Assign, Tuple[str, str], ast.ClassDef, ModuleFacts, str]


def limiters_kept_by_services(rule: Rule, facts: ModuleFacts) -> Iterator[Diagnostic]:
    """(command line only: the service, the start-up code and the handler are read across the project)"""
    if not facts.context.cross_file:
        return
    from ..project.summaries import callers

    for cls in facts.classes:
        methods = [m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
        init = next((m for m in methods if m.name == "__init__"), None)
        if init is None:
            continue
        # the syntax first: a per-key container kept on ``self`` that a method writes into, against a clock
        kept = [(statement, target.attr) for statement in init.body for target in _self_targets(statement)
                if is_container(statement.value, facts)
                and any(mutates_attribute(target.attr, cls.name, m) for m in methods)]
        if not kept or counts_in_shared_store(cls) or not reads_clock(cls, facts):
            continue
        for made, where in callers(init, facts):
            holding = _kept_by_service(made, where)
            if holding is None:
                found = _kept_by_startup_closure(made, where)
                if found is None:
                    continue
                maker, hook, node, refused_at = found
                container, name = kept[0]
                yield rule.finding(
                    container,
                    f"`{cls.name}.{name}` counts in process memory in the `{cls.name}` `{maker.name}()` makes at "
                    f"start-up; `{hook.name}()` refuses with 429 on it: N replicas allow N times the limit.",
                    f"The request hook `{hook.name}()` keeps the `{cls.name}` for the process's life: each replica "
                    "(and each worker process) counts only the requests it serves. " + known.HANDWRITTEN_INSTEAD,
                    related=[Related(where.context.path, made.lineno, made.col_offset + 1,
                                     f"made here once per process and kept by `{hook.name}()`"),
                             Related(refused_at.context.path, getattr(node, "lineno", 1),
                                     getattr(node, "col_offset", 0) + 1, "the request is refused with 429 here")],
                )
                break
            statement, place, service, service_facts, attribute = holding
            refusal = _refused_on_service(place, service, attribute, where)
            if refusal is None:
                continue
            function, node, refused_at = refusal
            container, name = kept[0]
            yield rule.finding(
                container,
                f"`{cls.name}.{name}` counts in process memory inside the application's `{service.name}`, and "
                f"`{function.name}()` refuses with 429 on it: N replicas allow N times the limit.",
                f"The `{cls.name}` is made at start-up and kept in the application's state for the process's life: "
                "each replica (and each worker process) counts only the requests it serves. "
                + known.HANDWRITTEN_INSTEAD,
                related=[Related(where.context.path, made.lineno, made.col_offset + 1,
                                 f"made here and kept for the process's life as `{service.name}.{attribute}`"),
                         Related(refused_at.context.path, getattr(node, "lineno", 1),
                                 getattr(node, "col_offset", 0) + 1, "the request is refused with 429 here")],
            )
            break


def _self_targets(statement: ast.stmt) -> List[ast.Attribute]:
    """``self.hits = ...`` / ``self.hits: T = ...``: the attributes the statement sets on ``self``."""
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        targets = [statement.target]
    else:
        return []
    return [t for t in targets if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
            and t.value.id == "self"]


def _kept_by_service(made: ast.Call, where: ModuleFacts) -> Optional[Holding]:
    """``made`` is an argument of a project class's construction assigned into the application's state, and that
    class's ``__init__`` keeps the parameter it fills on ``self``."""
    above = parent(made)
    keyword = above.arg if isinstance(above, ast.keyword) else None
    outer = parent(above) if isinstance(above, ast.keyword) else above
    if not isinstance(outer, ast.Call) or (keyword is None and made not in outer.args):
        return None
    statement = parent(outer)
    if not (isinstance(statement, ast.Assign) and statement.value is outer and len(statement.targets) == 1):
        return None
    place = namespace_attribute(statement.targets[0])
    found = class_of_call(outer, where) if place is not None else None
    if found is None:
        return None
    service, service_facts = found
    init = next((m for m in service.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and m.name == "__init__"), None)
    if init is None:
        return None
    parameters = [p for p in parameter_names(init) if p not in ("self", "cls")]
    parameter = keyword if keyword is not None else (
        parameters[outer.args.index(made)] if outer.args.index(made) < len(parameters) else None)
    for node in walk(init):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id == parameter:
            for target in _self_targets(node):
                return statement, place, service, service_facts, target.attr
    return None


def _kept_by_startup_closure(made: ast.Call, where: ModuleFacts
                             ) -> Optional[Tuple[FunctionNode, FunctionNode, ast.AST, ModuleFacts]]:
    """(the maker, the hook, where it refuses and in which module): ``limiter = Window(...)`` in a function
    start-up code runs on every replica (``install(app)`` from the app's module), read by a function defined there
    that refuses with 429 on it (the request hook it registers): the closure keeps the one limiter for the process's
    life."""
    from ..project.reach import runs

    statement = parent(made)
    if not (isinstance(statement, ast.Assign) and statement.value is made and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)):
        return None
    maker = where.enclosing_function(statement)
    if maker is None:
        return None
    local = statement.targets[0].id
    hooks = [n for n in walk(maker) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n is not maker
             and any(isinstance(name, ast.Name) and name.id == local for name in walk(n))]
    refusal = next(((hook, found) for hook in hooks for found in [refusal_for(local, hook, where)]
                    if found is not None), None)
    if refusal is None or not runs(statement, where, startup_only=True).every_replica:
        return None
    hook, (node, refused_at, _) = refusal
    return maker, hook, node, refused_at


def _refused_on_service(place: Tuple[str, str], service: ast.ClassDef, attribute: str,
                        facts: ModuleFacts) -> Optional[Tuple[FunctionNode, ast.AST, ModuleFacts]]:
    """A function that calls a method of the service read back from the application's state (``await
    request.app.ctx.otp.send_code(phone)``), a method that asks the kept limiter, and refuses with 429."""
    from .rate_limits import _reads_state

    asking = {m.name for m in service.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
              and any(isinstance(n, ast.Attribute) and n.attr == attribute and isinstance(n.value, ast.Name)
                      and n.value.id == "self" for n in walk(m))}
    key = place[1].strip("'\"")
    for other in [facts] + other_modules(key, facts):
        for function in other.functions:
            if not _reads_state(function, place):
                continue
            if not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in asking
                       and namespace_attribute(n.func.value) == place for n in walk(function)):
                continue
            found = refusal_for(key, function, other)
            if found is not None:
                return function, found[0], found[1]
    return None
