"""Which receivers are Redis clients or caches, and which calls on them do which command.

Only receivers whose origin is visible count: a client built by ``redis.Redis(...)``, ``redis.from_url``,
``redis.asyncio``, ``django_redis.get_redis_connection``, Django's ``cache`` / ``caches[...]``,
Flask-Caching, a parameter annotated with one of those types, or a client the project makes (a factory's
return, a class that subclasses or wraps a client, an untyped parameter every caller fills with one).
"""
from __future__ import annotations

import ast
from functools import lru_cache
from typing import Dict, Iterable, List, Optional, Tuple

from ..analysis.facts import ModuleFacts, parent, walk_no_nested_functions
from ..analysis.handles import Handle, Handles
from ..analysis.redis_arguments import has_spread, words
from .arq_contexts import is_arq_context_client
from .definitions import definition, definition_facts
from ..knowledge import redis_clients as known

# -- which receivers are Redis ---------------------------------------------------------------------------


class RedisClients(Handles):
    """The bindings machinery of :class:`Handles`, fed with Redis constructors instead of database ones.

    Beyond a visible constructor, a receiver is a client when the project makes it one: a factory of the
    project whose return (or return annotation) is a client (``get_redis_client()``), a class of the project
    that subclasses a client or wraps one behind get/set/delete methods (``ScopedCache(cache, scope)``), or
    a parameter with no useful annotation (``client: Any``) that every caller in the module fills with a
    client.
    """

    CACHE_KEY = "redis_clients"
    CONSTRUCTORS = known.CONSTRUCTORS
    OBJECTS = known.OBJECTS
    ANNOTATIONS = known.ANNOTATIONS

    def of(self, expr: Optional[ast.AST], _depth: int = 0) -> Optional[Handle]:
        if json_module_of(expr) is not None:
            # ``r.json().get(key)``: the RedisJSON commands go to the client they are asked of
            return self.of(json_module_of(expr), _depth)
        if isinstance(expr, ast.Subscript):  # django.core.cache.caches["locks"]
            if self.facts.qualify(expr.value) in known.CACHE_MAPPINGS:
                return Handle(known.DJANGO_CACHE, "django", "caches")
            if is_arq_context_client(expr, self.facts):
                return Handle(*known.ARQ_CLIENT, "arq")
            return self._kept(expr, _depth)
        found = super().of(expr, _depth)
        return found if found is not None or not isinstance(expr, ast.Attribute) else self._kept(expr, _depth)

    def _kept(self, expr: ast.AST, depth: int) -> Optional[Handle]:
        """``current_app.extensions["redis"]``, ``request.app.state.redis``: the client the application keeps
        there, when every assignment of that place in the project makes one of the same kind."""
        from .app_namespaces import kept_values, namespace_attribute

        if depth > self._MAX_DEPTH or namespace_attribute(expr) is None:
            return None
        kinds = set()
        for value, where in kept_values(expr, self.facts):
            made = RedisClients.of_module(where).of(value, depth + 1)
            if made is None:
                return None
            kinds.add((made.kind, made.library, made.how))
        if len(kinds) != 1:
            return None
        kind, library, how = kinds.pop()
        return Handle(kind, library, how)

    def _of_imported(self, qualified: str, depth: int) -> Optional[Handle]:
        """A client another module of the project binds at its top level (``from app.cache import
        redis_client as rc``, ``import app.cache`` then ``app.cache.redis_client``): what that binding holds
        there (CLI only, where other modules are read).  A factory or class imported so is a call's question
        (:func:`_made_by_project`), not a name's."""
        if depth > self._MAX_DEPTH:
            return None
        located = definition_facts(qualified, self.facts)
        if located is None or located[0] is self.facts:
            return None
        where, name = located
        other = RedisClients.of_module(where)
        bindings = other._bindings(where.tree).get(name)
        found = other._agree(bindings, depth + 1) if bindings else None
        # The binding lives in the other file: its node means nothing here.
        return Handle(found.kind, found.library, found.how) if found is not None else None

    def _of_call(self, call: ast.Call, depth: int) -> Optional[Handle]:
        callee = self.facts.callee(call)
        if callee in self.CONSTRUCTORS:
            kind, library = self.CONSTRUCTORS[callee]
            return Handle(kind, library, callee.rsplit(".", 1)[-1], call)
        if depth > self._MAX_DEPTH:
            return None
        made = _made_by_project(call, callee, self.facts, depth)
        if made is not None:
            return Handle(made[0], made[1], made[2], call)
        return None

    def _agree(self, bindings, depth: int) -> Optional[Handle]:
        found: Optional[Handle] = None
        for origin, value, is_annotation in bindings:
            if not is_annotation and isinstance(value, ast.Constant) and value.value is None:
                continue  # ``_client = None`` until ``global _client; _client = redis.from_url(...)``: a placeholder
            handle = self._bound(origin, value, is_annotation, depth)
            if handle is None:
                return None
            if found is not None and found.kind != handle.kind:
                return None
            found = found or handle
        return found

    def _bound(self, origin: ast.AST, value: Optional[ast.AST], is_annotation: bool, depth: int) -> Optional[Handle]:
        if not is_annotation:
            handle = self.of(value, depth)
            if handle is None and isinstance(origin, ast.AnnAssign):
                # ``r: redis.Redis = ctx["redis"]``: what the value is the code does not show, its annotation does
                return self._bound(origin, origin.annotation, True, depth)
            if handle is not None and isinstance(origin, ast.withitem):
                handle = Handle(handle.kind, handle.library, handle.how, origin)
            return handle
        target = self._annotated_type(value)
        qualified = self.facts.qualify(target) if target is not None else None
        entry = self.ANNOTATIONS.get(qualified or "")
        if entry:
            return Handle(entry[0], entry[1], qualified.rsplit(".", 1)[-1], origin)
        if qualified and qualified not in _UNTYPED and depth <= self._MAX_DEPTH:
            made = _project_class(qualified, self.facts, depth, None)
            if made is not None:
                return Handle(made[0], made[1], made[2], origin)
        if isinstance(origin, ast.arg) and (qualified is None or qualified in _UNTYPED
                                            or qualified in known.CLIENT_BASES):
            # Untyped, or typed with a client class whose backend the type does not tell (Flask-Caching's
            # `Cache` may be a per-process SimpleCache): what the callers pass decides.
            return self._from_callers(origin, depth)
        return None

    def _annotated_type(self, node: Optional[ast.AST]) -> Optional[ast.AST]:
        """``Optional[X]``, ``X | None``, ``"X"`` mean X; ``Redis[Any]`` (a generic client) means Redis."""
        for _ in range(8):
            if isinstance(node, ast.Subscript):
                wrapper = (self.facts.qualify(node.value) or "").rsplit(".", 1)[-1]
                if wrapper in _TYPE_WRAPPERS:
                    inner = node.slice
                    node = inner.elts[0] if isinstance(inner, ast.Tuple) and inner.elts else inner
                else:
                    node = node.value
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
                node = node.right if isinstance(node.left, ast.Constant) and node.left.value is None else node.left
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                try:
                    node = ast.parse(node.value, mode="eval").body
                except SyntaxError:
                    return None
            else:
                return node
        return None

    def _from_callers(self, arg: ast.arg, depth: int) -> Optional[Handle]:
        """``def _release(self, client: Any)`` called as ``self._release(get_redis_client())``: what every caller
        in the module passes."""
        if depth > self._MAX_DEPTH:
            return None
        function = parent(parent(arg))
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        positional = function.args.posonlyargs + function.args.args
        cls_node = parent(function) if isinstance(parent(function), ast.ClassDef) else None
        is_method = cls_node is not None and not any(
            isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list)
        index = next((i for i, a in enumerate(positional) if a is arg), None)
        if index is not None and is_method:
            index -= 1  # self / cls
        if function.name == "__init__" and cls_node is not None:
            names, method = (cls_node.name,), False
        else:
            names, method = (function.name,), cls_node is not None
        found: Optional[Handle] = None
        for call in self.facts.calls_named(*names):
            func = call.func
            if method:
                if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                        and func.value.id in ("self", "cls") and self.facts.enclosing_class(call) is cls_node):
                    continue
            elif not isinstance(func, ast.Name):
                continue
            if has_spread(call):
                return None
            passed = next((k.value for k in call.keywords if k.arg == arg.arg), None)
            if passed is None and index is not None and 0 <= index < len(call.args):
                passed = call.args[index]
            if passed is None:
                continue
            handle = self.of(passed, depth + 1)
            if handle is None or (found is not None and found.kind != handle.kind):
                return None
            found = found or handle
        return found


_TYPE_WRAPPERS = frozenset({"Optional", "Annotated", "Union", "Final", "ClassVar", "Awaitable", "Coroutine"})
_UNTYPED = frozenset({"typing.Any", "Any", "object", "typing_extensions.Any"})


def json_module_of(expr: Optional[ast.AST]) -> Optional[ast.AST]:
    """The client of ``<client>.json()``, RedisJSON's commands (``JSON.GET``, ``JSON.SET``) on it."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == known.JSON_MODULE \
            and not expr.args and not expr.keywords:
        return expr.func.value
    return None


def redis_call(call: ast.Call, facts: ModuleFacts) -> Optional[Handle]:
    """The client a ``<client>.<command>(...)`` call is sent to, when its origin is visible."""
    if not isinstance(call.func, ast.Attribute):
        return None
    return RedisClients.of_module(facts).of(call.func.value)


def command_of(call: ast.Call, handle: Handle) -> Optional[str]:
    """What a call on a client does: get, exists, set, add, setnx or delete (``None``: something else)."""
    if not isinstance(call.func, ast.Attribute):
        return None
    name = call.func.attr
    if handle.kind != known.WRAPPER:
        return known.COMMANDS.get(name)
    named = command_name(name)
    return named[0] if named is not None else None


# -- clients the project makes ------------------------------------------------------------------------
# (kind, library, how) of a factory or class, looked up once per definition and kept with the facts of the
# module that defines it (a changed file gets new facts, so nothing stale survives); a definition being looked
# up counts as no client, so a factory that returns itself ends the walk.  What a definition makes does not
# depend on how deep the question that first asked it was: it is looked up from depth 0 (the in-progress
# marker, not the depth, ends a cycle), so a call put behind a helper is not cut short.
_Made = Tuple[str, str, str]


def _remembered(facts: ModuleFacts, key: str, build) -> Optional[_Made]:
    made: Dict[str, Optional[_Made]] = facts.cached("redis_made_clients", lambda _facts: {})
    if key in made:
        return made[key]
    made[key] = None
    result = build()
    made[key] = result
    return result


def _made_by_project(call: ast.Call, callee: Optional[str], facts: ModuleFacts, depth: int) -> Optional[_Made]:
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
        cls_node = facts.enclosing_class(call)
        method = _method(cls_node, func.attr) if cls_node is not None else None
        if method is None:
            return None
        return _remembered(facts, f"{cls_node.name}.{func.attr}@{method.lineno}",
                           lambda: _returned_client(method, facts, 0))
    method = facts.module_method(func) if isinstance(func, ast.Attribute) else None
    if method is not None:  # ``service.make_client()`` on a module-level instance of a class defined here
        owner = facts.enclosing_class(method)
        return _remembered(facts, f"{owner.name if owner else ''}.{method.name}@{method.lineno}",
                           lambda: _returned_client(method, facts, 0))
    if not callee:
        return None
    found = definition(callee, facts)
    if found is None:
        return None
    defined, where = found
    if isinstance(defined, ast.ClassDef):
        return _class_client(defined, where, depth, call, facts)
    return _remembered(where, defined.name, lambda: _returned_client(defined, where, 0))


def _method(cls_node: ast.ClassDef, name: str) -> Optional[ast.AST]:
    for statement in cls_node.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == name:
            return statement
    return None


def _returned_client(function, facts: ModuleFacts, depth: int) -> Optional[_Made]:
    """A factory's client: its return annotation, else what its ``return`` statements give (one is enough,
    as long as none gives another kind of client)."""
    clients = RedisClients.of_module(facts)
    if function.returns is not None:
        handle = clients._bound(function, function.returns, True, depth + 1)
        if handle is not None:
            return handle.kind, handle.library, handle.how
    found: Optional[Handle] = None
    for node in walk_no_nested_functions(function):
        if isinstance(node, ast.Return) and node.value is not None:
            handle = clients.of(node.value, depth + 1)
            if handle is None:
                continue
            if found is not None and found.kind != handle.kind:
                return None
            found = found or handle
    return (found.kind, found.library, found.how) if found is not None else None


def _project_class(qualified: str, facts: ModuleFacts, depth: int, call: Optional[ast.Call]) -> Optional[_Made]:
    found = definition(qualified, facts)
    if found is None or not isinstance(found[0], ast.ClassDef):
        return None
    return _class_client(found[0], found[1], depth, call, facts)


def _class_client(cls_node: ast.ClassDef, facts: ModuleFacts, depth: int, call: Optional[ast.Call],
                  caller: ModuleFacts) -> Optional[_Made]:
    """A class of the project is a client when it subclasses one, or when it has get/set/delete methods and
    holds a client (an attribute built from one, or one handed to its constructor)."""
    made = _remembered(facts, f"class {cls_node.name}@{cls_node.lineno}",
                       lambda: _class_client_by_definition(cls_node, facts, 0))
    if made is not None or call is None or not _has_verb_methods(cls_node):
        return made
    clients = RedisClients.of_module(caller)
    for argument_node in list(call.args) + [k.value for k in call.keywords]:
        if isinstance(argument_node, ast.Starred):
            continue
        handle = clients.of(argument_node, depth + 1)
        if handle is not None:
            return known.WRAPPER, handle.kind, cls_node.name
    return None


def _class_client_by_definition(cls_node: ast.ClassDef, facts: ModuleFacts, depth: int) -> Optional[_Made]:
    for base in cls_node.bases:
        qualified = facts.qualify(base)
        if not qualified:
            continue
        if qualified in known.CLIENT_BASES:
            kind, library = known.CLIENT_BASES[qualified]
            return kind, library, cls_node.name
        if depth <= Handles._MAX_DEPTH:
            inherited = _project_class(qualified, facts, depth + 1, None)
            if inherited is not None:
                return inherited[0], inherited[1], cls_node.name
    if not _has_verb_methods(cls_node):
        return None
    clients = RedisClients.of_module(facts)
    for name, bindings in clients._self_attributes(cls_node).items():
        for origin, value, is_annotation in bindings:
            if is_annotation or value is None:
                continue
            handle = clients.of(value, depth + 1)
            if handle is not None:
                return known.WRAPPER, handle.kind, cls_node.name
    return None


def _has_verb_methods(cls_node: ast.ClassDef) -> bool:
    verbs = set()
    for statement in cls_node.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            named = command_name(statement.name)
            if named is not None:
                verbs.add(named[0])
    return "get" in verbs and "delete" in verbs and bool(verbs & {"set", "add"})


# -- which calls do which command ----------------------------------------------------------------------


@lru_cache(maxsize=4096)  # asked of every method name of every call a rule looks at
def command_name(name: str) -> Optional[Tuple[str, bool]]:
    """(command, exact) for a method name: a known client's command, or a verb a wrapper's method may carry."""
    if name in known.COMMANDS:
        return known.COMMANDS[name], True
    spelled = set(words(name))
    matching = [command for command, verbs in known.VERBS.items() if spelled & verbs]
    if len(matching) != 1 or not spelled <= known.VERBS[matching[0]] | known.VERB_COMPANIONS:
        return None
    return matching[0], False


def _shape_fits(call: ast.Call, command: str) -> bool:
    """Cheap syntax checks before a receiver is resolved: a write has a key and a value, a delete one key."""
    count = len(call.args) + len(call.keywords)
    if command in ("set", "add", "setnx"):
        return count >= 2
    if command == "delete":
        return len(call.args) == 1 and not call.keywords
    return count >= 1


def client_calls(facts: ModuleFacts, commands: Iterable[str],
                  calls: Optional[Iterable[ast.Call]] = None) -> List[Tuple[ast.Call, Handle, str]]:
    """Calls on a client that do one of ``commands``, in source order: the known clients' exact command names
    and a wrapper's methods named by their verbs.  ``calls``: only among these."""
    wanted = set(commands)
    if calls is None:
        calls = [call for name, named in facts.calls_by_name.items() if command_name(name) for call in named]
    found = []
    for call in calls:
        if not isinstance(call.func, ast.Attribute):
            continue
        named = command_name(call.func.attr)
        if named is None or named[0] not in wanted or not _shape_fits(call, named[0]):
            continue
        handle = redis_call(call, facts)
        if handle is None or (not named[1] and handle.kind != known.WRAPPER):
            continue
        command = command_of(call, handle)
        if command in wanted:
            found.append((call, handle, command))
    found.sort(key=lambda item: (item[0].lineno, item[0].col_offset))
    return found
