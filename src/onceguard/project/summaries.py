"""Function summaries over the project: what a function's work does, through the functions it calls.

The layer between the project lookups (``project``) and the rules: a call is resolved to the ``def``
it runs (same module, an import, ``self.method()``, a parameter or attribute whose class the code
shows, and, as a last resort, a project method of that name when the project defines only a few),
and a function's effects are summarised to a small fixed depth:

- ``drain``: it empties a buffer held in the process's own memory (``batch = self._pending;
  self._pending = {}``, ``queue.get_nowait()`` in a loop) and writes what it took: per-process work
  every replica must do, since each one holds its own share;
- ``idempotent``: set-based statements that give the same result however often they run
  (``DELETE ... WHERE``, ``UPDATE ... SET flag = <constant>``, ``REFRESH MATERIALIZED VIEW``,
  ``Model.objects.filter(...).delete()``);
- ``other``: anything else with an effect outside the process, or a call whose effect is unknown.

A function with neither ``idempotent`` nor ``other`` touches only the process itself.  Flake8 sees one
file: there only calls into the same module are followed.
"""
from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Set, Tuple

from . import index as project
from ..analysis.context import FileContext
from ..analysis.executed_sql import executed_sql, module_statements, orm_query, orm_set_statement
from ..analysis.facts import FunctionNode, ModuleFacts, ancestors, body_nodes, walk_no_nested_functions
from ..analysis.names import dotted, plain_name
from ..analysis.handed import handed_callable
from .core_statements import builds_statement, statement_effect
from . import declared_types as declared
from .callable_objects import called_object_method
from .declared_types import (ClassRef, annotation_class as _annotation_class, attribute_writes as _attribute_writes,
                             class_of as _class_of, parameter_annotation as _parameter_annotation)
from .own_share import acts_on_own_share
from .row_claims import claimed_row_calls
from .subclasses import overrides
from ..knowledge import orm as orm_known
from ..knowledge.declared_types import PROCESS_LOCAL_CLASSES as _PROCESS_LOCAL_CLASSES
from ..knowledge import redis_clients as redis_known

_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
MAX_DEPTH = 6
#: Resolving a method by its name alone (the receiver's class unknown) only this close to the job.
BY_NAME_DEPTH = 4
#: Calls resolved per checked module: the summary is a bounded look, not a whole-program analysis.
CALL_BUDGET = 600
#: From this depth on (the job's own body is 0, its direct callees' bodies 1) an unknown call counts as an
#: effect only when its name or module says it acts outside the process: far from the job, unknown calls are
#: mostly validation, parsing and accessors of the libraries the helpers wrap.
UNKNOWN_DEPTH = 2

from ..knowledge.process_state import MAPPING_CACHE_FACTORIES as _MAPPING_CACHE_FACTORIES
from ..knowledge.effects import PATH_DELETES as _PATH_DELETES, STOP_OR_DELETE_METHODS as _STOP_OR_DELETE_METHODS
from ..knowledge.effects import (CONTAINER_METHODS as _CONTAINER_METHODS, DRAIN_METHODS as _DRAIN_METHODS,
                                 EMPTY_FACTORIES as _EMPTY_FACTORIES, FRESH_CONTAINER_CALLS as _FRESH_CONTAINER_CALLS,
                                 FILE_OPENERS as _FILE_OPENERS, FILE_WRITE_MODE_CHARACTERS as _FILE_WRITE_MODE_CHARACTERS,
                                 LOG_METHODS as _LOG_METHODS,
                                 LOG_RECEIVER_WORDS as _LOG_RECEIVER_WORDS, PURE_CALLS as _PURE_CALLS,
                                 HTTP_READ_CALLS as _HTTP_READ_CALLS,
                                 QUERY_BUILDERS as _QUERY_BUILDERS, READ_METHODS as _READ_METHODS,
                                 SCOPE_METHODS as _SCOPE_METHODS, PROCESS_LOCAL_METHODS as _PROCESS_LOCAL_METHODS,
                                 READ_ANYWHERE_METHODS as _READ_ANYWHERE_METHODS, PURE_MODULES as _PURE_MODULES,
                                 SQL_EXPRESSION_CALLS as _SQL_EXPRESSION_CALLS,
                                 ACCESSOR_PREFIXES as _ACCESSOR_PREFIXES, ACCESSOR_EXCEPTIONS as _ACCESSOR_EXCEPTIONS,
                                 ACTION_WORDS as _ACTION_WORDS, EFFECT_MODULES as _EFFECT_MODULES,
                                 STORAGE_VERBS as _STORAGE_VERBS, STORAGE_VERB_FORMS as _STORAGE_VERB_FORMS,
                                 STORAGE_NAMES_MORE as _STORAGE_NAMES_MORE,
                                 OWN_PROCESS_CALLS as _OWN_PROCESS_CALLS, SIGNAL_CALLS as _SIGNAL_CALLS,
                                 OWN_PID_CALLS as _OWN_PID_CALLS, TAKE_KEYWORDS as _TAKE_KEYWORDS,
                                 TAKE_METHODS as _TAKE_METHODS, ENQUEUE_METHODS as _ENQUEUE_METHODS)


#: A def a call runs, its module, and the class ``self`` is an instance of in it when a subclass inherits it.
Resolved = Tuple[FunctionNode, ModuleFacts, Optional[ClassRef]]


@dataclass(frozen=True)
class Evidence:
    call: ast.AST
    path: str  # the file's path as checked, as a related place takes it
    plain: bool  # the call's SQL, name or module says it acts outside the process
    depth: int  # calls between the job and it: the nearest plain effect is the one a reader recognises

    def better_than(self, other: Optional["Evidence"]) -> bool:
        return other is None or (self.plain, -self.depth) > (other.plain, -other.depth)


@dataclass
class Effects:
    drain: Optional[ast.AST] = None
    idempotent: List[ast.AST] = field(default_factory=list)
    other: List[ast.AST] = field(default_factory=list)
    #: Effects on this replica's own share (``own_share``): items of a registry it fills as it serves, rows
    #: picked by its own identity. Every replica must do its own; another replica's run does not repeat it.
    own: List[ast.AST] = field(default_factory=list)
    #: The effect a report shows as the reason a claim is needed: the first that plainly acts outside the
    #: process (an SQL write, a call named ``send_…`` or ``publish``), else the first unknown call.
    first_other: Optional["Evidence"] = None

    def merge(self, more: "Effects") -> None:
        if self.drain is None:
            self.drain = more.drain
        if more.first_other is not None and more.first_other.better_than(self.first_other):
            self.first_other = more.first_other
        self.idempotent.extend(more.idempotent)
        self.other.extend(more.other)
        self.own.extend(more.own)

    @property
    def process_only(self) -> bool:
        return not self.idempotent and not self.other and not self.own


# ------------------------------------------------------------------------------------------------
# Resolving a call to the defs it may run
# ------------------------------------------------------------------------------------------------
def _method_of(cls: ast.ClassDef, facts: ModuleFacts, name: str, depth: int = 0) -> Optional[Tuple[FunctionNode, ModuleFacts]]:
    for statement in cls.body:
        if isinstance(statement, _FUNCTION_TYPES) and statement.name == name:
            return statement, facts
    if depth < 3:
        for base, base_facts in declared.base_classes(cls, facts):
            method = _method_of(base, base_facts, name, depth + 1)
            if method is not None:
                return method
    return None


def _self_attribute_class(cls: ast.ClassDef, facts: ModuleFacts, attr: str) -> Optional[Tuple[ast.ClassDef, ModuleFacts]]:
    """The class of ``self.attr`` from the class body: ``self.attr = Class(...)`` or ``self.attr: Class``."""
    for node in _attribute_writes(cls).get(attr, ()):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute) and node.target.attr == attr:
            found = _class_of(_annotation_class(node.annotation) or node.annotation, facts)
            if found is not None:
                return found
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == attr \
                and any(s is node for s in cls.body):
            found = _class_of(_annotation_class(node.annotation) or node.annotation, facts)
            if found is not None:
                return found
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name)
                and t.value.id == "self" for t in node.targets):
            if isinstance(node.value, ast.Call):
                found = _class_of(node.value.func, facts)
            elif isinstance(node.value, ast.Name):
                # ``self.locks = locks`` in ``__init__(self, locks: LockManager | None)``
                method = facts.enclosing_function(node)
                annotation = _annotation_class(_parameter_annotation(method, node.value.id))
                found = _class_of(annotation, facts) if annotation is not None else None
            else:
                found = None
            if found is not None:
                return found
    return None


def _value_class(value: ast.AST, facts: ModuleFacts) -> Optional[Tuple[ast.ClassDef, ModuleFacts]]:
    """The class of an instance built by ``Class(...)``, or declared by ``cast(Class, x)``."""
    if isinstance(value, ast.Await):
        value = value.value
    if not isinstance(value, ast.Call):
        return None
    if (facts.callee(value) or "") in ("typing.cast", "cast") and value.args:
        return _class_of(_annotation_class(value.args[0]) or value.args[0], facts)
    found = _class_of(value.func, facts)
    if found is None and isinstance(value.func, (ast.Name, ast.Attribute)):
        # ``poller = build_poller()``: a factory of the project, by its return annotation or what it returns;
        # ``self._uow_factory()``: a factory an instance keeps, by its declared type (``Callable[[], UnitOfWork]``)
        made = declared.classes(declared.type_of(value, facts, facts.enclosing_function(value)))
        found = made[0] if len(made) == 1 else None
    return found


def _binds(function: FunctionNode, name: str) -> bool:
    """``name`` is a parameter of ``function`` or assigned in its body: its own, not a closure's."""
    arguments = function.args
    parameters = arguments.posonlyargs + arguments.args + arguments.kwonlyargs + [
        a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    return any(a.arg == name for a in parameters) or name in _name_bindings(function) \
        or name in _with_bindings(function)


def _with_bindings(function: FunctionNode) -> Dict[str, ast.withitem]:
    """name -> the first ``with <manager> as name`` (or ``async with``) of a function, read once per function."""
    cached = getattr(function, "_og_with_bindings", None)
    if cached is not None:
        return cached
    table: Dict[str, ast.withitem] = {}
    for node in walk_no_nested_functions(function):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if isinstance(item.optional_vars, ast.Name):
                    table.setdefault(item.optional_vars.id, item)
    function._og_with_bindings = table
    return table


def _entered_class(manager: ClassRef) -> Optional[ClassRef]:
    """The class of what ``with manager as x`` binds: the manager itself when its ``__enter__`` (``__aenter__``)
    returns ``self`` or is annotated ``Self`` or the class, else the class its annotation names."""
    cls, facts = manager
    for name in ("__aenter__", "__enter__"):
        found = _method_of(cls, facts, name)
        if found is None:
            continue
        method, where = found
        returned = method.returns
        if returned is not None:
            named = dotted(_annotation_class(returned) or returned) or ""
            if named.rsplit(".", 1)[-1] in ("Self", cls.name):
                return manager
            return _class_of(_annotation_class(returned) or returned, where)
        results = [n.value for n in walk_no_nested_functions(method) if isinstance(n, ast.Return)]
        if results and all(isinstance(v, ast.Name) and v.id == "self" for v in results):
            return manager
        return None
    return None


def _yielded_class(manager: ast.AST, facts: ModuleFacts, function: FunctionNode, depth: int) -> Optional[ClassRef]:
    """The class of what ``with batches.pending(50) as batch`` binds when ``pending`` is a generator of the
    project made a context manager (``@contextmanager``): what its return annotation says it yields
    (``Iterator[Batch]``), else the one class every ``yield`` of it builds (``yield Batch(cur, rows)``)."""
    from .claim_contexts import is_context_factory

    if isinstance(manager, ast.Await):
        manager = manager.value
    if not isinstance(manager, ast.Call) or depth > 3:
        return None
    for target, target_facts in resolve(manager, facts, function, by_name=False)[:1]:
        if not is_context_factory(target, target_facts):
            return None
        if target.returns is not None:
            return declared.one_class(declared.classes(declared.element(declared.Declared(target.returns,
                                                                                          target_facts))) or [None])
        yielded = [node.value for node in walk_no_nested_functions(target) if isinstance(node, ast.Yield)]
        return declared.one_class(_bound_class(value, target_facts, target, depth + 1) if value is not None else None
                                  for value in yielded) if yielded else None
    return None


def _name_bindings(scope: ast.AST) -> Dict[str, ast.AST]:
    """name -> the first ``name = ...`` / ``name: T = ...`` of a function (or of a module, outside its
    functions and classes), read once per scope."""
    cached = getattr(scope, "_og_bindings", None)
    if cached is not None:
        return cached
    table: Dict[str, ast.AST] = {}
    # At module level, also what is bound under an ``if``/``try`` (a client made only where it is configured).
    nodes = module_statements(scope) if isinstance(scope, ast.Module) else walk_no_nested_functions(scope)
    for node in nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    table.setdefault(target.id, node)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            table.setdefault(node.target.id, node)
    scope._og_bindings = table
    return table


def _bound_class(value: ast.AST, facts: ModuleFacts, function: Optional[FunctionNode],
                 depth: int, self_class: Optional[ClassRef] = None) -> Optional[ClassRef]:
    """The class of what a name is bound to: a constructor call, ``cast(C, x)``, or another name or
    attribute whose class is known (``manager = self.lock_manager``)."""
    if isinstance(value, (ast.Name, ast.Attribute, ast.Subscript)):
        return _receiver_class(value, facts, function, depth + 1, self_class)
    return _value_class(value, facts)


def resolve_reference(expr: ast.Attribute, facts: ModuleFacts) -> Optional[Resolved]:
    """The method a bound-method reference names (``exporter.run`` handed to a scheduler), from the class of
    its receiver, with that class as its ``self`` when the method is inherited."""
    function = facts.enclosing_function(expr) or _def_around_lambda(expr, facts)
    owner = _receiver_class(expr.value, facts, function)
    if owner is None:
        # what the annotations say it is (``for ticker in container.tickers()``): one class, or no answer
        owner = declared.one_class(declared.classes(declared.type_of(expr.value, facts, function)) or [None])
    if owner is None:
        return None
    method = _method_of(owner[0], owner[1], expr.attr)
    return _with_self(method, owner) if method is not None else None


def _def_around_lambda(expr: ast.AST, facts: ModuleFacts) -> Optional[FunctionNode]:
    """The def a lambda holding ``expr`` is written in (``add_job(lambda: reporter.post(), ...)``): the names the
    lambda does not bind itself are that def's."""
    lambdas = []
    for above in ancestors(expr):
        if isinstance(above, ast.Lambda):
            lambdas.append(above)
        elif isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef)):
            own = {a.arg for lam in lambdas for a in lam.args.args + lam.args.kwonlyargs + lam.args.posonlyargs}
            head = expr.value if isinstance(expr, ast.Attribute) else expr
            return above if lambdas and not (isinstance(head, ast.Name) and head.id in own) else None
        elif isinstance(above, ast.ClassDef):
            return None
    return None


def _receiver_class(expr: ast.AST, facts: ModuleFacts, function: Optional[FunctionNode],
                    depth: int = 0, self_class: Optional[ClassRef] = None) -> Optional[ClassRef]:
    """The class the code makes ``expr`` an instance of.  In a method inherited from a base of
    ``self_class``, ``self`` is an instance of ``self_class``."""
    if depth > 3:
        return None
    if isinstance(expr, ast.Name):
        if expr.id in ("self", "cls") and function is not None:
            if self_class is not None:
                return self_class
            cls = facts.enclosing_class(function)
            return (cls, facts) if cls is not None else None
        annotation = _annotation_class(_parameter_annotation(function, expr.id))
        if annotation is not None:
            return _class_of(annotation, facts)
        if function is not None and facts.enclosing_function(function) is not None \
                and not _binds(function, expr.id):
            # a free name of a nested def (a closure a hook is): what the def around it makes it
            return _receiver_class(expr, facts, facts.enclosing_function(function), depth + 1)
        if function is not None and expr.id not in _name_bindings(function):
            entered = _with_bindings(function).get(expr.id)
            if entered is not None:
                # ``async with self._uow as uow``: what the manager's ``__aenter__`` hands over
                manager = _bound_class(entered.context_expr, facts, function, depth, self_class)
                if manager is not None:
                    return _entered_class(manager)
                return _yielded_class(entered.context_expr, facts, function, depth)
        for scope in ([function] if function is not None else []) + [facts.tree]:
            node = _name_bindings(scope).get(expr.id)
            if node is None:
                continue
            inner = function if scope is function else None
            inner_self = self_class if scope is function else None
            if isinstance(node, ast.Assign):
                return _bound_class(node.value, facts, inner, depth, inner_self)
            annotated = _annotation_class(node.annotation)
            found = _class_of(annotated, facts) if annotated is not None else None
            if found is None and node.value is not None:
                found = _bound_class(node.value, facts, inner, depth, inner_self)
            return found
        return None
    if isinstance(expr, ast.Attribute):
        owner = _receiver_class(expr.value, facts, function, depth + 1, self_class)
        if owner is not None:
            return _self_attribute_class(owner[0], owner[1], expr.attr)
        from .app_namespaces import kept_class

        return kept_class(expr, facts)  # ``request.app.ctx.presence``: what start-up code keeps there
    if isinstance(expr, ast.Call):
        return _bound_class(expr, facts, function, depth)  # ``Lease(url, "k", 90).take``: a fresh instance
    if isinstance(expr, ast.Subscript):
        from .app_namespaces import kept_entry_class

        return kept_entry_class(expr, facts, function, depth)  # ``current_app.extensions["hooks"]["ledger"]``
    return None


def instance_class(expr: ast.AST, facts: ModuleFacts, function: Optional[FunctionNode]) -> Optional[ClassRef]:
    """The project class the code makes ``expr`` an instance of (a parameter's annotation, a constructor call,
    ``self``, what ``with manager as x`` binds), or None."""
    return _receiver_class(expr, facts, function)


def resolve(call: ast.Call, facts: ModuleFacts, function: Optional[FunctionNode],
            by_name: bool = True, self_class: Optional[ClassRef] = None) -> List[Tuple[FunctionNode, ModuleFacts]]:
    """The defs ``call`` may run (empty when unknown)."""
    return [(target, target_facts) for target, target_facts, _ in
            resolve_with_self(call, facts, function, by_name, self_class)]


def resolve_with_self(call: ast.Call, facts: ModuleFacts, function: Optional[FunctionNode],
                      by_name: bool = True, self_class: Optional[ClassRef] = None) -> List[Resolved]:
    """The defs ``call`` may run, each with the class ``self`` is an instance of in it when that is not the
    class defining it (a method a subclass inherits: ``handler.put(x)`` runs ``Base.put`` on a
    ``Handler``), else None."""
    func = call.func
    cross = bool(facts.context.cross_file)
    if isinstance(func, ast.Name):
        scope = function
        while scope is not None:
            for statement in scope.body:
                if isinstance(statement, _FUNCTION_TYPES) and statement.name == func.id:
                    return [(statement, facts, None)]
            scope = facts.enclosing_function(scope)
        for statement in facts.tree.body:
            if isinstance(statement, _FUNCTION_TYPES) and statement.name == func.id:
                return [(statement, facts, None)]
        if cross and facts.imports.is_imported(func.id):
            found = project.find_function(facts.qualify(func) or "", facts.config, project.roots_for(facts))
            return [(found[0], found[1], None)] if found is not None else []
        # ``job(fire_at)`` with ``job`` a parameter handed an instance of a project class: its ``__call__``
        called = called_object_method(call, facts, function)
        return [_with_self(called[:2], called[2])] if called is not None else []
    if not isinstance(func, ast.Attribute):
        return []
    following = _super_method(func.attr, facts, function, self_class) if _is_super(func.value) else []
    if following:
        return following
    owner = _receiver_class(func.value, facts, function, self_class=self_class)
    if owner is not None:
        method = _method_of(owner[0], owner[1], func.attr)
        if method is not None:
            found = [_with_self(method, owner)]
            if _known_as_base(func.value, function):
                found += [(runs, where, sub) for runs, where, sub in overrides(owner, method[0], _method_of)]
            return found
    else:
        # What the annotations declare the receiver to be: each class of a union may run its own method.
        kind = declared.type_of(func.value, facts, function, self_class=self_class)
        methods = [_with_self(method, (cls, cls_facts)) for cls, cls_facts in declared.classes(kind)
                   for method in [_method_of(cls, cls_facts, func.attr)] if method is not None]
        if methods:
            return methods
        if declared.library_class(kind) is not None:
            return []  # an instance of a library's class: no method of the project runs
    head = func.value
    while isinstance(head, ast.Attribute):
        head = head.value
    if cross and isinstance(head, ast.Name) and facts.imports.is_imported(head.id):
        found = project.find_function(facts.qualify(func) or "", facts.config, project.roots_for(facts))
        if found is not None:
            return [(found[0], found[1], None)]
    if cross and by_name and not func.attr.startswith("__") and func.attr not in _CONTAINER_METHODS:
        candidates = project.functions_named(func.attr, facts.config, project.search_root(facts), limit=3)
        return [(c[0], c[1], None) for c in candidates if isinstance(c[1].enclosing_class(c[0]), ast.ClassDef)]
    return []


def _is_super(receiver: ast.AST) -> bool:
    """``super()`` (or ``super(Cls, self)``) as a receiver."""
    return isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super"


def _super_method(name: str, facts: ModuleFacts, function: Optional[FunctionNode],
                  self_class: Optional[ClassRef]) -> List[Resolved]:
    """``super().run()`` in a method of a class (a mixin wrapping a base's ``run``): the def next in the
    resolution order of ``self``'s class after the class the method is written in, with ``self`` that class."""
    from .subclasses import after_in_order, subclasses

    defining = facts.enclosing_class(function) if function is not None else None
    if defining is None:
        return []
    # ``self`` unknown: the instance is of the class or of any subclass, each with its own order (a mixin's
    # ``super()`` reaches the base each class that mixes it in puts after it)
    instances = [self_class] if self_class is not None else [(defining, facts)] + subclasses((defining, facts))
    found: List[Resolved] = []
    for instance in instances:
        following = after_in_order(instance, (defining, facts), name)
        if following is not None and all(following[0] is not seen for seen, _, _ in found):
            found.append((following[0], following[1], instance))
    return found


def _known_as_base(receiver: ast.AST, function: Optional[FunctionNode]) -> bool:
    """``self`` (``cls``), or a parameter annotated with a class: an instance of that class or of any subclass
    of it, so a method called on it runs whichever override its class has."""
    if not isinstance(receiver, ast.Name) or function is None:
        return False
    return receiver.id in ("self", "cls") or _parameter_annotation(function, receiver.id) is not None


def _with_self(method: Tuple[FunctionNode, ModuleFacts], owner: ClassRef) -> Resolved:
    """A method found on ``owner``, with ``owner`` as its ``self`` when a base of it defines the method."""
    function, function_facts = method
    inherited = function_facts.enclosing_class(function) is not owner[0]
    return function, function_facts, owner if inherited else None


# ------------------------------------------------------------------------------------------------
# Effects
# ------------------------------------------------------------------------------------------------
def _is_log_call(call: ast.Call) -> bool:
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in _LOG_METHODS:
        return False
    receiver = func.value
    name = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", "")
    if any(word in name.lower() for word in _LOG_RECEIVER_WORDS):
        return True
    from .claim_syntax import is_logger
    return is_logger(receiver)  # a logger by what made it, whatever the name (``audit = logging.getLogger()``)







_NEUTRAL_METHODS = _SCOPE_METHODS | _QUERY_BUILDERS | _READ_METHODS


def _opens_scope(call: ast.Call) -> bool:
    """A call used as a ``with`` item (a connection, session or transaction scope), or a method that begins
    or ends one."""
    above = getattr(call, "_og_parent", None)
    if isinstance(above, ast.withitem) and above.context_expr is call:
        return True
    if isinstance(above, ast.Await):
        grand = getattr(above, "_og_parent", None)
        if isinstance(grand, ast.withitem):
            return True
    func = call.func
    return isinstance(func, ast.Attribute) and func.attr in _NEUTRAL_METHODS


#: HTTP methods that change what the server holds, as a client's method names (``async with http.post(...)``).
_HTTP_WRITE_METHODS = frozenset({"post", "put", "patch", "delete"})
#: A client's methods that take the HTTP method as their first argument (``client.stream("POST", url)``).
_HTTP_METHOD_TAKING = frozenset({"request", "stream"})
_SAFE_HTTP_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _sends_request(call: ast.Call) -> bool:
    """``async with http.post(url, json=...)``: a request sent as the ``with`` item (aiohttp, httpx's
    ``stream``), an action however it is entered -- not a connection or transaction scope."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in _HTTP_WRITE_METHODS:
        return True
    method = call.args[0] if call.args else None
    return func.attr in _HTTP_METHOD_TAKING and isinstance(method, ast.Constant) and isinstance(method.value, str) \
        and method.value.upper() not in _SAFE_HTTP_METHODS


def _empty_container(node: ast.AST, facts: ModuleFacts) -> bool:
    if isinstance(node, (ast.Dict, ast.List, ast.Set)) and not getattr(node, "keys", None) \
            and not getattr(node, "elts", None):
        return True
    if isinstance(node, ast.Call):
        qualified = facts.callee(node) or ""
        if qualified in _MAPPING_CACHE_FACTORIES:
            return True  # (an in-memory cache's arguments are sizes and lifetimes: it starts empty)
        return not node.args and not node.keywords and qualified in _EMPTY_FACTORIES
    return False


def _state_name(target: ast.AST) -> Optional[str]:
    """``self._pending`` / ``state.telemetry`` / a global: state that outlives the call."""
    return plain_name(target) if isinstance(target, ast.Attribute) else None


def drain_in(function: FunctionNode, facts: ModuleFacts) -> Optional[ast.AST]:
    """Where ``function`` empties a buffer of the process: it reads ``self.x`` (or a module's state) and
    then rebinds it to an empty container or empties it in place (``.clear()``, ``del self.x[:n]``), or takes
    items from an in-memory queue in a loop."""
    globals_declared = {name for node in walk_no_nested_functions(function) if isinstance(node, ast.Global)
                        for name in node.names}
    reads: Dict[str, int] = {}
    for node in walk_no_nested_functions(function):
        if isinstance(node, (ast.Attribute, ast.Name)) and isinstance(node.ctx, ast.Load):
            name = _state_name(node) if isinstance(node, ast.Attribute) else (
                node.id if node.id in globals_declared or _own_buffer(node, facts) else None)
            if name is not None:
                reads.setdefault(name, node.lineno)
        for target, value in _assigned_pairs(node):
            if not _empty_container(value, facts):
                continue
            name = _state_name(target) if isinstance(target, ast.Attribute) else (
                target.id if isinstance(target, ast.Name) and target.id in globals_declared else None)
            # (read before, or in the same swap: ``taken, self._pending = dict(self._pending), Counter()``)
            if name is not None and (name in reads and reads[name] <= node.lineno or _reads_state(node.value, name)):
                return node
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _DRAIN_METHODS \
                and any(isinstance(a, (ast.While, ast.For, ast.AsyncFor)) for a in ancestors(node)):
            return node
        # emptied in place once read and passed on: ``await self.send_batch()`` ... ``self.log_queue.clear()``
        # (or ``del self.log_queue[:sent]``; deleting one key is no emptying)
        emptied = (node.func.value if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                   and node.func.attr == "clear" and not node.args else
                   node.targets[0].value if isinstance(node, ast.Delete) and len(node.targets) == 1
                   and isinstance(node.targets[0], ast.Subscript) and isinstance(node.targets[0].slice, ast.Slice)
                   else None)
        if emptied is not None and _own_buffer(emptied, facts):
            name = _state_name(emptied) if isinstance(emptied, ast.Attribute) else emptied.id
            if name is not None and name in reads and reads[name] < node.lineno \
                    and _work_between(function, reads[name], node.lineno):
                return node
        if isinstance(node, ast.Call) and _takes_what_it_reads(node):
            return node
    return None


def _assigned_pairs(node: ast.AST) -> List[Tuple[ast.AST, ast.AST]]:
    """(target, value) for each name an assignment of one target binds: itself, or each element of a tuple
    swap (``taken, self._pending = self._pending, []``)."""
    if not isinstance(node, ast.Assign) or len(node.targets) != 1:
        return []
    target, value = node.targets[0], node.value
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
            and len(target.elts) == len(value.elts) and not any(isinstance(e, ast.Starred) for e in target.elts):
        return list(zip(target.elts, value.elts))
    return [(target, value)]


def _reads_state(expr: ast.AST, name: str) -> bool:
    """``expr`` reads the state ``name`` (``self._pending``, a global ``_PENDING``)."""
    return any(isinstance(node, (ast.Attribute, ast.Name)) and isinstance(node.ctx, ast.Load)
               and (_state_name(node) if isinstance(node, ast.Attribute) else node.id) == name
               for node in ast.walk(expr))


def _own_buffer(node: ast.AST, facts: ModuleFacts) -> bool:
    """``self.log_queue`` (an attribute of the instance), or a container bound at this module's top level
    (``_pending = []``): a buffer the process holds, not a library object's state (``fetch.cache``)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    if not isinstance(node, ast.Name):
        return False
    if node.id == "self":
        return True
    return any(isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None
               and isinstance(statement.value, (ast.List, ast.Dict, ast.Set, ast.Call))
               and any(isinstance(target, ast.Name) and target.id == node.id
                       for target in (statement.targets if isinstance(statement, ast.Assign) else [statement.target]))
               for statement in facts.tree.body)


_NOT_WORK = frozenset({"len", "list", "dict", "tuple", "set", "sorted", "min", "max", "isinstance", "bool", "int",
                       "str", "debug", "info", "warning", "error", "exception", "critical", "log"})


def _work_between(function: FunctionNode, first: int, last: int) -> bool:
    """A call (not a built-in's, not a log call) on the lines from ``first`` to before ``last`` of ``function``: the
    buffer read at ``first`` is handed on (sent) before it is emptied at ``last``, not merely reset."""
    for node in walk_no_nested_functions(function):
        if isinstance(node, ast.Call) and first <= node.lineno < last:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name not in _NOT_WORK:
                return True
    return False


def _takes_what_it_reads(call: ast.Call) -> bool:
    """``api.get_stats(reset=True)``, ``r.getdel(key)``: a read that leaves nothing for the next reader, so
    each replica that runs it gets its own share (and must pass that share on)."""
    if isinstance(call.func, ast.Attribute) and call.func.attr in _TAKE_METHODS:
        return True
    return any(k.arg in _TAKE_KEYWORDS and isinstance(k.value, ast.Constant) and k.value.value is True
               for k in call.keywords)


def _sql_effect(call: ast.Call, entries) -> Optional[str]:
    entry = entries.get(id(call))
    if entry is None:
        return None
    # (a SELECT over a data-modifying WITH does the writes it runs)
    types = entry.sql.cte_writes or entry.sql.statement_types
    text = " ".join(entry.text.upper().split())
    if not types and "REFRESH MATERIALIZED VIEW" in text:
        return "idempotent"
    if types and all(t == "SelectStmt" for t in types):
        return "read"
    if "REFRESH MATERIALIZED VIEW" in text or set(types) == {"RefreshMatViewStmt"}:
        return "idempotent"
    if types and all(t in ("DeleteStmt", "UpdateStmt") for t in types) and " WHERE " in text:
        if "UpdateStmt" in types and _arithmetic_set(text):
            return "other"
        return "idempotent"
    if types and all(t == "InsertStmt" for t in types) and " ON CONFLICT " in text:
        # ``ON CONFLICT DO NOTHING``, or an upsert that sets the row to the values given: running it again (on
        # another replica) leaves the table as one run did; an upsert that adds (``n = t.n + 1``) does not
        action = text.split(" ON CONFLICT ", 1)[1]
        if " DO NOTHING" in " " + action or (" DO UPDATE " in " " + action and not _arithmetic_set(action)):
            return "idempotent"
    return "other"


def _arithmetic_set(text: str) -> bool:
    """``SET n = n + 1``: a relative update adds up when repeated."""
    head = text.split(" SET ", 1)[-1].split(" WHERE ", 1)[0]
    return any(op in head for op in ("+", "-", "*", "||"))


def _set_statement_chain(call: ast.Call, function: FunctionNode) -> List[ast.Call]:
    statement = orm_set_statement(call, function)
    return statement.chain if statement is not None else []


def _refreshes_expiries(call: ast.Call, function: FunctionNode) -> bool:
    """``pipe.execute()`` on a Redis pipeline the function made, when every command queued on it sets a key's
    time to live: renewing a lease or a TTL gives the same result however often it runs."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == redis_known.PIPELINE_SEND and not call.args
            and isinstance(func.value, ast.Name)):
        return False
    pipe = func.value.id
    made = False
    queued = []
    for node in walk_no_nested_functions(function):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == pipe for t in node.targets):
            made = made or _makes_pipeline(node.value)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            made = made or any(isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == pipe
                               and _makes_pipeline(item.context_expr) for item in node.items)
        elif (isinstance(node, ast.Call) and node is not call and isinstance(node.func, ast.Attribute)
              and isinstance(node.func.value, ast.Name) and node.func.value.id == pipe):
            queued.append(node.func.attr)
    return made and bool(queued) and all(command in redis_known.EXPIRY_COMMANDS for command in queued)


def _makes_pipeline(value: ast.AST) -> bool:
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and value.func.attr == redis_known.PIPELINE_FACTORY)


def _composes_query(call: ast.Call, function: FunctionNode) -> bool:
    """``expired.subquery()`` on a query shaped into ``expired``: a piece of another statement, sent with it."""
    func = call.func
    return (isinstance(func, ast.Attribute) and func.attr in orm_known.QUERY_COMPOSERS
            and orm_query(func.value, function) is not None)


def _orm_idempotent(call: ast.Call, function: Optional[FunctionNode] = None) -> bool:
    """``Model.objects.filter(...).delete()``, ``.filter(...).update(flag=<constant>)``,
    ``session.query(M).filter(...).delete()``: a set-based statement that repeats to the same result."""
    statement = orm_set_statement(call, function)
    if statement is None:
        return False
    return statement.kind == "delete" or all(isinstance(v, ast.Constant) for v in statement.values)


def pure_callee(qualified: str) -> bool:
    """A function the knowledge says computes and changes nothing outside the process (by name, or its module)."""
    return bool(qualified) and (qualified in _PURE_CALLS or qualified.startswith(_PURE_MODULES))


#: Methods that remove what they are called on (or the one thing named by their argument).
_REMOVALS = frozenset({"delete", "adelete"})


def _removes(call: ast.Call) -> bool:
    func = call.func
    return isinstance(func, ast.Attribute) and func.attr in _REMOVALS and len(call.args) <= 1 and not call.keywords


def _stops_or_deletes(call: ast.Call, facts: ModuleFacts) -> bool:
    """``shutil.rmtree(tmp)``, ``stale.unlink(missing_ok=True)``, ``proc.terminate()``: a path removed, a
    process stopped. Repeated, it removes or stops nothing more (OG204 at most, never a duplicated effect)."""
    if (facts.callee(call) or "") in _PATH_DELETES:
        return True
    func = call.func
    return isinstance(func, ast.Attribute) and func.attr in _STOP_OR_DELETE_METHODS and len(call.args) <= 1


class Summaries:
    """Effects of functions, cached per def for one run."""

    def __init__(self, strict: bool = False) -> None:
        #: every call the analysis cannot follow counts, however deep (not only near the job): for work that must
        #: be shown harmless before it is let off, as a passed test's follow-up is
        self._strict = strict
        #: (def, the class ``self`` is an instance of when a subclass inherits the def) -> effects
        self._effects: Dict[Tuple[int, int], Effects] = {}
        self._sql: Dict[int, dict] = {}
        self._budget = CALL_BUDGET

    def _entries(self, facts: ModuleFacts) -> dict:
        key = id(facts)
        if key not in self._sql:
            self._sql[key] = {id(e.call): e for e in executed_sql(facts)}
        return self._sql[key]

    def effects(self, function: FunctionNode, facts: ModuleFacts, depth: int = 0,
                skip: Optional[set] = None, self_class: Optional[ClassRef] = None) -> Effects:
        key = (id(function), id(self_class[0]) if self_class is not None else 0)
        cached = self._effects.get(key)
        if cached is not None:
            return cached
        if depth == 0:
            self._budget = CALL_BUDGET  # each job gets the same bounded look
        self._effects[key] = Effects()  # a recursive call sees no effects of its own
        result = Effects(drain=drain_in(function, facts))
        entries = self._entries(facts)
        per_row, claiming = claimed_row_calls(function)
        calls = list(self._calls(function))
        # Calls that build an ORM set-based statement are part of it, not effects of their own, also when the
        # query is built into a name lines before it runs.
        built = {id(link) for call in calls for link in _set_statement_chain(call, function)}
        for call in calls:
            if result.drain is not None:
                break  # a flush of the process's own buffer: what else it does is that flush's work
            if (skip is not None and id(call) in skip) or id(call) in per_row or id(call) in built:
                continue  # loop machinery, part of a set-based statement, or work done once per row this run claimed
            if id(call) in claiming:
                result.merge(Effects(idempotent=[call]))
                continue
            result.merge(self._call_effect(call, facts, function, entries, depth, self_class))
        self._effects[key] = result
        return result

    def effects_of(self, statements: List[ast.AST], function: FunctionNode, facts: ModuleFacts,
                   skip: Optional[set] = None) -> Effects:
        """Effects of some statements of ``function`` (the work one branch does), judged as ``effects`` judges
        the function's own calls; not cached as the function's."""
        self._budget = CALL_BUDGET
        result = Effects()
        entries = self._entries(facts)
        for statement in statements:
            for node in walk_no_nested_functions(statement):
                if isinstance(node, ast.Call) and not (skip and id(node) in skip):
                    result.merge(self._call_effect(node, facts, function, entries, 0))
        return result

    def flushed_effects(self, statements: List[ast.AST], function: FunctionNode, facts: ModuleFacts) -> Effects:
        """What the flushes among some statements do with what they empty: a call of a project function that
        empties a buffer of the process (``_flush(pool, buffer)`` taking ``buffer.drain()`` and writing it) is
        summed up as that drain alone (``effects``), since each process hands on its own share; work that filled
        the buffer with a copy of what every replica holds makes that write each replica's.  One call deep."""
        result = Effects()
        for statement in statements:
            for node in walk_no_nested_functions(statement):
                if not isinstance(node, ast.Call):
                    continue
                for target, target_facts in resolve(node, facts, function, by_name=False):
                    if not target_facts.context.is_test and self.effects(target, target_facts).drain is not None:
                        result.merge(self.effects_of(list(target.body), target, target_facts))
        return result

    def call_effects(self, call: ast.Call, function: FunctionNode, facts: ModuleFacts) -> Effects:
        """What one call of ``function`` does, judged as ``effects`` judges each call of a job."""
        self._budget = CALL_BUDGET
        return self._call_effect(call, facts, function, self._entries(facts), 0)

    @staticmethod
    def _calls(function: FunctionNode) -> Iterator[ast.Call]:
        # The body only: the decorators (``@scheduler.scheduled_job(...)``) and defaults run once, at
        # definition, not each time the function does.
        return (node for node in body_nodes(function) if isinstance(node, ast.Call))

    def _call_effect(self, call: ast.Call, facts: ModuleFacts, function: FunctionNode, entries: dict,
                     depth: int, self_class: Optional[ClassRef] = None) -> Effects:
        sql = _sql_effect(call, entries) or statement_effect(call, facts, function)
        if sql == "read":
            return Effects()
        if not _is_log_call(call) and acts_on_own_share(call, function, facts, self_class):
            return Effects(own=[call])
        if sql == "idempotent":
            return Effects(idempotent=[call])
        if sql == "other":
            return _outside(call, facts, True, depth)
        if _orm_idempotent(call, function) or _stops_or_deletes(call, facts):
            return Effects(idempotent=[call])
        if builds_statement(call, facts, function) or _composes_query(call, function):
            return Effects()
        if _is_log_call(call) or (_opens_scope(call) and not _sends_request(call)):
            return Effects()
        if _refreshes_expiries(call, function):
            return Effects(idempotent=[call])
        if _makes_pipeline(call):
            return Effects()  # a pipeline sends nothing until ``execute()``, judged there and by what it queued
        qualified = facts.callee(call) or ""
        if isinstance(call.func, ast.Attribute) and call.func.attr in _COROUTINE_RUNNERS and call.args \
                and isinstance(call.args[0], ast.Call):
            # ``loop.run_until_complete(update_metrics(redis))``: the work is the coroutine's
            return self._call_effect(call.args[0], facts, function, entries, depth, self_class)
        run = handed_callable(call, facts, qualified)
        handed = run or _enqueued_task(call)
        if handed is not None and depth < MAX_DEPTH:
            # ``executor.submit(poll, api)``, ``asyncio.to_thread(export)``: the work is the callable's.
            targets = resolve_with_self(ast.copy_location(ast.Call(func=handed, args=[], keywords=[]), call), facts,
                                        function, by_name=False, self_class=self_class)
            if targets:
                merged = Effects()
                for target, target_facts, target_self in targets:
                    if not target_facts.context.is_test:
                        merged.merge(self.effects(target, target_facts, depth + 1, self_class=target_self))
                return merged
            if run is not None:
                # A library's callable handed to a runner (``asyncio.to_thread(stripe.Charge.create, **charge)``)
                # does what it would do called here: the runner itself is no evidence of safety.
                return self._call_effect(_called_in_place(run, call), facts, function, entries, depth + 1,
                                         self_class)
        if _acts_on_own_process(call, qualified) or _reads_a_file(call, qualified):
            return Effects()
        if pure_callee(qualified) or qualified in _SQL_EXPRESSION_CALLS or qualified in _HTTP_READ_CALLS:
            return Effects()
        if isinstance(call.func, ast.Name) and depth < MAX_DEPTH and self._budget > 0:
            handed_in = self._handed_parameter(call.func.id, function, facts, depth, self_class)
            if handed_in is not None:
                return handed_in
        if _removes(call) and not resolve_with_self(call, facts, function, by_name=False, self_class=self_class):
            # ``blob.delete()``, ``storage.delete(name)`` on an object the project does not type: a removal
            # repeated removes nothing more (a def found only by its common name is no evidence against that)
            return Effects(idempotent=[call])
        if depth < MAX_DEPTH and self._budget > 0:
            self._budget -= 1
            # A stub (a Protocol's or an abstract method, ``...``) says nothing of what the object behind it
            # does: judged as the unknown call it is.
            targets = [t for t in resolve_with_self(call, facts, function, by_name=depth < BY_NAME_DEPTH,
                                                    self_class=self_class) if not _is_stub(t[0])]
            if targets:
                merged = Effects()
                for target, target_facts, target_self in targets:
                    if target_facts.context.is_test:
                        continue
                    merged.merge(self.effects(target, target_facts, depth + 1, self_class=target_self))
                return merged
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in _CONTAINER_METHODS and _local_receiver(func.value, function, facts):
            return Effects()
        if isinstance(func, ast.Attribute) and declared.library_class(
                declared.type_of(func.value, facts, function, self_class=self_class)) in _PROCESS_LOCAL_CLASSES:
            return Effects()  # a metric or an in-process queue made from a library's class
        if isinstance(func, ast.Attribute) and (func.attr in _INERT_METHODS or _sets_a_metric(func)):
            return Effects()
        if _builds_an_object(func) or _is_accessor(func):
            return Effects()
        plain = _names_a_write(call, qualified)
        if depth >= UNKNOWN_DEPTH and not plain and not self._strict:
            return Effects()
        return _outside(call, facts, plain, depth)


    def _handed_parameter(self, name: str, function: FunctionNode, facts: ModuleFacts, depth: int,
                          self_class: Optional[ClassRef]) -> Optional[Effects]:
        """A call of a parameter of ``function`` (``def throttled(emit, text): emit(text)``) that every caller
        hands a logger's method (``throttled(log.warning, ...)``) is a log line: no effect.  None otherwise (the
        call is judged as any other: what one caller hands says nothing of another caller's run)."""
        if name in _name_bindings(function):
            return None  # assigned in the body: no longer (only) what the caller handed it
        positional = [a.arg for a in function.args.posonlyargs + function.args.args]
        if name not in positional and name not in (a.arg for a in function.args.kwonlyargs):
            return None
        if positional and positional[0] in ("self", "cls") and facts.enclosing_class(function) is not None:
            positional = positional[1:]
        index = positional.index(name) if name in positional else None
        sites = [(c, facts) for c in facts.calls_named(function.name)] + [
            (c, where) for c, where in callers(function, facts, limit=_MAX_HANDING_CALLERS) if where is not facts]
        if not sites or len(sites) > _MAX_HANDING_CALLERS:
            return None
        self._budget -= 1
        for call, _ in sites:
            value = next((k.value for k in call.keywords if k.arg == name), None)
            if value is None and index is not None and index < len(call.args) \
                    and not any(isinstance(a, ast.Starred) for a in call.args[:index + 1]):
                value = call.args[index]
            if value is None or not _is_log_call(ast.Call(func=value, args=[], keywords=[])):
                return None
        return Effects()


#: At most this many calls of a function are read for what they hand it to call.
_MAX_HANDING_CALLERS = 12


#: Methods that change nothing another replica sees, on any receiver: reads, and the process's own metrics.
_INERT_METHODS = _READ_ANYWHERE_METHODS | _PROCESS_LOCAL_METHODS


#: An event loop's methods that run the coroutine they are handed to completion, here.
_COROUTINE_RUNNERS = frozenset({"run_until_complete"})


def _is_stub(function: FunctionNode) -> bool:
    """A def with no behaviour of its own, an interface's method whose work is another class's: a body of
    ``...`` or ``raise NotImplementedError`` (after an optional docstring), or an ``@abstractmethod``.  A plain
    ``pass`` elsewhere is a function that does nothing."""
    if any((dotted_name(d) or "").endswith("abstractmethod") for d in function.decorator_list):
        return True
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    if len(body) != 1:
        return False
    statement = body[0]
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
        return statement.value.value is Ellipsis
    return isinstance(statement, ast.Raise) and statement.exc is not None and \
        "NotImplementedError" in (dotted_name(statement.exc.func if isinstance(statement.exc, ast.Call)
                                              else statement.exc) or "")


def _called_in_place(handed: ast.AST, runner: ast.Call) -> ast.Call:
    """The call a runner makes of the callable it is handed, at the runner's place, with the arguments handed
    along (``to_thread(create, customer=c)`` -> ``create(customer=c)``)."""
    # (no parent link: the summary keeps what it found, and a link would keep the whole tree alive after the
    # module's facts are released)
    called = ast.Call(func=handed, args=[a for a in runner.args if a is not handed],
                      keywords=[k for k in runner.keywords if k.value is not handed])
    return ast.copy_location(called, runner)


def _enqueued_task(call: ast.Call) -> Optional[ast.AST]:
    """``send_digest.delay(...)``, ``task.apply_async(...)``: the task the call enqueues.  A worker runs it
    once per enqueue, so a repeated enqueue repeats the task's effects -- and nothing else."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in _ENQUEUE_METHODS \
            and isinstance(func.value, (ast.Name, ast.Attribute)):
        return func.value
    return None


def _reads_a_file(call: ast.Call, qualified: str) -> bool:
    """``open(path)``, ``open(path, "rb")``: opened for reading only (a mode the code fixes, or none)."""
    if qualified not in _FILE_OPENERS or not call.args:
        return False
    mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
    if mode is None:
        return not any(k.arg is None for k in call.keywords) and not any(isinstance(a, ast.Starred) for a in call.args)
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) \
        and not set(mode.value) & _FILE_WRITE_MODE_CHARACTERS


def _acts_on_own_process(call: ast.Call, qualified: str) -> bool:
    """``os.kill(os.getpid(), SIGTERM)``, ``sys.exit()``: the process ends or signals itself; ``os.kill(pid, 0)``
    sends no signal at all, it asks whether the process is there."""
    if qualified in _OWN_PROCESS_CALLS:
        return True
    if qualified in _SIGNAL_CALLS and len(call.args) == 2 and isinstance(call.args[1], ast.Constant) \
            and call.args[1].value == 0:
        return True
    if qualified in _SIGNAL_CALLS and call.args and isinstance(call.args[0], ast.Call):
        func = call.args[0].func
        name = dotted_name(func)
        return name in _OWN_PID_CALLS or name.rsplit(".", 1)[-1] == "getpid"
    return False


def _builds_an_object(func: ast.AST) -> bool:
    """``Console(...)``, ``errors.NotFound(...)``, ``Redis.from_url(...)``: a class outside the project,
    instantiated (or made by its alternate constructor).  Building an
    object changes nothing outside the process; what is then done with it (``.send()``) is judged as its own
    call.  (A project class is resolved to its ``__init__`` before this is asked.)"""
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if isinstance(func, ast.Attribute) and name.startswith("from_") and _builds_an_object(func.value):
        return True  # ``Redis.from_url(...)``, ``Settings.from_env()``: a class's alternate constructor
    if isinstance(func, ast.Name) and name == "cls":
        return True  # ``cls(...)`` in a classmethod: an instance of its class, made from what it was handed
    # (a module's private class, ``_Catalogue(...)``, is spelled as a class behind its underscore)
    name = name.lstrip("_")
    return bool(name) and name[0].isupper() and not name.isupper()


def _sets_a_metric(func: ast.Attribute) -> bool:
    """``gauge.labels(...).set(value)``: a labelled metric of this process."""
    inner = func.value
    return func.attr == "set" and isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) \
        and inner.func.attr == "labels"


def _is_accessor(func: ast.AST) -> bool:
    """An unresolved ``get_x()`` / ``is_x()``: named as a read, and nothing in the project says otherwise."""
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name.startswith(_ACCESSOR_PREFIXES) and not any(word in name for word in _ACCESSOR_EXCEPTIONS)


_WORD_SPLIT = re.compile(r"[_\W]+|(?<=[a-z])(?=[A-Z])")


def _names_a_write(call: ast.Call, qualified: str) -> bool:
    """``client.send_invoice``, ``publishEvent``, ``subprocess.run``: the call's own name (or module) says it
    changes something outside the process."""
    if qualified.startswith(_EFFECT_MODULES):
        return True
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name in _STORAGE_NAMES:
        return not (name == "update" and _is_dict_update(call))
    return any(word.lower() in _ACTION_WORDS for word in _WORD_SPLIT.split(name) if word)


def names_a_write(call: ast.Call) -> bool:
    """The call's own name says it changes something outside the process (``client.post``, ``send_push``)."""
    return _names_a_write(call, "")


_STORAGE_NAMES = frozenset(form.format(verb) for verb in _STORAGE_VERBS for form in _STORAGE_VERB_FORMS) \
    | _STORAGE_NAMES_MORE


def _is_dict_update(call: ast.Call) -> bool:
    """``settings.update(other)``: one mapping merged into a named object reads as ``dict.update``; a row or
    query update names its columns (``.update(status=...)``, ``update(where=..., data=...)``)."""
    receiver = getattr(call.func, "value", None)
    return isinstance(receiver, (ast.Name, ast.Attribute)) and len(call.args) == 1 and not call.keywords


def _outside(call: ast.Call, facts: ModuleFacts, plain: bool, depth: int) -> Effects:
    return Effects(other=[call], first_other=Evidence(call, facts.context.path, plain, depth))


_LITERALS = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp, ast.Constant, ast.JoinedStr)


def _is_literal(value: Optional[ast.AST], facts: ModuleFacts) -> bool:
    """A literal, an empty container, or a new container a call hands back (``glob.glob(...)``)."""
    if isinstance(value, ast.Call) and (facts.callee(value) or "") in _FRESH_CONTAINER_CALLS:
        return True
    return isinstance(value, _LITERALS) or (value is not None and _empty_container(value, facts))


def _local_receiver(receiver: ast.AST, function: FunctionNode, facts: ModuleFacts) -> bool:
    """A name bound (in the function, else at module level) to a literal, a comprehension or a container,
    or ``self.x`` the class binds to one: the process's own memory.  An element of such a container
    (``by_model[name].append(row)``, ``by_model.setdefault(name, []).append(row)``) holds what this code
    put there, and is the process's too."""
    if isinstance(receiver, _LITERALS):
        return True
    if isinstance(receiver, ast.Subscript):
        return _local_receiver(receiver.value, function, facts)
    if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) \
            and receiver.func.attr in _CONTAINER_METHODS:
        return _local_receiver(receiver.func.value, function, facts)
    if isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) and receiver.value.id == "self":
        cls = facts.enclosing_class(function)
        if cls is None:
            return False
        writes = [n for n in _attribute_writes(cls).get(receiver.attr, ()) if isinstance(n, ast.Assign)
                  or isinstance(getattr(n, "target", None), ast.Attribute)]
        return bool(writes) and _is_literal(writes[0].value, facts)
    if not isinstance(receiver, ast.Name):
        return False
    for scope in (function, facts.tree):
        node = _name_bindings(scope).get(receiver.id)
        if node is not None:
            return _is_literal(node.value, facts)
    return False


def summaries_for(facts: ModuleFacts, strict: bool = False) -> Summaries:
    """One summary table per checked module (the defs of other modules it reaches are summarised with it); a
    second, ``strict``, in which every call nothing follows counts as an effect."""
    if strict:
        return facts.cached("summaries:strict", lambda _facts: Summaries(strict=True))
    return facts.cached("summaries", lambda _facts: Summaries())


# ------------------------------------------------------------------------------------------------
# Callers: who runs a function, found across the project (a constructor through its class name)
# ------------------------------------------------------------------------------------------------
def callers(function: FunctionNode, facts: ModuleFacts, limit: int = 40) -> List[Tuple[ast.Call, ModuleFacts]]:
    """The calls in the project that run ``function`` (``Class(...)`` for an ``__init__``), at most
    ``limit``.  Only files whose text names it are parsed."""
    from .app_namespaces import kept_names
    from .bindings import own_module_names

    if not facts.context.cross_file:
        return []
    cls = facts.enclosing_class(function)
    if function.name == "__init__":
        if cls is None:
            return []
        name, suffixes = cls.name, [cls.name]
    else:
        name = function.name
        suffixes = [f"{cls.name}.{name}"] if cls is not None else [name]
    modules = own_module_names(facts)
    qualified = {f"{module}.{suffix}" for module in modules for suffix in suffixes}
    found: List[Tuple[ast.Call, ModuleFacts]] = []
    # (a method is also called through a module-level instance another module imports, not naming the class)
    kept = (*kept_names(cls, facts), *facts.instances_of(cls)) if cls is not None and function.name != "__init__" \
        else ()
    may_call = _caller_text_check(facts, modules, cls.name if cls is not None else None, name, kept)
    for path in project.files_mentioning(name, project.search_root(facts)):
        if path == facts.context.path or os.path.abspath(path) == os.path.abspath(facts.context.path):
            other = facts
        elif FileContext(path, facts.config, cross_file=True).is_test or not may_call(path):
            continue  # skipped below anyway, or cannot spell a call to it: no parse
        else:
            other = project.module_facts(path, facts.config)
        if other is None or other.context.is_test:
            continue
        for call in other.calls_by_name.get(name, ()):
            target = other.qualify(call.func) or ""
            same_module = other is facts and (dotted_name(call.func) in suffixes
                                              or (cls is not None and _is_self_call(call, name)))
            if target in qualified or same_module or (
                    cls is not None and function.name != "__init__" and _runs_method(call, other, function, facts)):
                found.append((call, other))
                if len(found) >= limit:
                    return found
    return found


def _runs_method(call: ast.Call, facts: ModuleFacts, method: FunctionNode, method_facts: ModuleFacts) -> bool:
    """``self._repo.fetch(...)`` with ``self._repo`` typed as the method's class (an annotated parameter, an
    instance made of it): the call resolves to the method itself."""
    if not isinstance(call.func, ast.Attribute) or isinstance(call.func.value, ast.Name) and call.func.value.id in (
            "self", "cls"):
        return False
    own = os.path.abspath(method_facts.context.path or "")
    return any(target.name == method.name and target.lineno == method.lineno
               and os.path.abspath(where.context.path or "") == own
               for target, where in resolve(call, facts, facts.enclosing_function(call), by_name=False))


_EMPTY_RELATIVE_IMPORT = re.compile(rb"from[\s\\]*\.+[\s\\]*import")


def _caller_text_check(facts: ModuleFacts, modules: Set[str], class_name: Optional[str], called: str,
                       kept: Tuple[str, ...] = ()):
    """What another file's bytes must hold to contain a call that qualifies to a def of ``modules``.

    Such a call is spelled ``mod.f(...)``, ``Class.f(...)`` or ``f(...)`` after ``from pkg.mod import f``
    / ``from .mod import f``: the module's last name is written in the file, except after ``from . import f``
    (the module is then the file's own package); a method's class is named in the call itself.  Checked on
    the bytes already read, so a common function name does not parse every file that says it.  A method of a
    class the application keeps on its namespace is called through it instead (``request.app.ctx.presence
    .online()``: ``kept`` holds ``ctx.presence``).  And the
    name must be called somewhere: followed by ``(`` (or by a comment, a line continuation or the ``)`` of
    ``(obj.name)(...)`` on the way to one)."""
    module_words = {module.rsplit(".", 1)[-1].encode("utf-8", "replace") for module in modules}
    path = facts.context.path or ""
    package_module = os.path.basename(path) == "__init__.py" or (path.endswith(".py") and os.path.isdir(path[:-3]))
    class_word = class_name.encode("utf-8", "replace") if class_name is not None else b""
    kept_words = [word.encode("utf-8", "replace") for word in kept]

    # Starts with the name itself, so the regular expression engine scans for it as plain text.
    call = re.compile(re.escape(called.encode("utf-8", "replace")) + rb"[\s\\]*[(#)]")

    def may_call(other_path: str) -> bool:
        source = project.read_bytes(other_path)
        named = class_word in source and any(word in source for word in module_words) or any(
            word in source for word in kept_words)
        if not named and not (package_module and _EMPTY_RELATIVE_IMPORT.search(source) is not None):
            return False
        return call.search(source) is not None

    return may_call


def dotted_name(node: ast.AST) -> str:
    from ..analysis.names import dotted

    return dotted(node) or ""


def _is_self_call(call: ast.Call, name: str) -> bool:
    func = call.func
    return (isinstance(func, ast.Attribute) and func.attr == name and isinstance(func.value, ast.Name)
            and func.value.id in ("self", "cls"))
