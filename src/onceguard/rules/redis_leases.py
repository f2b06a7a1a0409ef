"""Redis leases: a lock key that can outlive its holder (OG501) and a release that can drop somebody
else's lock (OG502).  reference/frameworks.md §5.

Only receivers whose origin is visible count: a client built by ``redis.Redis(...)``,
``redis.from_url``, ``redis.asyncio``, ``django_redis.get_redis_connection``, Django's ``cache`` /
``caches[...]``, Flask-Caching, a parameter annotated with one of those types, or a client the project
makes (a factory's return, a class that subclasses or wraps a client, an untyped parameter every caller
fills with one).  A key is a lease when its use says so: set only if absent (or checked for absence
first) to decide whether to do work and dropped again after it, a two-step acquire whose result guards
the work, or an NX key whose own text calls it a lock.  Read-through caches, cooldowns, counters and their
invalidation are not leases, and a key in a per-process Django cache excludes nobody on another replica.
"""
from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Tuple

from ..project import index as project
from ..analysis.facts import ModuleFacts, ancestors, parent, walk_no_nested_functions
from .fix_plans import atomic_set_fix, lock_ttl_fix
from ..analysis.handles import Handle, Handles
from ..knowledge import redis_clients as known
from ..model import Diagnostic
from .registry import register
from .base import Rule

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
        if isinstance(expr, ast.Subscript):  # django.core.cache.caches["locks"]
            if self.facts.qualify(expr.value) in known.CACHE_MAPPINGS:
                return Handle(known.DJANGO_CACHE, "django", "caches")
            return None
        return super().of(expr, _depth)

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
    named = _command_name(name)
    return named[0] if named is not None else None


# -- clients the project makes ------------------------------------------------------------------------
# (kind, library, how) of a factory or class, looked up once per definition and kept with the facts of the
# module that defines it (a changed file gets new facts, so nothing stale survives); a definition being looked
# up counts as no client, so a factory that returns itself ends the walk.
_Made = Tuple[str, str, str]


def _definition_facts(qualified: str, facts: ModuleFacts) -> Optional[Tuple[ModuleFacts, str]]:
    """The module facts and local name of a definition: this module for a local name, another module of the
    project (CLI only) for an imported one, following re-exports (``from .dual import DualCache`` in a
    package's ``__init__``)."""
    if "." not in qualified:
        return facts, qualified
    for _ in range(4):
        if not facts.context.cross_file:
            return None
        module, _, name = qualified.rpartition(".")
        path = project.module_path(module, project.roots_for(facts))
        if path is None:
            return None
        other = project.module_facts(path, facts.config)
        if other is None:
            return None
        if _top_level(other, name) is not None or not other.imports.is_imported(name):
            return other, name
        forwarded = other.imports.qualify_dotted(name)
        if forwarded == qualified or "." not in forwarded:
            return other, name
        facts, qualified = other, forwarded
    return None


def _top_level(facts: ModuleFacts, name: str) -> Optional[ast.AST]:
    found = None
    for statement in facts.tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and statement.name == name:
            found = statement
    return found


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
                           lambda: _returned_client(method, facts, depth))
    if not callee:
        return None
    located = _definition_facts(callee, facts)
    if located is None:
        return None
    where, name = located
    definition = _top_level(where, name)
    if definition is None:
        return None
    if isinstance(definition, ast.ClassDef):
        return _class_client(definition, where, depth, call, facts)
    return _remembered(where, name, lambda: _returned_client(definition, where, depth))


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
    located = _definition_facts(qualified, facts)
    if located is None:
        return None
    where, name = located
    definition = _top_level(where, name)
    if not isinstance(definition, ast.ClassDef):
        return None
    return _class_client(definition, where, depth, call, facts)


def _class_client(cls_node: ast.ClassDef, facts: ModuleFacts, depth: int, call: Optional[ast.Call],
                  caller: ModuleFacts) -> Optional[_Made]:
    """A class of the project is a client when it subclasses one, or when it has get/set/delete methods and
    holds a client (an attribute built from one, or one handed to its constructor)."""
    made = _remembered(facts, f"class {cls_node.name}@{cls_node.lineno}",
                       lambda: _class_client_by_definition(cls_node, facts, depth))
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
            named = _command_name(statement.name)
            if named is not None:
                verbs.add(named[0])
    return "get" in verbs and "delete" in verbs and bool(verbs & {"set", "add"})


# -- which Django caches are per process --------------------------------------------------------------
_settings_cache: Dict[str, Optional[bool]] = {}
_SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", "site-packages", ".tox"})


def per_process(handle: Handle, facts: ModuleFacts) -> bool:
    """Django's default cache in a project whose settings (visible, CLI only) configure no shared one: it is
    ``LocMemCache`` (or a file/dummy cache) in every process, so a key there excludes nobody on another replica."""
    if handle.kind != known.DJANGO_CACHE or handle.how != "cache" or not facts.context.cross_file:
        return False
    if not facts.context.path:
        return False
    # The checked file's own project (the directory above its top package), not every project under the
    # configured root: a monorepo's other services have settings of their own.
    roots = project.package_root(facts.context.path)
    if roots not in _settings_cache:
        _settings_cache[roots] = _default_cache_is_local(roots, facts)
    return bool(_settings_cache[roots])


def _default_cache_is_local(roots: str, facts: ModuleFacts) -> Optional[bool]:
    """True: the settings leave the default cache per process; False: they configure it; None: no settings seen."""
    seen_settings = False
    backends: List[Optional[str]] = []
    for root in roots.split(os.pathsep):
        if not root or not os.path.isdir(root):
            continue
        for directory, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.startswith(".")]
            in_settings_package = os.path.basename(directory) == "settings"
            for filename in files:
                if not filename.endswith(".py") or "test" in filename:
                    continue
                if not (filename.startswith("settings") or in_settings_package):
                    continue
                other = project.module_facts(os.path.join(directory, filename), facts.config)
                if other is None:
                    continue
                names = _module_assigned_names(other.tree)
                if not names & known.DJANGO_SETTINGS_MARKERS and "CACHES" not in names:
                    continue
                seen_settings = True
                backends.extend(_default_backends(other.tree))
    if not seen_settings:
        return None
    return all(b is not None and b in known.PER_PROCESS_CACHE_BACKENDS for b in backends)


def _module_assigned_names(tree: ast.Module) -> set:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                while isinstance(target, ast.Subscript):
                    target = target.value
                if isinstance(target, ast.Name):
                    names.add(target.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "CACHES":
            names.add("CACHES")
    return names


def _default_backends(tree: ast.Module) -> List[Optional[str]]:
    """The backend given to the default cache by each assignment (``None`` where it is not a literal)."""
    found: List[Optional[str]] = []

    def backend_of(value: ast.AST) -> Optional[str]:
        if isinstance(value, ast.Dict):
            for k, v in zip(value.keys, value.values):
                if isinstance(k, ast.Constant) and k.value == "BACKEND":
                    return v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else None
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "CACHES":
            found.append(None)  # CACHES.update(...)
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Name) and target.id == "CACHES":
                if isinstance(node.value, ast.Dict):
                    for k, v in zip(node.value.keys, node.value.values):
                        if k is None:
                            found.append(None)
                        elif isinstance(k, ast.Constant) and k.value == "default":
                            found.append(backend_of(v))
                else:
                    found.append(None)
            elif (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                  and target.value.id == "CACHES"):
                key = target.slice
                if isinstance(key, ast.Constant) and key.value != "default":
                    continue
                found.append(backend_of(node.value))
    return found


# -- arguments ----------------------------------------------------------------------------------------


def has_spread(call: ast.Call) -> bool:
    """``*args`` or ``**kwargs``: which arguments are passed is not visible."""
    return any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)


def argument(call: ast.Call, arg: known.Arg, keyword: Optional[str] = None) -> Optional[ast.AST]:
    name = keyword or arg.keyword
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    if arg.position is not None and arg.position < len(call.args):
        return call.args[arg.position]
    return None


def is_none(node: Optional[ast.AST]) -> bool:
    return node is None or (isinstance(node, ast.Constant) and node.value is None)


def is_false(node: Optional[ast.AST]) -> bool:
    return node is None or (isinstance(node, ast.Constant) and node.value in (False, None, 0))


def key_argument(call: ast.Call, handle: Handle, arg: known.Arg) -> Optional[ast.AST]:
    keyword = known.CACHE_KEY_KEYWORD if handle.kind in (known.DJANGO_CACHE, known.CACHE, known.WRAPPER) else None
    return argument(call, arg, keyword)


def short(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- keys ---------------------------------------------------------------------------------------------

_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_MAX_TEXT_DEPTH = 6


def _words(text: str) -> Iterable[str]:
    return (w.lower() for w in _WORD.findall(text))


def key_names_a_lock(key: Optional[ast.AST], facts: ModuleFacts) -> bool:
    """``"lock:report"``, ``f"{job}:lock"``, ``self.lock_key`` holding ``"lease:..."``: the key's own text calls it
    a lock.  The names of the variables that hold or build it do not count (``lock_name``, ``LOCK_KEY``): a
    name is a guess, the stored key is what every replica sees."""
    if key is None:
        return False
    text = key_text(key, facts)
    return text is not None and any(word in known.LOCK_KEY_WORDS for word in _words(text))


def key_text(node: ast.AST, facts: ModuleFacts, depth: int = 0) -> Optional[str]:
    """The literal text of a key, its variable parts as ``{}``: through f-strings, concatenation, local and
    module constants, imported constants (CLI), ``self`` attributes and properties, and methods returning it."""
    if depth > _MAX_TEXT_DEPTH or node is None:
        return None
    depth += 1
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{}"
                       for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = key_text(node.left, facts, depth), key_text(node.right, facts, depth)
        if left is None and right is None:
            return None
        return (left or "{}") + (right or "{}")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return key_text(node.left, facts, depth)
    if isinstance(node, ast.Await):
        return key_text(node.value, facts, depth)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "format":
            return key_text(func.value, facts, depth)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
            return _member_text(func.value, func.attr, facts, depth, called=True)
        return None
    if isinstance(node, ast.Name):
        return _name_text(node, facts, depth)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        if node.value.id in ("self", "cls"):
            return _member_text(node.value, node.attr, facts, depth, called=False)
        qualified = facts.qualify(node)
        if qualified and "." in qualified:
            return _imported_text(qualified, facts, depth)
    return None


def _single_value(bindings) -> Optional[ast.AST]:
    values = [value for _, value, is_annotation in bindings if not is_annotation and value is not None]
    return values[0] if len(values) == 1 and len(bindings) == 1 else None


def _name_text(node: ast.Name, facts: ModuleFacts, depth: int) -> Optional[str]:
    clients = RedisClients.of_module(facts)
    for scope in clients._scopes_of(node):
        bindings = clients._bindings(scope).get(node.id)
        if bindings:
            value = _single_value(bindings)
            return key_text(value, facts, depth) if value is not None else None
    qualified = facts.qualify(node)
    if qualified and qualified != node.id:
        return _imported_text(qualified, facts, depth)
    return None


def _imported_text(qualified: str, facts: ModuleFacts, depth: int) -> Optional[str]:
    located = _definition_facts(qualified, facts)
    if located is None or located[0] is facts:
        return None
    where, name = located
    values = []
    for statement in where.tree.body:
        if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                     for t in statement.targets):
            values.append(statement.value)
        elif (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
              and statement.target.id == name and statement.value is not None):
            values.append(statement.value)
    return key_text(values[0], where, depth) if len(values) == 1 else None


def _member_text(receiver: ast.Name, attr: str, facts: ModuleFacts, depth: int, called: bool) -> Optional[str]:
    """``self.key`` / ``self.key_for()`` / a property: in the class, then in its bases (CLI: in other modules)."""
    cls_node = facts.enclosing_class(receiver)
    where = facts
    for _ in range(4):
        if cls_node is None:
            return None
        text = _text_in_class(cls_node, attr, where, depth, called)
        if text is not None:
            return text
        base = next((b for b in cls_node.bases if isinstance(b, (ast.Name, ast.Attribute))), None)
        if base is None:
            return None
        qualified = where.qualify(base)
        located = _definition_facts(qualified, where) if qualified else None
        if located is None:
            return None
        where, name = located
        definition = _top_level(where, name)
        cls_node = definition if isinstance(definition, ast.ClassDef) else None
    return None


def _text_in_class(cls_node: ast.ClassDef, attr: str, facts: ModuleFacts, depth: int, called: bool) -> Optional[str]:
    for statement in cls_node.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == attr:
            is_property = any(_decorator_name(d) in ("property", "cached_property") for d in statement.decorator_list)
            if called == is_property:
                return None
            returns = [n.value for n in walk_no_nested_functions(statement)
                       if isinstance(n, ast.Return) and n.value is not None]
            return key_text(returns[0], facts, depth) if len(returns) == 1 else None
        if not called and isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if any(isinstance(t, ast.Name) and t.id == attr for t in targets) and statement.value is not None:
                return key_text(statement.value, facts, depth)
    if called:
        return None
    values = [value for _, value, is_annotation in RedisClients.of_module(facts)._self_attributes(cls_node).get(attr, [])
              if not is_annotation and value is not None]
    texts = {key_text(v, facts, depth) for v in values}
    return texts.pop() if len(texts) == 1 else None


def _decorator_name(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def key_scope(key: ast.AST, facts: ModuleFacts) -> Tuple[str, int]:
    """Where two spellings of the same key mean the same key: a function, a class (``self.key``), the module."""
    function = facts.enclosing_function(key)
    head = key.func if isinstance(key, ast.Call) else key
    if isinstance(head, ast.Attribute) and isinstance(head.value, ast.Name) and head.value.id in ("self", "cls"):
        cls_node = facts.enclosing_class(key)
        if cls_node is not None:
            return ("class", id(cls_node))
    if isinstance(key, ast.Name) and function is not None and key.id not in _local_names(function, facts):
        return ("module", 0)
    if isinstance(key, ast.Constant):
        return ("module", 0)
    return ("function", id(function))


def _local_names(function: ast.AST, facts: ModuleFacts) -> frozenset:
    def build(_facts: ModuleFacts) -> frozenset:
        names = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
        for node in walk_no_nested_functions(function):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
        return frozenset(names)

    return facts.cached(f"local_names:{id(function)}", build)


def canonical_key(key: ast.AST, facts: ModuleFacts) -> ast.AST:
    """``lock_key = self.lock_key_for()`` then ``r.delete(lock_key)``: the local stands for what it was bound to
    once, when that means the same in every method (a constant, ``self.x``, ``self.x()`` with constants)."""
    if not isinstance(key, ast.Name):
        return key
    function = facts.enclosing_function(key)
    if function is None:
        return key
    bindings = RedisClients.of_module(facts)._bindings(function).get(key.id)
    value = _single_value(bindings) if bindings else None
    if value is None:
        return key
    stable = isinstance(value, ast.Constant) or (
        isinstance(value, (ast.Attribute, ast.Call))
        and all(isinstance(n, ast.Constant) or (isinstance(n, ast.Name) and n.id in ("self", "cls"))
                or isinstance(n, (ast.Attribute, ast.Call, ast.Load, ast.expr_context))
                for n in ast.walk(value))
        and any(isinstance(n, ast.Name) and n.id in ("self", "cls") for n in ast.walk(value)))
    return value if stable else key


def key_identity(key: ast.AST, facts: ModuleFacts) -> Tuple[Tuple[str, int], str]:
    key = canonical_key(key, facts)
    return key_scope(key, facts), ast.dump(key)


# -- how a result is used -----------------------------------------------------------------------------


def result_tested(call: ast.Call, facts: ModuleFacts) -> bool:
    """The call's result decides whether work runs: tested by ``if``/``while``, returned, or kept and tested."""
    node: ast.AST = call
    for above in ancestors(call):
        if isinstance(above, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            return node is above.test
        if isinstance(above, ast.Return):
            return True
        if isinstance(above, (ast.Assign, ast.AnnAssign)):
            targets = above.targets if isinstance(above, ast.Assign) else [above.target]
            return _names_tested({t.id for t in targets if isinstance(t, ast.Name)}, call, facts)
        if not isinstance(above, ast.expr):
            return False
        node = above
    return False


def _names_tested(names: set, call: ast.Call, facts: ModuleFacts) -> bool:
    if not names:
        return False
    function = facts.enclosing_function(call)
    for node in walk_no_nested_functions(function if function is not None else facts.tree):
        if isinstance(node, (ast.If, ast.While)):
            tested = node.test
        elif isinstance(node, ast.Return) and node.value is not None:
            tested = node.value
        else:
            continue
        if any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(tested)):
            return True
    return False


# -- lock acquisitions ----------------------------------------------------------------------------------


@dataclass
class Acquire:
    call: ast.Call
    handle: Handle
    command: str  # set, setnx, add
    key: Optional[ast.AST]
    identity: Optional[tuple]  # see key_identity
    nx: bool
    expires: bool
    two_step_expiry: Optional[ast.Call] = None  # the EXPIRE that follows a SETNX


@dataclass
class Release:
    call: ast.Call
    handle: Handle
    key: ast.AST
    identity: tuple


def _command_name(name: str) -> Optional[Tuple[str, bool]]:
    """(command, exact) for a method name: a known client's command, or a verb a wrapper's method may carry."""
    if name in known.COMMANDS:
        return known.COMMANDS[name], True
    words = set(_words(name))
    matching = [command for command, verbs in known.VERBS.items() if words & verbs]
    if len(matching) != 1 or not words <= known.VERBS[matching[0]] | known.VERB_COMPANIONS:
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


def _client_calls(facts: ModuleFacts, commands: Iterable[str],
                  calls: Optional[Iterable[ast.Call]] = None) -> List[Tuple[ast.Call, Handle, str]]:
    """Calls on a client that do one of ``commands``, in source order: the known clients' exact command names
    and a wrapper's methods named by their verbs.  ``calls``: only among these."""
    wanted = set(commands)
    if calls is None:
        calls = [call for name, named in facts.calls_by_name.items() if _command_name(name) for call in named]
    found = []
    for call in calls:
        if not isinstance(call.func, ast.Attribute):
            continue
        named = _command_name(call.func.attr)
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


def _calls_after_in_function(call: ast.Call, names: Iterable[str], facts: ModuleFacts) -> List[ast.Call]:
    function = facts.enclosing_function(call)
    return [
        c for c in facts.calls_named(*names)
        if facts.enclosing_function(c) is function and (c.lineno, c.col_offset) > (call.lineno, call.col_offset)
    ]


def _expiry_of_cache_write(call: ast.Call, handle: Handle) -> bool:
    timeout = argument(call, known.CACHE_TIMEOUT)
    if handle.kind == known.DJANGO_CACHE:
        # An omitted timeout is the backend default, which expires; only an explicit None never does.
        return not (timeout is not None and is_none(timeout))
    # Flask-Caching / cachelib: None is the default timeout; 0 never expires.
    return not (isinstance(timeout, ast.Constant) and timeout.value == 0)


def _find_acquires(facts: ModuleFacts) -> List[Acquire]:
    found: List[Acquire] = []
    for call, handle, command in _client_calls(facts, ("set", "add", "setnx")):
        if has_spread(call):
            continue
        if handle.kind == known.REDIS:
            if command == "add":
                continue
            key = argument(call, known.SET_KEY)
            if command == known.SETNX:
                nx, expires = True, False
            else:
                nx = not is_false(argument(call, known.SET_NX))
                expires = any(not is_none(argument(call, arg)) for arg in known.SET_EXPIRY)
        elif handle.kind in (known.DJANGO_CACHE, known.CACHE):
            if command == known.SETNX:
                continue
            key = argument(call, known.CACHE_KEY)
            expires = _expiry_of_cache_write(call, handle)
            nx = command == "add" or not is_false(argument(call, known.CACHE_NX))
        else:  # a wrapper: its own spelling, so only what its arguments show
            key = argument(call, known.CACHE_KEY) or argument(call, known.Arg("name"))
            nx = command in ("add", known.SETNX) or not is_false(argument(call, known.CACHE_NX))
            expiry = [k.value for k in call.keywords if k.arg in known.WRAPPER_EXPIRY]
            if len(call.args) > 2:
                expiry.append(call.args[2])
            # Without one, the wrapper's default applies, which this rule cannot see: assume it expires.
            expires = not expiry or any(not is_none(e) for e in expiry)
        if key is None or not is_false(argument(call, known.Arg("xx"))):
            continue  # SET XX only refreshes a key somebody already holds
        acquire = Acquire(call, handle, command, key, key_identity(key, facts), nx, expires)
        if not expires and handle.kind == known.REDIS:
            for later in _calls_after_in_function(call, known.EXPIRY_COMMANDS, facts):
                if redis_call(later, facts) is not None and later.args and ast.dump(later.args[0]) == ast.dump(key):
                    acquire.two_step_expiry = later
                    break
        found.append(acquire)
    return found


def _find_releases(facts: ModuleFacts) -> List[Release]:
    """``r.delete(key)``, ``cache.delete(key)``, ``r.execute_command("DEL", key)``, a wrapper's
    ``delete_cache(key)``: one key dropped whatever its value."""
    found = []
    for call, handle, _ in _client_calls(facts, ("delete",)):
        if len(call.args) == 1 and not call.keywords and not isinstance(call.args[0], ast.Starred):
            found.append(Release(call, handle, call.args[0], key_identity(call.args[0], facts)))
    for call in facts.calls_named("execute_command"):
        if (len(call.args) == 2 and isinstance(call.args[0], ast.Constant)
                and str(call.args[0].value).upper() in known.RAW_DELETE):
            handle = redis_call(call, facts)
            if handle is not None:
                found.append(Release(call, handle, call.args[1], key_identity(call.args[1], facts)))
    found.sort(key=lambda item: (item.call.lineno, item.call.col_offset))
    return found


def _after(first: ast.AST, second: ast.AST) -> bool:
    return (second.lineno, second.col_offset) > (first.lineno, first.col_offset)


@dataclass
class Leases:
    releases: List[Release]
    locks: List[Acquire]  # acquires whose use shows they take a lock
    lock_keys: Dict[tuple, Acquire]

    @classmethod
    def of_module(cls, facts: ModuleFacts) -> "Leases":
        return facts.cached("redis_leases", cls._build)

    @classmethod
    def _build(cls, facts: ModuleFacts) -> "Leases":
        acquires = _find_acquires(facts)
        releases = _find_releases(facts)
        leases = cls(releases, [], {})
        for acquire in acquires:
            if per_process(acquire.handle, facts):
                continue
            if leases.is_lock(acquire, facts):
                leases.locks.append(acquire)
                leases.lock_keys.setdefault(acquire.identity, acquire)
        return leases

    def _released_after(self, acquire: Acquire, facts: ModuleFacts) -> bool:
        function = facts.enclosing_function(acquire.call)
        return function is not None and any(
            r.identity == acquire.identity and facts.enclosing_function(r.call) is function
            and _after(acquire.call, r.call) for r in self.releases)

    def is_lock(self, acquire: Acquire, facts: ModuleFacts) -> bool:
        """Whether an acquire is a lock by its use: a key set only if absent (or checked for absence first) to
        decide whether to do work, and dropped when the work is done.  A cache is read, filled on a miss and
        deleted when stale; a cooldown key is set and left to expire."""
        if acquire.nx:
            if self._released_after(acquire, facts):
                return True
            if any(r.identity == acquire.identity and _names_a_release(r, facts) for r in self.releases):
                return True
            # SETNX then EXPIRE whose result guards work is a lease whatever its name; an NX key that is only
            # tested is a run-once marker (and may well be meant to stay) unless its text calls it a lock.
            tested = result_tested(acquire.call, facts)
            return tested and (acquire.two_step_expiry is not None or key_names_a_lock(acquire.key, facts))
        # A plain SET is a lock only when its absence was checked first, it stores a marker (not the value the
        # caller reads back) and the same function drops it again when the work is done.
        return (self._released_after(acquire, facts) and _checked_before(acquire, facts)
                and _stores_a_marker(acquire, facts))


def _names_a_release(release: Release, facts: ModuleFacts) -> bool:
    """A delete somewhere else is a release when its key's text calls it a lock or its function says so."""
    if key_names_a_lock(release.key, facts):
        return True
    function = facts.enclosing_function(release.call)
    return function is not None and bool(set(_words(function.name)) & known.RELEASE_WORDS)


def _reads_of_key(later: ast.Call, key: ast.AST, facts: ModuleFacts) -> List[ast.Call]:
    """GET/EXISTS of the same key on a client, earlier in the same function as ``later``."""
    function = facts.enclosing_function(later)
    if function is None:
        return []
    identity = key_identity(key, facts)
    candidates = [node for node in walk_no_nested_functions(function)
                  if isinstance(node, ast.Call) and _after(node, later) and node.args
                  and key_identity(node.args[0], facts) == identity]
    return [call for call, _, _ in _client_calls(facts, ("get", "exists"), candidates)]


def _checked_before(acquire: Acquire, facts: ModuleFacts) -> bool:
    """A GET/EXISTS of the same key, earlier in the function, whose result decides whether to go on."""
    return any(result_tested(call, facts) for call in _reads_of_key(acquire.call, acquire.key, facts))


def _stores_a_marker(acquire: Acquire, facts: ModuleFacts) -> bool:
    """``set(key, True)`` / ``set(key, token)``, not ``set(key, value)`` where ``value`` is what was read or what
    the function hands back: that is a read-through cache being filled."""
    value = argument(acquire.call, known.SET_VALUE)
    if not isinstance(value, ast.Name):
        return True
    function = facts.enclosing_function(acquire.call)
    for node in walk_no_nested_functions(function):
        if isinstance(node, ast.Return) and node.value is not None and any(
                isinstance(n, ast.Name) and n.id == value.id for n in ast.walk(node.value)):
            return False
    return True


# -- messages -----------------------------------------------------------------------------------------


#: The onceguard guards first: a lease held around work (renewed, released by compare-and-delete, a fencing
#: token) or a claim left to expire; asyncio code uses their ``a``-prefixed twins.
_GUARDS_FIRST = ("Use `run_exclusive(key, ttl, work)` for a lock held around work (renewed, released by "
                 "compare-and-delete) or `claim_once(key, ttl)` for a key left to expire "
                 "(`from onceguard.guards import run_exclusive, claim_once`). ")


def _acquire_suggestion(handle: Handle) -> str:
    if handle.kind == known.DJANGO_CACHE:
        return (_GUARDS_FIRST + "Or take the lock atomically with an expiry: "
                "`cache.add(key, token, timeout=ttl)` on a shared "
                "backend (django-redis, Memcached), or django-redis's `cache.lock(key, timeout=ttl)`; keep the work "
                "well under the TTL.")
    return (_GUARDS_FIRST + "Or take the lock in one command with a random token and an expiry: "
            "`r.set(key, token, nx=True, px=ttl_ms)` (token = `secrets.token_hex(16)`), or redis-py's "
            "`r.lock(key, timeout=ttl, blocking=False)`; keep the work well under the TTL or renew it.")


@register
class LeaseWithoutExpiry(Rule):
    code = "OG501"
    name = "lease-without-expiry"
    summary = "a Redis lock taken without both NX and an expiry, or with SETNX then EXPIRE"
    triggers = known.LEASE_TRIGGERS
    skips_tests = True

    def check(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        if facts.context.is_test:
            return  # test code exercises locks against fakes and runs in one process
        leases = Leases.of_module(facts)
        for acquire in leases.locks:
            diagnostic = self._judge(acquire)
            if diagnostic is not None:
                yield diagnostic
        yield from self._lock_objects(facts)

    def _judge(self, acquire: Acquire) -> Optional[Diagnostic]:
        spelled = f"{short(acquire.call.func)}({short(acquire.key, 40)}, …)"
        suggestion = _acquire_suggestion(acquire.handle)
        if acquire.two_step_expiry is not None:
            expire = acquire.two_step_expiry
            return self.finding(
                acquire.call,
                f"`{spelled}` claims the key and `{short(expire.func)}(…)` on line {expire.lineno} gives it an "
                f"expiry in a second command: if this replica dies between the two, the key never expires and "
                f"the work it guards never runs again on any replica.",
                suggestion,
                fix=atomic_set_fix(acquire.call, expire),
            )
        if not acquire.nx:
            also = "" if acquire.expires else " and without an expiry"
            verb = "`cache.set`" if acquire.handle.kind == known.DJANGO_CACHE else "a plain SET"
            return self.finding(
                acquire.call,
                f"`{spelled}` takes a lock with {verb}, without NX{also}: two replicas that check the key at "
                f"the same moment both set it and both run"
                + ("" if acquire.expires else "; a holder that dies leaves it held forever") + ".",
                suggestion,
            )
        if not acquire.expires:
            return self.finding(
                acquire.call,
                f"`{spelled}` takes a lock with no expiry: if the holder crashes or is killed before releasing "
                f"it, the key stays forever and no replica runs this work again.",
                suggestion,
            )
        return None

    def _lock_objects(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        """``r.lock(name)`` (redis-py, django-redis) and ``redis_lock.Lock(r, name)`` without a TTL."""
        for call in facts.calls_named(*known.LOCK_METHODS):
            handle = redis_call(call, facts)
            if handle is None or has_spread(call):
                continue
            timeout = argument(call, known.LOCK_METHODS[call.func.attr])
            if is_none(timeout):
                yield self._no_ttl(call, f"{short(call.func)}({short(call.args[0], 40) if call.args else ''}, …)",
                                   "timeout")
        for name, arg in known.LOCK_CLASSES.items():
            for call in facts.calls_named(name.rsplit(".", 1)[-1]):
                if facts.callee(call) != name or has_spread(call):
                    continue
                if is_none(argument(call, arg)):
                    yield self._no_ttl(call, f"{short(call.func)}(…)", arg.keyword)

    def _no_ttl(self, call: ast.Call, spelled: str, keyword: str) -> Diagnostic:
        return self.finding(
            call,
            f"`{spelled}` creates a lock without `{keyword}=`: it never expires, so a holder that dies keeps "
            f"it held and every replica waits or skips the work forever.",
            f"Use `run_exclusive(key, ttl, work)` (`from onceguard.guards import run_exclusive`), a lease renewed "
            f"while `work(lease)` runs; or pass `{keyword}=` (seconds) a little above the longest run, and renew it "
            f"with `extend()` for long work.",
            fix=lock_ttl_fix(keyword),
        )


@register
class UnsafeLeaseRelease(Rule):
    code = "OG502"
    name = "unsafe-lease-release"
    summary = "a Redis lock released with a plain DEL that does not check the holder's token"
    triggers = known.RELEASE_TRIGGERS
    skips_tests = True

    def check(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        if facts.context.is_test:
            return
        leases = Leases.of_module(facts)
        reported: Dict[tuple, ast.Call] = {}
        for release in leases.releases:
            if release.identity not in leases.lock_keys and not key_names_a_lock(release.key, facts):
                continue
            if per_process(release.handle, facts):
                continue
            checked = _owner_checked_first(release, facts)
            if checked == "sync":
                # The stored token is compared right before the delete: only a lease that expires within that one
                # round trip can be lost, and the holder has overrun its TTL by then anyway.
                continue
            place = (id(facts.enclosing_function(release.call)), release.identity)
            if place in reported:
                continue
            reported[place] = release.call
            spelled = f"{short(release.call.func)}({short(release.key, 40)})"
            if checked == "async":
                hazard = (f"`{spelled}` releases the lock after comparing its value in a separate awaited GET: the "
                          f"event loop runs other tasks between the two round trips, long enough for the lease to "
                          f"expire and pass to another replica, and this then deletes that replica's lock.")
            else:
                hazard = (f"`{spelled}` releases the lock without checking that this replica still holds it: if "
                          f"the lease expired and another replica took it, this deletes the other replica's lock "
                          f"and a third one can start the same work.")
            yield self.finding(release.call, hazard, _release_suggestion(release.handle))


def _release_suggestion(handle: Handle) -> str:
    lua = ("a compare-and-delete Lua script (`r.register_script(\"if redis.call('get', KEYS[1]) == ARGV[1] then "
           "return redis.call('del', KEYS[1]) end return 0\")(keys=[key], args=[token])`)")
    guard = ("Let `run_exclusive(key, ttl, work)` hold the lock (`from onceguard.guards import run_exclusive`): it "
             "releases by compare-and-delete when `work(lease)` returns and gives `lease.fence` as a fencing token. ")
    if handle.kind == known.DJANGO_CACHE:
        return (guard + f"Or release only your own lock: use django-redis's `cache.lock(key, timeout=ttl)` (its release "
                f"checks the token) or {lua} on `get_redis_connection()`; for work that must never overlap, also "
                f"pass a fencing token (INCR) with every write.")
    return (guard + f"Or release only your own lock: {lua}, or use redis-py's `r.lock(key, timeout=ttl)` whose release "
            f"checks the token; for work that must never overlap, also pass a fencing token (INCR) with every "
            f"write and have the store reject older ones.")


def _owner_checked_first(release: Release, facts: ModuleFacts) -> Optional[str]:
    """``if r.get(key) == token: r.delete(key)`` or ``owner = r.get(key)`` compared before the delete:
    ``"sync"``, or ``"async"`` when the GET and the DEL are awaited (other tasks run in between); ``None``
    when nothing compares the stored value."""
    reads = _reads_of_key(release.call, release.key, facts)
    if not reads:
        return None
    read_ids = {id(r) for r in reads}
    holders = set()
    for read in reads:
        statement = facts.statement_of(read)
        if isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            holders.update(t.id for t in targets if isinstance(t, ast.Name))

    def compares_stored_value(test: ast.AST) -> bool:
        for node in ast.walk(test):
            if isinstance(node, ast.Compare) and any(
                    isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)) for op in node.ops):
                for side in [node.left, *node.comparators]:
                    inner = side.value if isinstance(side, ast.Await) else side
                    if id(inner) in read_ids or (isinstance(inner, ast.Name) and inner.id in holders):
                        if not (isinstance(node.comparators[0], ast.Constant) and node.comparators[0].value is None):
                            return True
        return False

    function = facts.enclosing_function(release.call)
    compared = False
    for above in ancestors(release.call):
        if above is function:
            break
        if isinstance(above, ast.If) and compares_stored_value(above.test):
            compared = True
            break
    if not compared and function is not None:
        # An earlier ``if owner != token: return`` guards the delete too.
        for node in walk_no_nested_functions(function):
            if (isinstance(node, ast.If) and _after(node, release.call) and compares_stored_value(node.test)
                    and any(isinstance(n, (ast.Return, ast.Raise)) for n in node.body)):
                compared = True
                break
    if not compared:
        return None
    awaited = isinstance(parent(release.call), ast.Await) or any(isinstance(parent(r), ast.Await) for r in reads)
    return "async" if awaited else "sync"
