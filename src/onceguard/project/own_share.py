"""This replica's own share of the work: what a repeated job acts on that no other replica holds.

A ticker that sweeps a registry its process fills as it serves (the sessions it opened, the experiments it
was asked to start, the sockets connected to it) acts only on the items this replica served: another
replica's registry holds others.  Closing one of those sessions or running one of those work items is the
replica's own work, and every replica must do its own.  Rows a statement picks by the replica's own
identity (an id made once from ``uuid4()``/``token_hex()``, this host's name, this process's id) are the
replica's share in the same way.

What counts as a registry: an instance attribute (or a module-level name) made empty where it is bound, and
filled (``self.tracked[key] = ...``, ``.append``, ``.add``, ...) only through ways in that are handed what
they add: the object's public and special methods that fill it, themselves or through its private ones (or
the module's functions that fill it), each taking parameters and none called at module level or from
start-up code anywhere in the project.  What start-up registers, and what the object's own loop loads, is
the same in every replica; what callers hand in as they serve is not.

The test is on values, within one function: a name is drawn from a registry when every value bound to it
is (a subscript, an attribute, a method's result or a copy of one, an item of a loop over one, a list that
only such values are added to), or from the replica's identity when it is one of those ids.
"""
from __future__ import annotations

import ast
import re
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

from . import index as project
from .declared_types import ClassRef, attribute_writes
from ..analysis.facts import FunctionNode, ModuleFacts, call_name, walk, walk_no_nested_functions
from ..analysis.names import dotted
from ..knowledge.effects import (CONTAINER_METHODS, EMPTY_FACTORIES, PROCESS_METRICS_MODULES, PROCESS_METRICS_SOURCES,
                                 REGISTRY_FILL_METHODS, REPLICA_IDENTITY_CALLS, ROW_SELECTION_METHODS,
                                 STATEMENT_SENDERS)

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


def acts_on_own_share(call: ast.Call, function: FunctionNode, facts: ModuleFacts,
                      self_class: Optional[ClassRef] = None) -> bool:
    """``call`` acts on this replica's own items or rows: its receiver or an argument is drawn from a
    registry the process fills as it serves, or the rows it acts on are picked by the replica's identity."""
    share = _share_of(function, facts, self_class)
    if share is None:
        return False
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in CONTAINER_METHODS and share.is_registry(func.value):
        return False  # the registry's own bookkeeping (``_seen.add(key)``): the process's memory, judged as such
    if isinstance(func, ast.Attribute) and share.item(func.value):
        return True
    values = [*call.args, *(k.value for k in call.keywords)]
    if any(share.item(v) or share.selected(v) for v in values) or share.selected(call):
        return True
    # What the replica says of itself (a keep-alive naming it, a key or file named after it) is its own;
    # a statement's rows are its own only when picked by the identity (above), not when stamped with it.
    return any(share.identity(v) for v in values) and not _sends_a_statement(call, facts)


def _sends_a_statement(call: ast.Call, facts: ModuleFacts) -> bool:
    """A call that sends SQL or builds or runs a query: ``execute(...)``, ``filter(...).update(...)``."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in STATEMENT_SENDERS:
        return True
    for node in walk(call):
        if isinstance(node, ast.Attribute) and node.attr in _QUERY_WORDS:
            return True
        if isinstance(node, ast.Call) and (call_name(node) or "") in _STATEMENT_BUILDERS:
            return True
    return False


#: Words of a query chain (Django managers and querysets, SQLAlchemy statements).
_QUERY_WORDS = frozenset({"objects", "query", "values", "update", "update_or_create", "get_or_create"}) | \
    ROW_SELECTION_METHODS
_STATEMENT_BUILDERS = frozenset({"update", "insert", "delete", "select", "text"})


class _Share:
    """The names of one function that hold registry items, identity values or statements picked by one."""

    def __init__(self, function: FunctionNode, facts: ModuleFacts, cls: Optional[ast.ClassDef],
                 registries: Dict[str, "_Registry"], identities: FrozenSet[str],
                 module_registries: Dict[str, "_Registry"], module_identities: FrozenSet[str],
                 returns: Optional[Dict[Tuple[int, str], bool]] = None) -> None:
        self.function, self.facts, self.cls = function, facts, cls
        self.registries, self.identities = registries, identities
        self.module_registries, self.module_identities = module_registries, module_identities
        self.items: Set[str] = set()
        self.ids: Set[str] = set()
        self.picked: Set[str] = set()
        # What the defs asked about return, shared with the shares of those defs (and theirs) from the start:
        # settling a share asks again, and helpers that call each other would otherwise ask without end.
        self._returns: Dict[Tuple[int, str], bool] = returns if returns is not None else {}
        self._settle()

    # -- the three kinds of value ---------------------------------------------------------------------------
    def item(self, value: ast.AST) -> bool:
        """``value`` is drawn from the replica's own items: a registry's entries, the process's own metrics
        (a Prometheus registry's samples, its exposition text), or what is computed from either."""
        while True:
            if isinstance(value, ast.Name):
                if value.id in self.items:
                    return True
                if value.id in self._bound:
                    return False
                if value.id in self.module_registries:
                    return self.module_registries[value.id]()
                return (self.facts.qualify(value) or "") in PROCESS_METRICS_SOURCES
            if isinstance(value, ast.Attribute):
                if _is_self(value.value) and value.attr in self.registries:
                    return self.registries[value.attr]()
                value = value.value
            elif isinstance(value, (ast.Subscript, ast.Starred, ast.Await, ast.NamedExpr)):
                value = value.value
            elif isinstance(value, ast.Call):
                return self._call_item(value)
            elif isinstance(value, (ast.Tuple, ast.List, ast.Set)):
                return any(self.item(e) for e in value.elts)
            elif isinstance(value, ast.Dict):
                return any(self.item(v) for v in value.values)
            elif isinstance(value, ast.IfExp):
                return all(self.item(v) or _is_none(v) for v in (value.body, value.orelse)) \
                    and not (_is_none(value.body) and _is_none(value.orelse))
            elif isinstance(value, _COMPREHENSIONS):
                element = value.value if isinstance(value, ast.DictComp) else value.elt
                return self.item(value.generators[0].iter) or self.item(element)
            elif isinstance(value, ast.JoinedStr):
                # ``f"/rooms/{room}/close"``: a name made from an item names that item.
                return any(isinstance(part, ast.FormattedValue) and self.item(part.value) for part in value.values)
            elif isinstance(value, ast.BinOp):
                return self.item(value.left) or self.item(value.right)
            else:
                return False

    def is_registry(self, value: ast.AST) -> bool:
        """``value`` is a registry container itself (or one of its slots), not an item drawn from it."""
        while isinstance(value, ast.Subscript):
            value = value.value
        if isinstance(value, ast.Attribute) and _is_self(value.value):
            return value.attr in self.registries
        return isinstance(value, ast.Name) and value.id in self.module_registries and value.id not in self._bound

    def _call_item(self, call: ast.Call) -> bool:
        """A method of an item (``tracked.backend``, ``self._open.items()``), what the class's or module's own
        function returns of them, the process's metrics, or anything computed from an item
        (``sorted(...)``, ``"\\n".join(lines)``, ``encode(sample)``)."""
        func = call.func
        if (self.facts.callee(call) or "") in PROCESS_METRICS_SOURCES:
            return True
        if isinstance(func, ast.Attribute):
            if _is_self(func.value) and self.cls is not None and self._returns_items(func.attr, self.cls.body):
                return True
            if not _is_self(func.value) and self.item(func.value):
                return True
        elif isinstance(func, ast.Name) and func.id not in self._bound \
                and self._returns_items(func.id, self.facts.tree.body):
            return True
        return any(self.item(a) for a in [*call.args, *(k.value for k in call.keywords)])

    def identity(self, value: ast.AST) -> bool:
        for node in walk(value):
            if isinstance(node, ast.Name) and (node.id in self.ids or (
                    node.id in self.module_identities and node.id not in self._bound)):
                return True
            if isinstance(node, ast.Attribute) and _is_self(node.value) and node.attr in self.identities:
                return True
            if isinstance(node, ast.Call) and (self.facts.callee(node) or "") in REPLICA_IDENTITY_CALLS:
                return True
        return False

    def selected(self, value: ast.AST) -> bool:
        """A statement (or query) whose rows are picked by the replica's identity: ``.where(T.owner == me)``,
        ``.filter_by(owner=me)``, and what is chained on it or bound from it."""
        while True:
            if isinstance(value, ast.Name):
                return value.id in self.picked
            if isinstance(value, ast.Await):
                value = value.value
                continue
            if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Attribute):
                return False
            func = value.func
            if func.attr in ROW_SELECTION_METHODS and (
                    any(isinstance(n, ast.Compare) and any(self.identity(side) for side in (n.left, *n.comparators))
                        for a in value.args for n in walk(a))
                    or any(k.arg is not None and self.identity(k.value) for k in value.keywords)):
                return True
            value = func.value

    # -- names ----------------------------------------------------------------------------------------------
    def _settle(self) -> None:
        sources: Dict[str, List[ast.AST]] = {}
        fills: Dict[str, List[ast.AST]] = {}
        for node in walk_no_nested_functions(self.function):
            for targets, value in _bindings(node):
                for target in targets:
                    for name in walk(target):
                        if isinstance(name, ast.Name):
                            sources.setdefault(name.id, []).append(value)
            filled = _fill(node)
            if filled is not None:
                fills.setdefault(filled[0], []).append(filled[1])
        self._bound = frozenset(sources)
        for kind, test in (("ids", self.identity), ("items", self.item), ("picked", self.selected)):
            named: Set[str] = getattr(self, kind)
            changed = True
            while changed:
                changed = False
                for name, values in sources.items():
                    if name in named:
                        continue
                    real = [v for v in values if not _empty(v, self.facts)]
                    added = fills.get(name, []) if len(real) < len(values) else []
                    if (real or added) and all(test(v) for v in real) and all(test(v) for v in added):
                        named.add(name)
                        changed = True

    def _returns_items(self, name: str, scope: List[ast.stmt]) -> bool:
        """The def ``name`` of ``scope`` (the class's body, the module's) returns or yields only items."""
        key = (id(scope), name)
        if key in self._returns:
            return self._returns[key]
        self._returns[key] = False  # recursion guard
        defined = next((s for s in scope if isinstance(s, _FUNCTIONS) and s.name == name), None)
        result = False
        if defined is not None and defined is not self.function:
            share = _Share(defined, self.facts, self.cls if scope is not self.facts.tree.body else None,
                           self.registries, self.identities, self.module_registries, self.module_identities,
                           self._returns)
            given = [n.value for n in walk_no_nested_functions(defined)
                     if isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom)) and n.value is not None
                     and not _is_none(n.value)]
            result = bool(given) and all(share.item(v) for v in given)
        self._returns[key] = result
        return result


def _share_of(function: FunctionNode, facts: ModuleFacts, self_class: Optional[ClassRef]) -> Optional[_Share]:
    cls = self_class[0] if self_class is not None else facts.enclosing_class(function)
    cls_facts = self_class[1] if self_class is not None else facts
    key = id(cls) if cls is not None else 0
    cached = getattr(function, "_og_own_share", None)
    if cached is not None and cached[0] == key:
        return cached[1]
    registries, identities = _class_share(cls, cls_facts) if cls is not None else ({}, frozenset())
    module_registries, module_identities = _module_share(facts)
    share = None
    if registries or identities or module_registries or module_identities or _reads_process_metrics(facts) \
            or _names_identity_call(function, facts):
        share = _Share(function, facts, cls, registries, identities, module_registries, module_identities)
    function._og_own_share = (key, share)
    return share


def _reads_process_metrics(facts: ModuleFacts) -> bool:
    """The module imports the metrics library whose registry holds this process's own metrics."""
    def build(_facts: ModuleFacts) -> bool:
        return any(isinstance(n, (ast.Import, ast.ImportFrom)) and any(
            (getattr(n, "module", None) or alias.name).split(".")[0] in PROCESS_METRICS_MODULES for alias in n.names)
            for n in facts.tree.body)

    return facts.cached("own-share:metrics", build)


def _names_identity_call(function: FunctionNode, facts: ModuleFacts) -> bool:
    return any(isinstance(n, ast.Call) and (facts.callee(n) or "") in REPLICA_IDENTITY_CALLS
               for n in walk_no_nested_functions(function))


# -- registries and identities of a class and of a module ------------------------------------------------------
def _class_share(cls: ast.ClassDef, facts: ModuleFacts) -> Tuple[Dict[str, "_Registry"], FrozenSet[str]]:
    cached = getattr(cls, "_og_own_share", None)
    if cached is not None:
        return cached
    registries: Dict[str, _Registry] = {}
    identities: Set[str] = set()
    methods = [s for s in cls.body if isinstance(s, _FUNCTIONS)]
    for attr, writes in attribute_writes(cls).items():
        values = [w.value for w in writes if getattr(w, "value", None) is not None]
        if not values:
            continue
        if all(_identity_value(v, facts) for v in values):
            identities.add(attr)
        elif all(_empty(v, facts) for v in values):
            fillers = _public_ways_in(methods, {m.name for m in methods if _fills(m, True, attr)})
            if fillers:
                registries[attr] = _Registry(fillers, facts)
    cls._og_own_share = (registries, frozenset(identities))
    return cls._og_own_share


def _module_share(facts: ModuleFacts) -> Tuple[Dict[str, "_Registry"], FrozenSet[str]]:
    def build(_facts: ModuleFacts) -> Tuple[Dict[str, _Registry], FrozenSet[str]]:
        registries: Dict[str, _Registry] = {}
        identities: Set[str] = set()
        empty: Dict[str, bool] = {}
        for statement in facts.tree.body:
            for targets, value in _bindings(statement):
                for target in targets:
                    if isinstance(target, ast.Name):
                        if _identity_value(value, facts):
                            identities.add(target.id)
                        empty[target.id] = empty.get(target.id, True) and _empty(value, facts)
        functions = [s for s in facts.tree.body if isinstance(s, _FUNCTIONS)]
        for name, is_empty in empty.items():
            if not is_empty:
                continue
            fillers = [f for f in functions if _fills(f, False, name)]  # a private one too: module functions
            if fillers:
                registries[name] = _Registry(fillers, facts)
        return registries, frozenset(identities)

    return facts.cached("own-share:module", build)


def _public_ways_in(methods: List[FunctionNode], filling: Set[str]) -> List[FunctionNode]:
    """The ways into the object that fill the container: its public and special methods that fill it
    themselves or through the private methods they call on ``self`` (``acquire`` -> ``self._get_or_reserve(...)``
    -> ``self._tracked[key] = ...``)."""
    calls = {m.name: {n.func.attr for n in walk_no_nested_functions(m) if isinstance(n, ast.Call)
                      and isinstance(n.func, ast.Attribute) and _is_self(n.func.value)} for m in methods}
    reaching = set(filling)
    changed = True
    while changed:
        changed = False
        for name, called in calls.items():
            if name not in reaching and called & reaching:
                reaching.add(name)
                changed = True
    # A dunder is a way in too: what ``__init__`` or ``__aenter__`` (and the loop they start) puts there is put
    # there in every replica.
    return [m for m in methods if m.name in reaching and (not m.name.startswith("_") or _is_dunder(m.name))]


def _fills(function: FunctionNode, on_self: bool, name: str) -> bool:
    """``function`` puts items into ``self.<name>`` (``on_self``) or into the module's ``name``."""
    return (on_self, name) in _filled_targets(function)


def _filled_targets(function: FunctionNode) -> FrozenSet[Tuple[bool, str]]:
    """(on ``self``, name) of every container ``function`` puts items into: one walk per function, asked for
    each container of its class or module."""
    cached = getattr(function, "_og_filled", None)
    if cached is not None:
        return cached
    found: Set[Tuple[bool, str]] = set()
    for node in walk_no_nested_functions(function):
        filled = _fill(node)
        target = filled[2] if filled is not None else None
        if isinstance(target, ast.Attribute) and _is_self(target.value):
            found.add((True, target.attr))
        elif isinstance(target, ast.Name):
            found.add((False, target.id))
    function._og_filled = frozenset(found)  # type: ignore[union-attr]
    return function._og_filled  # type: ignore[union-attr]


class _Registry:
    """A container made empty and filled through ``fillers``: whether callers fill it, all of them as they
    serve, is asked only when a job's effect is drawn from it (the answer searches the project for calls)."""

    def __init__(self, fillers: List[FunctionNode], facts: ModuleFacts) -> None:
        self.fillers, self.facts = fillers, facts
        self._answer: Optional[bool] = None

    def __call__(self) -> bool:
        if self._answer is None:
            self._answer = all(_served_by(f, self.facts) for f in self.fillers)
        return self._answer


#: More modules than this calling a filler's name: too common a word to tell who fills it.
_CALLER_MODULES = 30


def _served_by(function: FunctionNode, facts: ModuleFacts) -> bool:
    """A filler that callers hand what it adds, as they serve: it takes parameters, and no module level or
    start-up code in the project calls it."""
    arguments = function.args
    parameters = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    if facts.enclosing_class(function) is not None:
        parameters = parameters[1:]
    if function.name.startswith("__") or not (parameters or arguments.vararg or arguments.kwarg):
        return False
    from .reach import Reach  # reach reads the project's summaries: imported where it is asked

    modules = [facts]
    if facts.context.cross_file:
        called = re.compile(rb"\b" + re.escape(function.name.encode()) + rb"\s*\(")
        paths = [p for p in project.files_mentioning(function.name, project.search_root(facts))
                 if called.search(project.read_bytes(p)) is not None]
        if len(paths) > _CALLER_MODULES:
            return False
        for path in paths:
            other = project.module_facts(path, facts.config)
            if other is not None and other is not facts and not other.context.is_test:
                modules.append(other)
    for module in modules:
        for call in module.calls_by_name.get(function.name, ()):
            caller = module.enclosing_function(call)
            if caller is None or Reach.of_module(module).runs_at_startup(caller):
                return False
    return True


# -- small readers ------------------------------------------------------------------------------------------
def _bindings(node: ast.AST) -> List[Tuple[List[ast.AST], ast.AST]]:
    if isinstance(node, ast.Assign):
        return [(node.targets, node.value)]
    if isinstance(node, ast.AnnAssign) and node.value is not None:
        return [([node.target], node.value)]
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return [([node.target], ast.Subscript(value=node.iter, slice=ast.Constant(0)))]
    if isinstance(node, ast.NamedExpr):
        return [([node.target], node.value)]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [([item.optional_vars], item.context_expr) for item in node.items if item.optional_vars is not None]
    if isinstance(node, ast.comprehension):
        return [([node.target], ast.Subscript(value=node.iter, slice=ast.Constant(0)))]
    return []


def _fill(node: ast.AST) -> Optional[Tuple[str, ast.AST, ast.AST]]:
    """(the local name filled, the value added, the container expression) of ``x[k] = v`` or ``x.append(v)``."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript):
        container, added = node.targets[0].value, node.value
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in REGISTRY_FILL_METHODS and node.args:
        container, added = node.func.value, node.args[-1]
    else:
        return None
    name = container.id if isinstance(container, ast.Name) else ""
    return name, added, container


def _empty(value: ast.AST, facts: ModuleFacts) -> bool:
    if isinstance(value, (ast.Dict, ast.List, ast.Set)):
        return not getattr(value, "keys", None) and not getattr(value, "elts", None)
    if isinstance(value, ast.Call):
        made = facts.callee(value) or dotted(value.func) or ""
        # ``defaultdict(list)`` is empty too: its argument makes the missing values.
        return made in EMPTY_FACTORIES and (not value.args or made.endswith("defaultdict"))
    return False


def _identity_value(value: ast.AST, facts: ModuleFacts) -> bool:
    """A value made from this replica's identity: ``uuid4().hex``, ``f"{gethostname()}-{getpid()}"``."""
    return any(isinstance(n, ast.Call) and (facts.callee(n) or "") in REPLICA_IDENTITY_CALLS for n in walk(value))


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
