"""Values that differ from one process to the next, read through the small project functions returning them.

A lock key every replica must agree on is no key when it comes from the built-in ``hash()`` of text (salted
per process: ``PYTHONHASHSEED`` is random unless the deployment fixes it), ``id()``, a random value, a uuid4, a
process or thread id, a host name or a raw clock reading.  ``unstable_parts`` finds such calls in the
expressions a key is computed from, following a name to the value it was bound to, and a call of a project
function or method to what that def returns (``def lock_id(name): return hash(name) & MASK``, in another
module too), a few steps deep.  ``hash()`` of a number is the number itself in every process, so a ``hash()``
whose argument is visibly an int (a literal, a name bound to one, a parameter typed ``int`` or given one by
the call) is stable.

Whether a key is the same for every call (a job-wide mutex) is the other question of a key: ``fixed_keys``.
"""
from __future__ import annotations

import ast
import builtins
import os
import re
from dataclasses import dataclass
from typing import Dict, Iterable, Iterator, List, Optional, Set, Tuple

from ..analysis.executed_sql import bound_value
from ..analysis.facts import FunctionNode, ModuleFacts, ancestors, walk, walk_no_nested_functions
from ..analysis.handed import argument_for, parameter_names
from ..analysis.names import dotted
from ..knowledge import advisory_locks as known
from . import index as project

_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
#: Names followed to their values, and project defs followed to what they return, along one path.
_NAME_STEPS = 2
_HELPER_STEPS = 2


@dataclass(frozen=True)
class Unstable:
    call: ast.Call  # the call whose value differs between processes
    facts: ModuleFacts  # the module it is written in
    why: str
    #: The call of the checked module that leads to it through project defs (``lock_id(name)``); None when the
    #: unstable call is written in the checked expression or in a name bound in its module.
    through: Optional[ast.Call] = None
    helper: Optional[FunctionNode] = None  # the def holding the unstable call, when reached through one


#: A parameter of a def followed, with the argument the call gives it and the caller's module.
_Given = Dict[str, Tuple[ast.AST, ModuleFacts]]


def unstable_parts(nodes: Iterable[ast.AST], facts: ModuleFacts) -> Iterator[Unstable]:
    """The calls in ``nodes`` (and in what they lead to) whose value differs between processes."""
    from .summaries import resolve

    stack: List[Tuple[ast.AST, ModuleFacts, int, int, _Given, Optional[ast.Call], Optional[FunctionNode]]] = [
        (node, facts, _NAME_STEPS, _HELPER_STEPS, {}, None, None) for node in nodes]
    seen: Set[int] = set()
    while stack:
        node, where, names, helpers, given, through, helper = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        skipped: Set[int] = set()
        for inner in walk(node):
            if id(inner) in skipped:
                continue
            if isinstance(inner, ast.Name) and names > 0 and isinstance(inner.ctx, ast.Load):
                value = bound_value(inner, where) or _closure_value(inner, where)
                if value is not None:
                    stack.append((value, where, names - 1, helpers, given, through, helper))
                continue
            if isinstance(inner, ast.Attribute) and names > 0 and isinstance(inner.ctx, ast.Load):
                field = instance_field(inner, where)
                if field is not None:
                    stack.append((field[0], field[1], names - 1, helpers, given, through, helper))
                continue
            if not isinstance(inner, ast.Call):
                continue
            overridden = deployed_default(inner, where)
            if overridden is not None:
                skipped.update(id(n) for n in walk(overridden))  # the deployment sets the variable
            why = unstable_call(inner, where, given)
            if why is not None:
                yield Unstable(inner, where, why, through, helper)
                continue
            if helpers <= 0 or _is_library_call(inner, where):
                continue
            for target, target_facts in resolve(inner, where, where.enclosing_function(inner), by_name=False):
                if not isinstance(target, _FUNCTION_TYPES) or target is where.enclosing_function(inner):
                    continue
                passed = _given(inner, target, where)
                for value in _returned(target):
                    stack.append((value, target_facts, _NAME_STEPS, helpers - 1, passed, through or inner,
                                  target))


def instance_field(node: ast.Attribute, facts: ModuleFacts) -> Optional[Tuple[ast.AST, ModuleFacts]]:
    """``settings.key_prefix`` where ``settings`` is a module-level instance of a project class (made here or in
    the module it is imported from), or ``job.lock_key`` where ``job`` is a parameter typed with one: the value
    the class gives the field -- its class-body default (``key_prefix: str = os.environ.get(...)``, a dataclass
    ``field(default=...)`` or ``field(default_factory=lambda: ...)``) or what ``__init__`` assigns it.  For a
    typed parameter, only when no construction in the class's module passes the field."""
    if not isinstance(node.value, ast.Name):
        return None
    found = _instance_class(node.value, facts)
    if found is None:
        return None
    cls, cls_facts, by_type = found
    value = _class_field(cls, node.attr)
    if value is None or (by_type and _passed_at_construction(cls, node.attr, cls_facts)):
        return None
    return value, cls_facts


def _instance_class(name: ast.Name, facts: ModuleFacts) -> Optional[Tuple[ast.ClassDef, ModuleFacts, bool]]:
    made = bound_value(name, facts)
    where = facts
    if made is None and facts.context.cross_file:
        qualified = facts.qualify(name)
        found = project.find_assignment(qualified, facts.config, project.search_root(facts)) if qualified else None
        if found is not None:
            made, where = found
    by_type = False
    if made is None:
        annotation = _parameter_annotation(name, facts)
        if annotation is None:
            return None
        made, by_type = ast.Call(func=annotation, args=[], keywords=[]), True
    if not isinstance(made, ast.Call) or made.args or made.keywords:
        return None  # (a field given at construction is the caller's value, not the default)
    if not isinstance(made.func, (ast.Name, ast.Attribute)):
        return None
    local = isinstance(made.func, ast.Name) and next(
        (c for c in where.classes if c.name == made.func.id and where.enclosing_function(c) is None), None)
    if local:
        return local, where, by_type
    cls_name = where.qualify(made.func)
    if cls_name and where.context.cross_file:
        found_class = project.find_class(cls_name, where.config, project.search_root(where))
        if found_class is not None:
            return found_class[0], found_class[1], by_type
    return None


def _parameter_annotation(name: ast.Name, facts: ModuleFacts) -> Optional[ast.AST]:
    """The annotation of the parameter ``name`` reads (``job: PeriodicJob``), when it is a plain class name."""
    function = facts.enclosing_function(name)
    if function is None:
        return None
    arguments = function.args
    for argument in arguments.posonlyargs + arguments.args + arguments.kwonlyargs:
        if argument.arg == name.id and isinstance(argument.annotation, (ast.Name, ast.Attribute)):
            return argument.annotation
    return None


#: ``dataclasses.field`` and the like: the default is a keyword of the call, not the call.
_FIELD_CALLS = frozenset({"field", "Field", "attrib", "attr.ib"})


def _class_field(cls: ast.ClassDef, attr: str) -> Optional[ast.AST]:
    for statement in cls.body:
        target = statement.target if isinstance(statement, ast.AnnAssign) else (
            statement.targets[0] if isinstance(statement, ast.Assign) and len(statement.targets) == 1 else None)
        if isinstance(target, ast.Name) and target.id == attr and statement.value is not None:
            value = statement.value
            if isinstance(value, ast.Call) and (dotted(value.func) or "").rsplit(".", 1)[-1] in _FIELD_CALLS:
                keywords = {k.arg: k.value for k in value.keywords if k.arg}
                factory = keywords.get("default_factory") or keywords.get("factory")
                if isinstance(factory, ast.Lambda):
                    return factory.body
                if isinstance(factory, (ast.Name, ast.Attribute)):
                    # ``field(default_factory=_namespace_from_env)``: the value is what that function returns
                    return ast.copy_location(ast.Call(func=factory, args=[], keywords=[]), factory)
                return keywords.get("default")
            return value
        if isinstance(statement, _FUNCTION_TYPES) and statement.name == "__init__":
            for inner in walk_no_nested_functions(statement):
                if isinstance(inner, ast.Assign) and any(
                        isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                        and t.attr == attr for t in inner.targets):
                    return inner.value
    return None


def _passed_at_construction(cls: ast.ClassDef, attr: str, facts: ModuleFacts) -> bool:
    """A call of the class in its own module passes ``attr`` (by keyword, or by its place among the fields)."""
    fields = [s.target.id for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
    place = fields.index(attr) if attr in fields else None
    for call in facts.calls_by_name.get(cls.name, ()):
        if any(k.arg == attr or k.arg is None for k in call.keywords):
            return True
        if place is not None and len(call.args) > place or any(isinstance(a, ast.Starred) for a in call.args):
            return True
    return False


#: ``os.environ.get(NAME, default)`` / ``os.getenv(NAME, default)``: the default runs where NAME is not set.
_ENVIRONMENT_READS = frozenset({"os.environ.get", "os.getenv"})


def deployed_default(call: ast.Call, facts: ModuleFacts) -> Optional[ast.AST]:
    """The default of an environment read whose variable the deployment files set (never used there)."""
    if (facts.callee(call) or "") not in _ENVIRONMENT_READS or len(call.args) < 2:
        return None
    name = call.args[0]
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        return None
    return call.args[1] if name.value in deployed_variables(facts) else None


def _is_library_call(call: ast.Call, facts: ModuleFacts) -> bool:
    """``int(...)``, ``len(...)``: a built-in, where no def of the project runs."""
    func = call.func
    return isinstance(func, ast.Name) and func.id in _BUILTINS and _builtin_unshadowed(func.id, facts)


_BUILTINS = frozenset(dir(builtins))


def _given(call: ast.Call, target: FunctionNode, facts: ModuleFacts) -> _Given:
    given: _Given = {}
    for parameter in parameter_names(target, receiver=False):
        argument = argument_for(call, target, parameter)
        if argument is not None:
            given[parameter] = (argument, facts)
    return given


def _returned(function: FunctionNode) -> List[ast.AST]:
    """What ``function`` returns; a returned local name stands for every value the def binds it to (``key =
    self._keys.get(name)`` then ``key = next(self._counter)`` on a miss: either can be the answer)."""
    returned = [node.value for node in walk_no_nested_functions(function)
                if isinstance(node, ast.Return) and node.value is not None]
    names = {node.id for node in returned if isinstance(node, ast.Name)}
    if not names:
        return returned
    return returned + [node.value for node in walk_no_nested_functions(function) if isinstance(node, ast.Assign)
                       and any(isinstance(t, ast.Name) and t.id in names for t in node.targets)]


def _closure_value(name: ast.Name, facts: ModuleFacts) -> Optional[ast.AST]:
    """What a free name of a nested def is bound to in a def around it (``key = key_for(job)`` in a decorator,
    read by the wrapper it returns), when it is bound there once."""
    from ..analysis.facts import walk_no_nested_functions

    function = facts.enclosing_function(name)
    outer = facts.enclosing_function(function) if function is not None else None
    while outer is not None:
        values = [node.value for node in walk_no_nested_functions(outer) if isinstance(node, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == name.id for t in node.targets)]
        if values:
            return values[0] if len(values) == 1 else None
        outer = facts.enclosing_function(outer)
    return None


def unstable_call(call: ast.Call, facts: ModuleFacts, given: Optional[_Given] = None) -> Optional[str]:
    """Why the value of ``call`` differs between processes, or None."""
    func = call.func
    if isinstance(func, ast.Name) and func.id in known.UNSTABLE_CALLS and _builtin_unshadowed(func.id, facts):
        if func.id == "hash" and (_hash_of_number(call, facts, given or {}) or fixed_hash_seed(facts)):
            return None
        return known.UNSTABLE_CALLS[func.id]
    if isinstance(func, ast.Name) and func.id == "next" and len(call.args) == 1 and _builtin_unshadowed("next", facts):
        return _counter_why(call.args[0], facts)
    if not facts.imports.is_imported((dotted(func) or "").split(".", 1)[0]):
        return None
    qualified = facts.callee(call) or ""
    for prefix, why in known.UNSTABLE_QUALIFIED_PREFIXES.items():
        if qualified.startswith(prefix):
            return why
    why = known.CLOCK_CALLS.get(qualified)
    if why is not None and not _cut_into_periods(call):
        return why
    return None


def _counter_why(counter: ast.AST, facts: ModuleFacts) -> Optional[str]:
    """``next(counter)`` where ``counter`` (a name, or ``self.<field>`` its class's ``__init__`` sets) is made by
    a counter factory of the standard library (``itertools.count(...)``): the number depends on the order this
    process first asked in."""
    made: Optional[ast.AST] = None
    if isinstance(counter, ast.Name):
        made = bound_value(counter, facts)
    elif isinstance(counter, ast.Attribute) and isinstance(counter.value, ast.Name) and counter.value.id == "self":
        cls = next((above for above in ancestors(counter) if isinstance(above, ast.ClassDef)), None)
        made = _class_field(cls, counter.attr) if cls is not None else None
    if isinstance(made, ast.Call) and (facts.callee(made) or "") in known.COUNTER_FACTORIES:
        return known.COUNTER_WHY
    return None


def _builtin_unshadowed(name: str, facts: ModuleFacts) -> bool:
    return not facts.imports.is_imported(name) and name not in facts.functions_by_name


def _cut_into_periods(call: ast.Call) -> bool:
    """``int(time.time() // 3600)``: the same period for every replica (but at its edges)."""
    for above in ancestors(call):
        if isinstance(above, ast.BinOp) and isinstance(above.op, (ast.FloorDiv, ast.Div, ast.RShift)):
            return True
        if isinstance(above, (ast.stmt, ast.Call)) and not (isinstance(above, ast.Call) and _wraps_number(above)):
            return False
    return False


def _wraps_number(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Name) and call.func.id in ("int", "round", "float")


def _hash_of_number(call: ast.Call, facts: ModuleFacts, given: _Given) -> bool:
    """``hash(42)``, ``hash(account_id)`` with ``account_id: int``: an int hashes to itself everywhere."""
    if len(call.args) != 1 or call.keywords:
        return False
    return _is_int(call.args[0], facts, given, 3)


def _is_int(node: ast.AST, facts: ModuleFacts, given: _Given, depth: int) -> bool:
    if depth < 0:
        return False
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int)
    if isinstance(node, ast.UnaryOp):
        return _is_int(node.operand, facts, given, depth)
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id in ("int", "len")
    if isinstance(node, ast.Name):
        if node.id in given:
            argument, where = given[node.id]
            return _is_int(argument, where, {}, depth - 1)
        function = facts.enclosing_function(node)
        if function is not None and node.id in parameter_names(function):
            annotation = _annotation_of(function, node.id)
            return annotation is not None and dotted(annotation) == "int"
        value = bound_value(node, facts)
        return value is not None and _is_int(value, facts, given, depth - 1)
    return False


def _annotation_of(function: FunctionNode, name: str) -> Optional[ast.AST]:
    arguments = function.args
    for argument in arguments.posonlyargs + arguments.args + arguments.kwonlyargs:
        if argument.arg == name:
            return argument.annotation
    return None


# -- the defs of a module that return such a value ------------------------------------------------------

#: Callers followed up from a def returning an unstable value: its callers, and theirs when they return it on.
_CALLER_STEPS = 2
#: A def named in more files than this is a shared utility: its callers are not read.
_MAX_NAMING_FILES = 12
#: Words of the unstable calls a def can return, for the prefilter of a module with no lock of its own
#: (``id(`` is left out: nearly every file spells it).
RETURNED_TRIGGERS = (b"hash(", b"uuid", b"random", b"secrets", b"getpid", b"gethostname", b"get_ident",
                     b"urandom", b"platform", b"monotonic", b"perf_counter", b"time(", b"time_ns", b"next(")


def returned_unstable(facts: ModuleFacts) -> List[Unstable]:
    """Unstable calls in what a def of this module returns (through its local names), each with that def as
    ``helper``: a lock key computed in another module may come from here."""

    def build(_facts: ModuleFacts) -> List[Unstable]:
        if not facts.context.cross_file:
            return []
        holders: Dict[int, FunctionNode] = {}
        for call in facts.calls:
            if not _may_be_unstable(call, facts):
                continue
            function = facts.enclosing_function(call)
            if function is not None and not function.name.startswith("__") and unstable_call(call, facts):
                holders[id(function)] = function
        found: List[Unstable] = []
        for function in holders.values():
            found.extend(Unstable(p.call, p.facts, p.why, None, function)
                         for p in _local_parts(_returned(function), facts))
        return found

    return facts.cached("process_values:returned", build)


_LAST_NAMES = frozenset(name.rsplit(".", 1)[-1] for name in (*known.UNSTABLE_QUALIFIED_PREFIXES, *known.CLOCK_CALLS)
                        if not name.endswith("."))
_MODULE_PREFIXES = tuple(name for name in known.UNSTABLE_QUALIFIED_PREFIXES if name.endswith("."))


def _may_be_unstable(call: ast.Call, facts: ModuleFacts) -> bool:
    """A cheap look before ``unstable_call``: the name called, or the module its head is imported from."""
    func = call.func
    head = func
    while isinstance(head, ast.Attribute):
        head = head.value
    if isinstance(func, ast.Name) and (func.id in known.UNSTABLE_CALLS or func.id == "next"):
        return True
    if isinstance(func, ast.Attribute) and func.attr in _LAST_NAMES:
        return True
    target = facts.imports.aliases.get(head.id, "") if isinstance(head, ast.Name) else ""
    return bool(target) and (f"{target}.".startswith(_MODULE_PREFIXES) or target.rsplit(".", 1)[-1] in _LAST_NAMES)


def _local_parts(nodes: List[ast.AST], facts: ModuleFacts) -> Iterator[Unstable]:
    """``unstable_parts`` without following calls: what the def itself computes."""
    stack = [(node, _NAME_STEPS) for node in nodes]
    while stack:
        node, names = stack.pop()
        for inner in walk(node):
            if isinstance(inner, ast.Name) and names > 0 and isinstance(inner.ctx, ast.Load):
                value = bound_value(inner, facts)
                if value is not None:
                    stack.append((value, names - 1))
            elif isinstance(inner, ast.Call):
                why = unstable_call(inner, facts)
                if why is not None:
                    yield Unstable(inner, facts, why)


def calling_modules(function: FunctionNode, facts: ModuleFacts) -> List[ModuleFacts]:
    """The other modules whose code calls ``function``, directly or through a def returning its result."""
    from .advisory_names import lock_key_files
    from .fixed_arguments import callers_of, named_in_few_files

    found: List[ModuleFacts] = []
    root = project.search_root(facts)
    locking = lock_key_files(root)  # (modules taking advisory locks, or handing a lock helper its key)
    if not locking - {os.path.abspath(facts.context.path or "")} or not locking & set(
            project.files_mentioning(function.name, root)):
        return found  # no other file that may key a lock names it: its callers are not worth reading
    frontier = [(function, facts)]
    for _ in range(_CALLER_STEPS):
        following = []
        for target, where in frontier:
            if not named_in_few_files(target, where, _MAX_NAMING_FILES):
                continue
            for call, other in callers_of(target, where):
                if other.context.is_test:
                    continue
                if _path(other) != _path(facts) and all(other is not f for f in found):
                    found.append(other)
                caller = other.enclosing_function(call)
                if caller is not None and any(isinstance(a, ast.Return) for a in ancestors(call)):
                    following.append((caller, other))
        frontier = following
    return found


def same_place(one: Unstable, other: Unstable) -> bool:
    return (one.call.lineno, one.call.col_offset) == (other.call.lineno, other.call.col_offset) and \
        _path(one.facts) == _path(other.facts)


def _path(facts: ModuleFacts) -> str:
    return os.path.abspath(facts.context.path or "")


# -- variables the deployment sets ------------------------------------------------------------------------

#: ``NAME=`` (Dockerfile ``ENV``, ``.env``, a shell line), ``NAME:`` (compose ``environment:``), and the
#: Kubernetes ``- name: NAME`` of a container's ``env``.
_SET_VARIABLE = re.compile(rb"(?:^|[\s\-\"'])([A-Z][A-Z0-9_]*)[\"']?\s*[=:]|name:\s*[\"']?([A-Z][A-Z0-9_]*)")
_deployed_variables: Dict[Tuple[str, ...], Set[str]] = {}
project.on_clear(_deployed_variables.clear)


def deployed_variables(facts: ModuleFacts) -> Set[str]:
    """The environment variables the project's deployment files (and ``.env`` files) set (the CLI only)."""
    context = facts.context
    if not context.cross_file or not context.path:
        return set()

    def build(_facts: ModuleFacts) -> Set[str]:
        from . import deployment

        top = deployment.project_directory(context.path, facts.config, project.search_root(facts))
        bases = tuple(deployment.deployment_bases(facts.config, top))
        if bases not in _deployed_variables:
            found: Set[str] = set()
            for base in bases:
                for path in project.files_named(base, _sets_environment, facts.config, key="environment"):
                    for match in _SET_VARIABLE.finditer(project.read_bytes(path)):
                        found.add((match.group(1) or match.group(2)).decode("ascii"))
            _deployed_variables[bases] = found
        return _deployed_variables[bases]

    return facts.cached("process_values:deployed-variables", build)


def _sets_environment(name: str) -> bool:
    from . import deployment_files

    lowered = name.lower()
    return deployment_files.is_deployment_file(name) or lowered == ".env" or lowered.startswith(".env.")


# -- a hash seed the deployment fixes ---------------------------------------------------------------------

#: ``PYTHONHASHSEED=0`` (Dockerfile ``ENV``, a shell line), ``PYTHONHASHSEED: "0"`` (compose), and the
#: Kubernetes ``- name: PYTHONHASHSEED`` / ``value: "0"`` pair.
_SEED = re.compile(rb"PYTHONHASHSEED[\"']?\s*[=:]\s*[\"']?(\d+)\b"
                   rb"|name:\s*[\"']?PYTHONHASHSEED[\"']?\s*\n\s*value:\s*[\"']?(\d+)\b")
_seeds: Dict[Tuple[str, ...], bool] = {}
project.on_clear(_seeds.clear)


def fixed_hash_seed(facts: ModuleFacts) -> bool:
    """Whether the deployment files of the project set ``PYTHONHASHSEED`` to a number (not ``random``): then
    ``hash()`` of text is the same in every replica started from them (the CLI only: flake8 sees no
    deployment files)."""
    context = facts.context
    if not context.cross_file or not context.path:
        return False

    def build(_facts: ModuleFacts) -> bool:
        from . import deployment, deployment_files

        top = deployment.project_directory(context.path, facts.config, project.search_root(facts))
        bases = tuple(deployment.deployment_bases(facts.config, top))
        if bases not in _seeds:
            found = False
            for base in bases:
                for path in project.files_named(base, deployment_files.is_deployment_file, facts.config,
                                                key="deployment"):
                    text = deployment_files.read_text(path).encode("utf-8", "replace")
                    if known.HASH_SEED_VARIABLE.encode() in text and _SEED.search(text):
                        found = True
            _seeds[bases] = found
        return _seeds[bases]

    return facts.cached("process_values:hash-seed", build)
