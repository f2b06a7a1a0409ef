"""How long an instance lives: whether the objects of a class outlive one request.

An instance made at module level (in its module, or on the command line in any module of the project that
imports the class) lives as long as the process; so does one start-up code makes and keeps on something
(``app.ctx.presence = Registry()`` in a start-up listener); so does one whose class runs its own polling loop (a daemon:
a thread or task started on ``self`` that loops with a pause), whose loop and the methods it calls are its job.
State kept on such an instance is kept once per process.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import FrozenSet, Iterator, Optional, Set

from ..analysis.facts import FunctionNode, ModuleFacts, parent, walk, walk_no_nested_functions
from ..analysis.names import dotted

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


# ------------------------------------------------------------------------------------------------
# How long an instance lives
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Lifetime:
    """Why the instances of a class live as long as the process, and where that shows."""

    why: str
    path: str
    line: int
    daemon: bool = False
    #: For a daemon: its loop's method and the methods of the class it calls on ``self``, which are its job.
    loop_methods: FrozenSet[str] = frozenset()
    #: Made by start-up code and kept on the application (``app.state.x = X()``): handlers elsewhere use it.
    kept_at_startup: bool = False


def long_lived_instance(cls: ast.ClassDef, facts: ModuleFacts) -> Optional[Lifetime]:
    """Instances of ``cls`` outlive a request: one is made at module level (this module, or on the command line
    any module of the project), a module-level name of this module holds one (``app_state = Registry()`` in
    the ``__main__`` block), or the class runs its own loop that sleeps between rounds (a daemon)."""
    found = daemon_lifetime(cls, facts)
    if found is not None:
        return found
    for statement in _top_level_statements(facts.tree):
        for call in _module_level_calls(statement):
            if isinstance(call.func, ast.Name) and call.func.id == cls.name:
                return Lifetime(f"one `{cls.name}` is made at module level, so each process has its own",
                                facts.context.path, call.lineno)
    made_here = [call for call in facts.calls_by_name.get(cls.name, ()) if isinstance(call.func, ast.Name)]
    kept = _kept_at_startup(made_here, facts, cls)
    if kept is not None:
        return kept
    from .middleware_classes import middleware_registration  # (the framework makes it, once per process)

    registered = middleware_registration(cls, facts)
    if registered is not None:
        return Lifetime(registered.how, registered.path, registered.line)
    if not facts.context.cross_file:
        return None
    init = next((s for s in cls.body if isinstance(s, _FUNCTIONS) and s.name == "__init__"), None)
    if init is None:
        return None
    from .renamed_callers import project_callers  # (also ``Guard()`` after ``import X as Guard``)

    callers = project_callers(init, facts)
    for call, other in callers:
        if other.enclosing_function(call) is None and other.enclosing_class(call) is None:
            return Lifetime(f"one `{cls.name}` is made at module level of `{other.context.rel_path}`, so each "
                            "process has its own", other.context.path, call.lineno)
    for call, other in callers:
        kept = _kept_at_startup([call], other, cls)
        if kept is not None:
            return kept
    for call, other in callers:
        made = _handed_out_at_startup(call, other, cls)
        if made is not None:
            return made
    return None


#: How many calls above a factory that hands an object out start-up code is looked for (``app = make_app()`` ->
#: ``wire()`` -> the object), and how many places in all: a class made and returned in many places (a value, not
#: a service) would have every one of them followed through the project's callers.
_FACTORY_HOPS = 2
_FACTORY_PLACES = 8
#: A factory whose name this many of the project's files spell is called all over it: each call makes another
#: object (a value, not the process's one service), and its callers are not all parsed to say so.
_FACTORY_FILES = 12


def _handed_out_at_startup(call: ast.Call, facts: ModuleFacts, cls: ast.ClassDef) -> Optional[Lifetime]:
    """``call`` is in a factory that start-up code runs (``app = create_app()`` → ``build_services()``) and
    hands the object out (``return Services(seen=SeenIds())``): made once per process, it is what every request
    served later is handed, for the process's life."""
    from . import index as project

    function = facts.enclosing_function(call)
    if function is None or not _handed_out(call, function) \
            or len(project.files_mentioning(function.name, project.search_root(facts))) > _FACTORY_FILES \
            or not _runs_at_startup(call, facts, max_hops=_FACTORY_HOPS, max_asked=_FACTORY_PLACES):
        return None
    return Lifetime(f"one `{cls.name}` is made by {function.name}(), which start-up code runs once per process, "
                    "and handed out from there", facts.context.path, call.lineno)


def _handed_out(value: ast.AST, function: FunctionNode, depth: int = 0) -> bool:
    """The object ``value`` makes leaves ``function``: returned, as it is or as an argument or item of what is
    returned (``return Container(seen=SeenIds())``), also through a local name it is bound to first."""
    if depth > 4:
        return False
    above = parent(value)
    if isinstance(above, ast.Return):
        return True
    if isinstance(above, ast.keyword):
        above = parent(above)
    items = above.values if isinstance(above, ast.Dict) else getattr(above, "elts", [])
    if isinstance(above, ast.Call) and value is not above.func \
            or isinstance(above, (ast.Tuple, ast.List, ast.Dict)) and any(item is value for item in items):
        return _handed_out(above, function, depth + 1)
    if isinstance(above, ast.Assign) and above.value is value and len(above.targets) == 1 \
            and isinstance(above.targets[0], ast.Name):
        name = above.targets[0].id
        return any(isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)
                   and _handed_out(node, function, depth + 1) for node in walk_no_nested_functions(function))
    return False


def _kept_at_startup(calls, facts: ModuleFacts, cls: ast.ClassDef) -> Optional[Lifetime]:
    for call in _through_factories(calls, facts):
        kept = _kept_on(call)
        if kept is not None and _runs_at_startup(call, facts):
            return Lifetime(f"one `{cls.name}` is made by start-up code and kept on `{kept}`, so each process "
                            "has its own", facts.context.path, call.lineno, kept_at_startup=True)
    return None


def _through_factories(calls, facts: ModuleFacts) -> Iterator[ast.Call]:
    """The calls, and for one a function of this module returns (``def make_board(): return Board()``), the
    calls of that function in this module: the object is kept where the factory's result is."""
    for call in calls:
        yield call
        above = parent(call)
        factory = facts.enclosing_function(call) if isinstance(above, ast.Return) else None
        if factory is not None and facts.enclosing_class(factory) is None:
            yield from (made for made in facts.calls_by_name.get(factory.name, ())
                        if isinstance(made.func, ast.Name) and made is not call)


def _kept_on(call: ast.AST) -> Optional[str]:
    """Where ``call``'s object is kept beyond the function that makes it: an attribute or an item of something
    the function does not own (``app.ctx.presence = Registry()``, ``app["presence"] = Registry()``).  Not
    ``self.registry = Registry()``: that lives as long as ``self`` does, which says nothing of the process."""
    above = parent(call)
    if isinstance(above, ast.Dict) and any(value is call for value in above.values):
        # ``app.extensions["hooks"] = {"ledger": Ledger(), ...}``: kept where the dict is
        kept = _kept_on(above)
        return f"{kept}[...]" if kept is not None else None
    if isinstance(above, (ast.Assign, ast.AnnAssign)) and above.value is call:
        targets = above.targets if isinstance(above, ast.Assign) else [above.target]
        for target in targets:
            holder = target.value if isinstance(target, (ast.Attribute, ast.Subscript)) else None
            root = holder
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if holder is None or not isinstance(root, ast.Name) or root.id in ("self", "cls"):
                continue
            return dotted(target) if isinstance(target, ast.Attribute) else (dotted(holder) or root.id) + "[...]"
    return None


def _runs_at_startup(call: ast.Call, facts: ModuleFacts, **bounds: int) -> bool:
    """The code making the object runs once per process as it starts (a start-up hook or what it calls)."""
    from .reach import runs

    return runs(call, facts, startup_only=True, **bounds).every_replica


def daemon_lifetime(cls: ast.ClassDef, facts: ModuleFacts) -> Optional[Lifetime]:
    """The part of ``long_lived_instance`` this module alone shows: ``cls`` runs its own loop that sleeps
    between rounds. Asked first, and on its own where only a daemon's loop methods matter, because the rest
    searches the whole project for the module-level line that makes an instance."""
    loop = _polling_loop(cls, facts)
    if loop is None:
        return None
    return Lifetime(f"`{cls.name}` runs its own polling loop, so each process keeps one for its lifetime",
                    facts.context.path, loop.lineno, daemon=True, loop_methods=_called_on_self(cls, loop))


def _called_on_self(cls: ast.ClassDef, loop: ast.AST) -> FrozenSet[str]:
    """The method holding ``loop`` and the methods it reaches through ``self.method(...)`` calls."""
    methods = {s.name: s for s in cls.body if isinstance(s, _FUNCTIONS)}
    start = ModuleFacts.enclosing_function(loop)
    pending = [start] if start is not None else []
    seen: Set[str] = {start.name} if start is not None else set()
    while pending:
        function = pending.pop()
        for node in walk_no_nested_functions(function):
            func = node.func if isinstance(node, ast.Call) else None
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self" \
                    and func.attr in methods and func.attr not in seen:
                seen.add(func.attr)
                pending.append(methods[func.attr])
    return frozenset(seen)


def _module_level_calls(statement: ast.stmt) -> Iterator[ast.Call]:
    if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.Expr)) and statement.value is not None:
        for node in walk(statement.value):
            if isinstance(node, ast.Call):
                yield node


def _polling_loop(cls: ast.ClassDef, facts: Optional[ModuleFacts] = None) -> Optional[ast.AST]:
    """A ``while`` loop in a method of ``cls`` whose body sleeps (``await asyncio.sleep(n)``, ``time.sleep(n)``,
    also through a small helper that returns the sleep)."""
    for method in cls.body:
        if not isinstance(method, _FUNCTIONS):
            continue
        loops = facts.own_nodes(method, (ast.While,)) if facts is not None else [
            node for node in walk_no_nested_functions(method) if isinstance(node, ast.While)]
        for node in loops:
            for inner in walk_no_nested_functions(node):
                if isinstance(inner, ast.Call) and (_call_last_name(inner) == "sleep" or (
                        facts is not None and _sleeps_through_helper(inner, facts))):
                    return node
    return None


def _sleeps_through_helper(call: ast.Call, facts: ModuleFacts) -> bool:
    from .forwarding import forwarded

    through = forwarded(call, facts)
    return through is not None and _call_last_name(through.call) == "sleep"


def _call_last_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def module_global_receivers(cls: ast.ClassDef, facts: ModuleFacts) -> Set[str]:
    """Module-level names of this module that hold an instance of ``cls`` however it was made (a tuple from a
    factory in the ``__main__`` block): names bound at the top level whose methods called in the module are
    methods of ``cls``."""
    methods = {s.name for s in cls.body if isinstance(s, _FUNCTIONS) and not s.name.startswith("__")}
    top_level: Set[str] = set()
    for statement in _top_level_statements(facts.tree):
        targets = statement.targets if isinstance(statement, ast.Assign) else (
            [statement.target] if isinstance(statement, ast.AnnAssign) else [])
        for target in targets:
            for node in walk(target):
                if isinstance(node, ast.Name):
                    top_level.add(node.id)
    found: Set[str] = set()
    for name in methods:
        for call in facts.calls_named(name):
            receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
            if isinstance(receiver, ast.Name) and receiver.id in top_level \
                    and not _assigns_locally(facts.enclosing_function(call), receiver.id):
                found.add(receiver.id)
    return found


def _top_level_statements(tree: ast.Module) -> Iterator[ast.stmt]:
    stack = list(reversed(tree.body))
    while stack:
        statement = stack.pop()
        yield statement
        if isinstance(statement, (ast.If, ast.Try)):
            for block in (statement.body, statement.orelse, getattr(statement, "finalbody", []),
                          *[h.body for h in getattr(statement, "handlers", [])]):
                stack.extend(reversed(block))


def _assigns_locally(function: Optional[FunctionNode], name: str) -> bool:
    """``name`` is a local of ``function`` (assigned there without ``global``, or a parameter)."""
    while function is not None:
        arguments = function.args
        if any(a.arg == name for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs):
            return True
        if name in _local_names(function):
            return True
        function = ModuleFacts.enclosing_function(function)
    return False


def _local_names(function: FunctionNode) -> FrozenSet[str]:
    """The names ``function`` assigns without declaring them ``global`` or ``nonlocal`` (Python rejects an
    assignment before such a declaration), found once per function."""
    cached = getattr(function, "_og_local_names", None)
    if cached is not None:
        return cached
    stored: Set[str] = set()
    declared: Set[str] = set()
    for node in walk_no_nested_functions(function):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stored.add(node.id)
    names = frozenset(stored - declared)
    function._og_local_names = names
    return names
