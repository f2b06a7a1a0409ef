"""What state is process-wide, where it is made, and who writes and reads it (OG606-OG608).

A lock, a cache or a container outlives one request when it is bound at module level, in a class body, or
on an instance that itself lives as long as the process (made at module level, or running its own polling
loop).  Each replica, and each worker process of one replica, then has its own copy: the rules ask this
module which copy an expression names (``binding_of``) and what the functions using it do with it
(``accesses``); how long the instance holding it lives is ``instance_lifetimes``', what a test of it decides
``state_answers``' (both re-exported here).
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

from ..knowledge import process_state as known
from ..analysis.facts import FunctionNode, ModuleFacts, ancestors, walk, walk_no_nested_functions
from ..analysis.names import dotted
from .instance_lifetimes import (Lifetime, _assigns_locally, _call_last_name, _top_level_statements, daemon_lifetime,
                                 long_lived_instance, module_global_receivers)
from .state_answers import (acts_on_answer, answer_dropped, answer_test, answers_membership, decided_work,
                            following_statements, in_loop_over_state, yields_items)

if TYPE_CHECKING:
    from .wrapped_containers import WrappedContainer

MODULE, CLASS, INSTANCE = "module", "class", "instance"
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Binding:
    """Where a process-wide object is made: ``value`` is the expression bound (a constructor call, a literal)."""

    value: ast.AST
    statement: ast.AST
    facts: ModuleFacts
    scope: str  # MODULE, CLASS or INSTANCE
    name: str  # as the code spells it: ``_lock``, ``self._lock``, ``Registry.seen``
    owner: Optional[ast.ClassDef] = None
    attr: str = ""
    #: an instance of a project class that wraps a container of its own (``wrapped_containers``): its methods
    #: say what a call of them does to the state
    wrapped: Optional["WrappedContainer"] = field(default=None, compare=False, hash=False)

    @property
    def line(self) -> int:
        return getattr(self.statement, "lineno", 1)

    @property
    def word(self) -> str:
        """The name every use of the state spells: the attribute, or the module-level name."""
        return self.attr or self.name.rsplit(".", 1)[-1]


def constructed(value: Optional[ast.AST], facts: ModuleFacts) -> Optional[str]:
    """The qualified constructor of what ``value`` builds: ``X()``, ``await X()``, ``X() if c else None``."""
    while isinstance(value, ast.Await):
        value = value.value
    if isinstance(value, ast.IfExp):
        return constructed(value.body, facts) or constructed(value.orelse, facts)
    if isinstance(value, ast.Call):
        from .forwarding import forwarded

        through = forwarded(value, facts)  # made by a small helper that returns it
        if through is not None:
            value, facts = through.call, through.facts
        made = facts.callee(value) or dotted(value.func) or None
        backends = known.BACKEND_FACTORIES.get(made or "")
        if backends and value.args and isinstance(value.args[0], ast.Attribute):
            # ``Cache(Cache.MEMORY)``: the factory builds the backend its argument names
            return backends.get(value.args[0].attr, made)
        return made
    return None


# ------------------------------------------------------------------------------------------------
# Which binding an expression names
# ------------------------------------------------------------------------------------------------
def module_binding(name: str, facts: ModuleFacts) -> Optional[Tuple[ast.AST, ast.stmt]]:
    """The one module-level ``name = value`` (also under ``if``/``try`` at the top level)."""
    found: List[Tuple[ast.AST, ast.stmt]] = []
    for statement in _top_level_statements(facts.tree):
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name) and target.id == name:
                    found.append((statement.value, statement))
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) \
                and statement.target.id == name and statement.value is not None:
            found.append((statement.value, statement))
    return found[0] if len(found) == 1 else None


def class_attribute_binding(cls: ast.ClassDef, attr: str, facts: ModuleFacts) -> Optional[Binding]:
    """``attr = value`` in the class body, else the ``self.attr = value`` of its methods (``__init__`` first)."""
    for statement in cls.body:
        if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == attr for t in statement.targets):
            return Binding(statement.value, statement, facts, CLASS, f"{cls.name}.{attr}", cls, attr)
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) \
                and statement.target.id == attr and statement.value is not None:
            return Binding(statement.value, statement, facts, CLASS, f"{cls.name}.{attr}", cls, attr)
    writes: List[Tuple[int, ast.AST, ast.stmt]] = []
    for method in cls.body:
        if not isinstance(method, _FUNCTIONS):
            continue
        for node in walk_no_nested_functions(method):
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            for target in targets:
                if _is_self_attribute(target, attr):
                    writes.append((0 if method.name == "__init__" else 1, value, node))
    if not writes:
        return None
    writes.sort(key=lambda w: w[0])
    _, value, statement = writes[0]
    return Binding(value, statement, facts, INSTANCE, f"self.{attr}", cls, attr)


def empty_container(value: Optional[ast.AST], facts: ModuleFacts) -> bool:
    """An empty container (``{}``, ``set()``, ``defaultdict(int)``, ``[{} for _ in range(n)]``): state that
    fills up at run time.  A literal with entries is a table the code ships, not memory."""
    while isinstance(value, ast.IfExp):
        value = value.body
    if isinstance(value, ast.ListComp):
        return empty_container(value.elt, facts)
    if isinstance(value, (ast.Dict, ast.Set, ast.List)):
        return not (value.keys if isinstance(value, ast.Dict) else value.elts)
    if isinstance(value, ast.Call):
        from .forwarding import forwarded

        through = forwarded(value, facts)  # a container made by a small helper that returns it
        if through is not None:
            value, facts = through.call, through.facts
        qualified = facts.callee(value) or ""
        if qualified in known.MAPPING_CACHE_FACTORIES:
            return True  # its arguments are sizes and lifetimes: it starts empty
        return qualified in known.CONTAINER_FACTORIES and not (value.args and qualified not in _FACTORY_WITH_DEFAULT)
    return False


#: Factories whose argument is the default of a missing key, not initial content.
_FACTORY_WITH_DEFAULT = frozenset({"collections.defaultdict", "defaultdict"})


def _is_self_attribute(node: ast.AST, attr: Optional[str] = None) -> bool:
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            and (attr is None or node.attr == attr))


def binding_of(expr: ast.AST, facts: ModuleFacts) -> Optional[Binding]:
    """The process-wide binding ``expr`` names: a module-level name (of this module, or imported from another
    module of the project on the command line), ``self.x``/``cls.x``, or ``Class.x`` of a class of this module."""
    if isinstance(expr, ast.Name):
        if _assigns_locally(facts.enclosing_function(expr), expr.id):
            return None
        found = module_binding(expr.id, facts)
        if found is not None:
            return Binding(found[0], found[1], facts, MODULE, expr.id)
        if facts.context.cross_file and facts.imports.is_imported(expr.id):
            from . import index as project

            qualified = facts.qualify(expr) or ""
            if "." in qualified:
                located = project.find_assignment(qualified, facts.config, project.roots_for(facts))
                if located is not None:
                    value, other = located
                    statement = ModuleFacts.statement_of(value)
                    return Binding(value, statement, other, MODULE, qualified)
        return None
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        if expr.value.id in ("self", "cls"):
            cls = facts.enclosing_class(expr)
            return class_attribute_binding(cls, expr.attr, facts) if cls is not None else None
        for statement in facts.tree.body:
            if isinstance(statement, ast.ClassDef) and statement.name == expr.value.id:
                found = class_attribute_binding(statement, expr.attr, facts)
                return found if found is not None and found.scope == CLASS else None
    return None


# ------------------------------------------------------------------------------------------------
# What functions do with a binding
# ------------------------------------------------------------------------------------------------
WRITE_COUNTER, WRITE_CLOCK, WRITE_MARK, WRITE_RECORD, WRITE_OBJECT, WRITE_DERIVED = (
    "counter", "clock", "mark", "record", "object", "derived")


@dataclass
class Access:
    """One use of the state in a function: a write of some kind, a removal, or a read that decides."""

    node: ast.AST
    function: Optional[FunctionNode]
    kind: str  # a WRITE_* kind, "unmark", "decide", "read"


@dataclass
class Accesses:
    items: List[Access] = field(default_factory=list)

    def of_kind(self, *kinds: str) -> List[Access]:
        return [a for a in self.items if a.kind in kinds]

    def functions(self, *kinds: str) -> Set[int]:
        return {id(a.function) for a in self.items if a.kind in kinds and a.function is not None}


class StateMatcher:
    """Which expressions of a function stand for one binding: the binding's own spelling, and local names
    bound from it (``record = self._records[key]``, ``bucket = self._bucket_for(key)`` when that method
    returns part of it)."""

    def __init__(self, binding: Binding, facts: ModuleFacts) -> None:
        self.binding = binding
        self.facts = facts
        self._returns_state: Dict[str, bool] = {}

    def spellings(self, names: Set[str]) -> Set[str]:
        """The words an expression about the state spells: the binding's own name, the local names bound from
        it, and the owner's methods that may hand it out."""
        return {self.binding.word, *names, *methods_reaching(self.binding, self.facts)}

    def is_root(self, node: ast.AST) -> bool:
        binding = self.binding
        if binding.scope == MODULE:
            return isinstance(node, ast.Name) and node.id == binding.name.rsplit(".", 1)[-1] \
                and not _assigns_locally(self.facts.enclosing_function(node), node.id)
        if isinstance(node, ast.Attribute) and node.attr == binding.attr and isinstance(node.value, ast.Name):
            if node.value.id in ("self", "cls"):
                return self.facts.enclosing_class(node) is binding.owner
            return binding.scope == CLASS and binding.owner is not None and node.value.id == binding.owner.name
        return False

    def aliases(self, function: FunctionNode) -> Set[str]:
        cached = getattr(function, "_og_state_aliases", None)
        if cached is not None and cached[0] is self.binding.statement:
            return cached[1]
        names: Set[str] = set()
        changed = True
        while changed:
            changed = False
            words = self.spellings(names)
            for node in _spelling_nodes(function, self.facts, words, aliasing=True):
                if isinstance(node, ast.Assign):
                    targets, value = node.targets, node.value
                elif isinstance(node, (ast.For, ast.AsyncFor)):
                    targets, value = [node.target], node.iter
                elif isinstance(node, ast.NamedExpr):
                    targets, value = [node.target], node.value
                else:
                    continue
                if self.derives(value, names, function):
                    for target in targets:
                        for name in walk(target):
                            if isinstance(name, ast.Name) and name.id not in names:
                                names.add(name.id)
                                changed = True
        function._og_state_aliases = (self.binding.statement, names)
        return names

    def derives(self, value: ast.AST, names: Set[str], function: Optional[FunctionNode]) -> bool:
        """``value`` is the state or a part of it (a subscript, an item read with ``get``/``pop``/
        ``setdefault``, an attribute of an item)."""
        while True:
            if self.is_root(value) or (isinstance(value, ast.Name) and value.id in names):
                return True
            if isinstance(value, (ast.Subscript, ast.Attribute)):
                value = value.value
            elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
                if value.func.attr in ("get", "pop", "setdefault", "values", "items"):
                    value = value.func.value
                elif isinstance(value.func.value, ast.Name) and value.func.value.id == "self" \
                        and self.binding.owner is not None:
                    return self._method_returns_state(value.func.attr)
                else:
                    return False
            else:
                return False

    def _method_returns_state(self, name: str) -> bool:
        if name in self._returns_state:
            return self._returns_state[name]
        if name not in methods_reaching(self.binding, self.facts):
            return False
        self._returns_state[name] = False  # recursion guard
        owner = self.binding.owner
        method = next((s for s in owner.body if isinstance(s, _FUNCTIONS) and s.name == name), None) \
            if owner is not None else None
        result = False
        if method is not None:
            names = self.aliases(method)
            result = any(isinstance(n, ast.Return) and n.value is not None and self.derives(n.value, names, method)
                         for n in state_nodes(method, self.facts))
        self._returns_state[name] = result
        return result

    def touches(self, node: ast.AST, names: Set[str], function: Optional[FunctionNode]) -> bool:
        return any((isinstance(n, (ast.Name, ast.Attribute, ast.Subscript, ast.Call))
                    and self.derives(n, names, function)) for n in walk(node))


def _source_of(function: FunctionNode, facts: ModuleFacts) -> str:
    """The text of a function (its lines), to ask cheaply whether it spells a name at all."""
    cached = getattr(function, "_og_source", None)
    if cached is None:
        lines = facts.lines
        cached = "\n".join(lines[function.lineno - 1:getattr(function, "end_lineno", function.lineno)]) if lines else None
        function._og_source = cached
    return cached


def _spells(function: FunctionNode, facts: ModuleFacts, word: str) -> bool:
    text = _source_of(function, facts)
    if text is None:  # no text kept (a tree handed in without its lines): look at the nodes
        return any((isinstance(n, ast.Name) and n.id == word) or (isinstance(n, ast.Attribute) and n.attr == word)
                   for n in walk_no_nested_functions(function))
    return word in text


def scope_functions(binding: Binding, facts: ModuleFacts) -> List[FunctionNode]:
    """The functions that can use the binding and spell it (or, for instance state, call a method of the
    class that does, however deep): the class's methods for instance state, every function of the module for
    module and class state (``Class.seen`` is spelled anywhere in the module)."""
    if binding.scope in (MODULE, CLASS):
        return [f for f in facts.functions if _spells(f, facts, binding.word)]
    if binding.owner is None:
        return []
    reaching = methods_reaching(binding, facts)
    return [n for n in _functions_of_class(binding.owner, facts) if n.name in reaching]


def _functions_of_class(owner: ast.ClassDef, facts: ModuleFacts) -> List[FunctionNode]:
    """The functions whose nearest enclosing class is ``owner`` (its methods and what they nest), in source
    order: grouped once per module, as every binding of every class asks."""
    def build(_facts: ModuleFacts) -> Dict[int, List[FunctionNode]]:
        table: Dict[int, List[FunctionNode]] = {}
        for function in facts.functions:
            cls = facts.enclosing_class(function)
            if cls is not None:
                table.setdefault(id(cls), []).append(function)
        return table

    return facts.cached("functions-by-class", build).get(id(owner), [])


_SELF_CALL = re.compile(r"self\.(\w+)\(")


def _self_calls(function: FunctionNode, facts: ModuleFacts) -> Set[str]:
    """The names ``function`` calls as ``self.name(``: the methods of its own object it can hand work to."""
    cached = getattr(function, "_og_self_calls", None)
    if cached is None:
        text = _source_of(function, facts)
        if text is not None:
            cached = set(_SELF_CALL.findall(text))
        else:  # (a tree without its lines: read the calls)
            cached = {n.func.attr for n in walk_no_nested_functions(function)
                      if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                      and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"}
        function._og_self_calls = cached
    return cached


def methods_reaching(binding: Binding, facts: ModuleFacts) -> Set[str]:
    """The owner's methods that spell the binding, or call (``self.name(``) one that does, however deep
    (``spend`` -> ``self._counts()`` -> ``self._store()`` -> ``self._used``): only they can use the state or
    hand it out."""
    owner = binding.owner
    if owner is None:
        return set()

    def build(_facts: ModuleFacts) -> Set[str]:
        methods = _functions_of_class(owner, facts)
        found = {m.name for m in methods if _spells(m, facts, binding.word)}
        pending = list(found)
        while pending:
            callee = pending.pop()
            for method in methods:
                if method.name not in found and callee in _self_calls(method, facts):
                    found.add(method.name)
                    pending.append(method.name)
        return found

    return facts.cached(f"state-methods:{id(owner)}:{binding.word}", build)


def accesses(binding: Binding, facts: ModuleFacts, clock_names=None) -> Accesses:
    """Every write (by kind), removal and deciding read of ``binding`` in the functions of its scope
    (``__init__`` and the binding's own statement are its making, not its use)."""
    matcher = StateMatcher(binding, facts)
    found = Accesses()
    for function in scope_functions(binding, facts):
        if function.name == "__init__" and binding.scope == INSTANCE:
            continue
        names = matcher.aliases(function)
        words = matcher.spellings(names)
        relevant = _spelling_nodes(function, facts, words)
        clocks = _clock_names(function, facts) if relevant else set()
        for node in relevant:
            kind = _write_kind(node, matcher, names, function, facts, clocks)
            if kind is not None:
                found.items.append(Access(node, function, kind))
            elif _decides(node, matcher, names, function):
                found.items.append(Access(node, function, "decide"))
            elif isinstance(node, ast.Return) and node.value is not None and matcher.touches(node.value, names, function):
                found.items.append(Access(node, function, "read"))
    return found


#: The nodes the questions about state look at: those that can write, remove or decide on it (see
#: ``_write_kind`` and ``_decides``, method calls included) and those that bind a name to a value (``aliases``).
_STATE_KINDS = (ast.AugAssign, ast.Assign, ast.AnnAssign, ast.Delete, ast.If, ast.While, ast.IfExp, ast.Assert,
                ast.Return, ast.For, ast.AsyncFor, ast.NamedExpr)


def _spelled_text(node: ast.AST, lines: Sequence[str]) -> str:
    if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
        part = node.test
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        part = node.iter  # (what the loop's names are bound from)
    else:
        part = node
    first, last = part.lineno, getattr(part, "end_lineno", None) or part.lineno
    return lines[first - 1] if first == last else "\n".join(lines[first - 1:last])


def state_nodes(function: FunctionNode, facts: ModuleFacts) -> List[ast.AST]:
    """The nodes of ``function`` (not of functions nested in it) of ``_STATE_KINDS`` and its method calls, in
    source order: listed once per function, as every binding of the module asks the same functions again."""
    return _state_index(function, facts).nodes


def _spelling_nodes(function: FunctionNode, facts: ModuleFacts, words: Set[str], aliasing: bool = False
                    ) -> List[ast.AST]:
    """The state nodes of ``function`` (only those that bind a name, with ``aliasing``) whose text spells one
    of ``words``: the text of what a node tests or does (a condition's test, not the body it guards).  A node
    that spells none cannot write, remove or decide on the state and is not looked at further; each node's
    text is cut once per function, as every binding of a module asks the same functions again."""
    index = _state_index(function, facts)
    nodes, texts = (index.binding_nodes, index.binding_texts) if aliasing else (index.nodes, index.texts)
    if texts is None:
        return list(nodes)
    source = _source_of(function, facts) or ""
    present = [word for word in words if word in source]  # (a node's text is part of its function's)
    if not present:
        return []
    return [node for node, text in zip(nodes, texts) if any(word in text for word in present)]


class _StateIndex(NamedTuple):
    """A function's state nodes and the text each spells, and the same for those that bind a name; the texts
    are None when the module's lines are not kept."""

    nodes: List[ast.AST]
    texts: Optional[List[str]]
    binding_nodes: List[ast.AST]
    binding_texts: Optional[List[str]]


def _state_index(function: FunctionNode, facts: ModuleFacts) -> _StateIndex:
    def build(_facts: ModuleFacts) -> _StateIndex:
        nodes = [node for node in facts.own_nodes(function, _STATE_NODE_KINDS)
                 if type(node) is not ast.Call or type(node.func) is ast.Attribute]
        lines = facts.lines
        texts = [_spelled_text(node, lines) for node in nodes] if lines else None
        binding = [k for k, node in enumerate(nodes) if type(node) in _ALIAS_KINDS]
        return _StateIndex(nodes, texts, [nodes[k] for k in binding],
                           [texts[k] for k in binding] if texts is not None else None)

    return facts.cached(f"state_nodes:{id(function)}", build)


_STATE_NODE_KINDS = _STATE_KINDS + (ast.Call,)
#: The state nodes that bind names to a value (what ``aliases`` follows).
_ALIAS_KINDS = frozenset({ast.Assign, ast.For, ast.AsyncFor, ast.NamedExpr})


def _clock_names(function: FunctionNode, facts: ModuleFacts) -> Set[str]:
    cached = getattr(function, "_og_clock_names", None)
    if cached is not None:
        return cached
    names: Set[str] = set()
    function._og_clock_names = names
    for node in state_nodes(function, facts):
        if isinstance(node, ast.Assign) and _is_clock(node.value, facts, names):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names.add(target.id)
    return names


def _is_clock(value: ast.AST, facts: ModuleFacts, names: Set[str]) -> bool:
    if isinstance(value, ast.Name):
        return value.id in names
    if isinstance(value, ast.BinOp):
        return _is_clock(value.left, facts, names) or _is_clock(value.right, facts, names)
    if isinstance(value, ast.Call):
        from .forwarding import callee_through

        qualified = callee_through(value, facts)  # (also a clock read behind a small helper)
        last = ".".join(qualified.split(".")[-2:])
        return qualified in known.CLOCK_CALLS or last in known.CLOCK_CALLS
    return False


def field_of(target: ast.AST) -> str:
    """What a write changes, as a reader of it would name it: ``failures`` of ``record.failures += 1``, ``[]``
    for an item of the container itself (``counts[key] += 1``)."""
    if isinstance(target, ast.Attribute):
        return target.attr
    return "[]"


def decrements(node: ast.AST, function: Optional[FunctionNode] = None) -> bool:
    """``x -= 1``, ``x = x - 1``, ``x = max(0, x - 1)``: the counter also goes down; with ``function``, also
    through a local the function computed first (``left = counts.get(k, 0) - 1`` … ``counts[k] = left``)."""
    if isinstance(node, ast.AugAssign):
        return isinstance(node.op, ast.Sub)
    value = getattr(node, "value", None)
    if value is None:
        return False
    if any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub) for n in walk(value)):
        return True
    if function is None or not isinstance(value, ast.Name):
        return False
    return any(isinstance(bound, ast.Assign) and any(isinstance(t, ast.Name) and t.id == value.id for t in bound.targets)
               and decrements(bound) for bound in walk_no_nested_functions(function))


def _write_kind(node: ast.AST, matcher: StateMatcher, names: Set[str], function: FunctionNode,
                facts: ModuleFacts, clocks: Set[str]) -> Optional[str]:
    if isinstance(node, ast.AugAssign) and matcher.derives(node.target, names, function) and (
            not isinstance(node.target, ast.Name) or matcher.is_root(node.target)):
        return WRITE_COUNTER  # (``text += suffix`` on a local copy read from the state changes a local only)
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, (ast.Subscript, ast.Attribute)) and matcher.derives(target, names, function) \
                    and not (isinstance(target, ast.Attribute) and matcher.is_root(target)):
                return _value_kind(node.value, matcher, names, function, facts, clocks)
            if isinstance(target, (ast.Name, ast.Attribute)) and matcher.is_root(target):
                if isinstance(node.value, ast.BinOp) and matcher.touches(node.value, names, function):
                    return WRITE_COUNTER  # ``count = count + 1`` on a global
                if _is_clock(node.value, facts, clocks):
                    return WRITE_CLOCK
                return "rebind"
    if isinstance(node, ast.Delete) and any(matcher.derives(t, names, function) for t in node.targets):
        return "unmark"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and matcher.derives(node.func.value, names, function):
        method = node.func.attr
        if matcher.binding.wrapped is not None:
            return matcher.binding.wrapped.calls.get(method)  # (the class's own method says what it does)
        if method in known.UNMARK_METHODS or method == "clear":
            return "unmark"
        if method in known.MARK_METHODS and node.args:
            return _value_kind(node.args[0], matcher, names, function, facts, clocks, marking=True)
        if method == "setdefault" and len(node.args) >= 2 and _value_kind(
                node.args[1], matcher, names, function, facts, clocks) == WRITE_OBJECT:
            return WRITE_OBJECT  # (``_locks.setdefault(key, asyncio.Lock())``: an object of this process)
        if method in ("update", "setdefault", "extend", "insert", "__setitem__"):
            return WRITE_RECORD
        if method in known.KEYED_SET_METHODS and len(node.args) >= 2:
            return _value_kind(node.args[1], matcher, names, function, facts, clocks)
    return None


def _value_kind(value: ast.AST, matcher: StateMatcher, names: Set[str], function: FunctionNode,
                facts: ModuleFacts, clocks: Set[str], marking: bool = False) -> str:
    """What a value written into the state is: a clock reading, an arithmetic update of the state, an object
    of this process, the result of a computation (derivable again), or a record the code builds."""
    while isinstance(value, ast.Await):
        value = value.value
    if isinstance(value, ast.Call):
        from .forwarding import forwarded

        through = forwarded(value, facts)  # a value a small helper builds: what it returns
        if through is not None and not matcher.touches(value, names, function):
            value, facts = through.call, through.facts
    if _is_clock(value, facts, clocks):
        return WRITE_CLOCK
    if any(isinstance(n, ast.BinOp) for n in walk(value)) and matcher.touches(value, names, function):
        return WRITE_COUNTER
    if _is_process_object(value, function, facts):
        return WRITE_OBJECT
    if marking:
        return WRITE_MARK
    if isinstance(value, ast.Constant) and (value.value is True or value.value is None):
        return WRITE_MARK  # (an entry holding nothing, ``_ids[key] = None``: a dict kept as an ordered set)
    if isinstance(value, ast.Call):
        name = _call_last_name(value)
        if name[:1].isupper():
            return WRITE_RECORD  # a record built here: a status, a result object
        return WRITE_DERIVED
    return WRITE_RECORD


def _is_process_object(value: ast.AST, function: FunctionNode, facts: ModuleFacts) -> bool:
    """An object that only means something in this process: an event, a queue, a task, a socket handed to the
    handler (a parameter annotated as a WebSocket) or a local bound to one of those."""
    if isinstance(value, ast.Call):
        qualified = facts.callee(value) or ""
        return qualified in known.PROCESS_OBJECT_CONSTRUCTORS or _call_last_name(value) in ("Queue", "Event", "create_task")
    if isinstance(value, ast.Name):
        arguments = function.args
        for argument in arguments.posonlyargs + arguments.args + arguments.kwonlyargs:
            if argument.arg == value.id:
                annotation = dotted(argument.annotation) if argument.annotation is not None else ""
                return bool(annotation) and ("socket" in annotation.lower() or "Queue" in annotation)
        for node in state_nodes(function, facts):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == value.id for t in node.targets):
                return _is_process_object(node.value, function, facts)
    return False


def _decides(node: ast.AST, matcher: StateMatcher, names: Set[str], function: FunctionNode) -> bool:
    """An ``if``/``while``/conditional expression or assertion whose test reads the state, and whose outcome
    changes what happens: it returns, raises, skips, or calls something."""
    if isinstance(node, (ast.If, ast.While)):
        if not matcher.touches(node.test, names, function):
            return False
        if any(isinstance(s, (ast.Return, ast.Raise, ast.Continue, ast.Break)) for s in node.body):
            return True
        # What the test guards is only a report (a log line, a warning) and the state's own mark: each
        # replica reporting once is what such a marker is for, not work the other replicas would repeat.
        return any(isinstance(n, (ast.Return, ast.Raise, ast.Continue, ast.Break, ast.Call))
                   for statement in node.body if not _reports_or_marks(statement, matcher, names, function)
                   for n in walk_no_nested_functions(statement))
    if isinstance(node, (ast.IfExp, ast.Assert)):
        return matcher.touches(node.test, names, function)
    return False


def _reports_or_marks(statement: ast.stmt, matcher: StateMatcher, names: Set[str], function: FunctionNode) -> bool:
    """``log.warning(...)``, ``warnings.warn(...)``, ``print(...)``, or ``_warned.add(key)`` on the state itself."""
    from .claim_syntax import is_log_call
    from .forwarding import forwarded

    if not isinstance(statement, ast.Expr) or not isinstance(statement.value, ast.Call):
        return False
    call, facts = statement.value, matcher.facts
    through = forwarded(call, facts)  # (also behind a small helper that returns the call)
    if through is not None:
        call, facts = through.call, through.facts
    if is_log_call(call) or (facts.callee(call) or "") in known.WARNING_CALLS:
        return True
    func = call.func
    return isinstance(func, ast.Attribute) and func.attr in known.MARK_METHODS \
        and matcher.derives(func.value, names, function)


def read_through(function: FunctionNode, binding: Binding, facts: ModuleFacts) -> bool:
    """``function`` fills the state itself on a miss (it tests the state, then writes a computed value into it):
    a memo of derivable data, not shared memory."""
    matcher = StateMatcher(binding, facts)
    names = matcher.aliases(function)
    clocks = _clock_names(function, facts)
    tests = False
    for node in state_nodes(function, facts):
        if isinstance(node, (ast.If, ast.IfExp)) and matcher.touches(node.test, names, function):
            tests = True
        kind = _write_kind(node, matcher, names, function, facts, clocks)
        if tests and kind in (WRITE_DERIVED, WRITE_OBJECT):
            return True
        if tests and kind in (WRITE_CLOCK, WRITE_RECORD) and _entry_with_expiry(node, facts, clocks):
            return True  # ``cache[key] = (value, time.monotonic() + TTL)``: a computed value kept until it expires
    return False


def _entry_with_expiry(node: ast.AST, facts: ModuleFacts, clocks: Set[str]) -> bool:
    """An assignment of a pair: a value that is no clock reading, and the time it expires at."""
    value = getattr(node, "value", None) if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
    if not isinstance(value, ast.Tuple) or len(value.elts) < 2:
        return False
    timed = [_is_clock(element, facts, clocks) for element in value.elts]
    return any(timed) and not all(timed)


__all__ = ["Binding", "Lifetime", "Access", "Accesses", "StateMatcher", "binding_of", "constructed",
           "long_lived_instance", "daemon_lifetime", "module_global_receivers", "accesses", "read_through", "ancestors",
           "decided_work", "yields_items", "following_statements", "answer_test", "answer_dropped", "acts_on_answer",
           "answers_membership", "in_loop_over_state"]
