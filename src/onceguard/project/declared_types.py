"""What the code declares a value to be: the class an expression holds, read from annotations as a type
checker reads them, without inferring anything that is not written.

A receiver's class decides which ``def`` a method call runs.  Besides a constructor call, the code says it
in annotations: a parameter's, a name's or an attribute's where it is bound (``rule: Mapped[Policy]`` in a
mapped class, ``self._handlers: Mapping[type[Event], list[Handler]]``), a function's return.  A value taken
out of a declared container has the container's element type: a ``for`` over ``list[Job]``, ``m.get(k)`` or
``m[k]`` of ``Mapping[K, V]``, ``items[0]`` of ``Sequence[T]``; calling a ``Callable[[...], R]`` gives an
``R``.  Wrappers are looked through (``Optional``, ``Annotated``, ``Mapped``, ``ClassVar``, ``Final``), a
union is each of its members, a generic class (``Handler[Event]``) is the class.

A declared type is the annotation with the module it is written in (``Declared``): its names are qualified
there.  A class the project defines is returned as its ``class`` statement; a class from a library as its
qualified name, which says at least that no method of the project runs.
"""
from __future__ import annotations

import ast
import threading
from typing import Dict, Iterable, List, NamedTuple, Optional, Tuple

from . import index as project
from ..analysis.facts import FunctionNode, ModuleFacts, walk, walk_no_nested_functions
from ..knowledge import declared_types as known

_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
#: Steps followed from an expression to a declaration (a name to its binding, an attribute to its class...).
_MAX_STEPS = 8
#: Base classes followed to find an attribute's declaration.
_MAX_BASES = 3

#: Calls resolved for their return annotation while resolving another call: resolving a call asks for its
#: receiver's type, which may be another call's return (``a = b.m(); b = a.n()`` would not end).
_MAX_RESOLVING = 2
_resolving = threading.local()

ClassRef = Tuple[ast.ClassDef, ModuleFacts]


class Declared(NamedTuple):
    annotation: ast.AST  # a type expression (``list[Job]``, ``Job``) or a constructor's callee
    facts: ModuleFacts  # the module it is written in


# ------------------------------------------------------------------------------------------------
# Annotations
# ------------------------------------------------------------------------------------------------
def annotation_class(annotation: Optional[ast.AST]) -> Optional[ast.AST]:
    """``Pool`` in ``Pool``, ``"Pool"``, ``Optional[Pool]``, ``Pool | None``."""
    if annotation is None:
        return None
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        text = annotation.value.split("|")[0].strip()
        try:
            annotation = ast.parse(text, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        left = annotation.left
        if isinstance(left, ast.Constant) and left.value is None:
            return annotation_class(annotation.right)
        return annotation_class(left)
    if isinstance(annotation, ast.Subscript):
        if _head(annotation) == "Optional":
            return annotation_class(annotation.slice)
        return None
    if isinstance(annotation, (ast.Name, ast.Attribute)):
        return annotation
    return None


def parameter_annotation(function: Optional[FunctionNode], name: str) -> Optional[ast.AST]:
    if function is None:
        return None
    arguments = function.args
    for argument in arguments.posonlyargs + arguments.args + arguments.kwonlyargs:
        if argument.arg == name:
            return argument.annotation
    return None


def class_of(expr: ast.AST, facts: ModuleFacts) -> Optional[ClassRef]:
    """The project class named by ``expr`` (a name of this module or an import)."""
    if isinstance(expr, ast.Name):
        for statement in facts.tree.body:
            if isinstance(statement, ast.ClassDef) and statement.name == expr.id:
                return statement, facts
    if not facts.context.cross_file:
        return None
    qualified = facts.qualify(expr) or ""
    if "." not in qualified:
        return None
    return project.find_class(qualified, facts.config, project.roots_for(facts))


def attribute_writes(cls: ast.ClassDef) -> Dict[str, List[ast.AST]]:
    """attribute name -> the statements of the class that bind it (``self.x = ...``, ``x: T``), once per class."""
    cached = getattr(cls, "_og_attribute_writes", None)
    if cached is not None:
        return cached
    table: Dict[str, List[ast.AST]] = {}
    for node in walk(cls):
        if isinstance(node, ast.AnnAssign):
            target = node.target
            name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
            if name:
                table.setdefault(name, []).append(node)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute):
                    table.setdefault(target.attr, []).append(node)
    cls._og_attribute_writes = table
    return table


def _head(annotation: ast.Subscript) -> str:
    head = annotation.value
    return head.attr if isinstance(head, ast.Attribute) else getattr(head, "id", "")


def _parameters(annotation: ast.Subscript) -> List[ast.AST]:
    inner = annotation.slice
    return list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]


def _parsed(annotation: ast.AST) -> Optional[ast.AST]:
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            return ast.parse(annotation.value.strip(), mode="eval").body
        except SyntaxError:
            return None
    return annotation


def members(annotation: ast.AST) -> List[ast.AST]:
    """The types a value of ``annotation`` may be: wrappers looked through, unions split, ``None`` left out."""
    annotation = _parsed(annotation)
    if annotation is None or (isinstance(annotation, ast.Constant) and annotation.value is None):
        return []
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return members(annotation.left) + members(annotation.right)
    if isinstance(annotation, ast.Subscript):
        head = _head(annotation)
        parameters = _parameters(annotation)
        if head in known.WRAPPERS:
            return members(parameters[0])
        if head in known.UNIONS:
            return [member for parameter in parameters for member in members(parameter)]
    return [annotation]


def _container(declared: Declared, heads) -> Optional[Tuple[str, List[ast.AST]]]:
    for member in members(declared.annotation):
        if isinstance(member, ast.Subscript) and _head(member) in heads:
            return _head(member), _parameters(member)
    return None


def element(declared: Optional[Declared]) -> Optional[Declared]:
    """What iterating a value of this type yields."""
    if declared is None:
        return None
    found = _container(declared, known.ITERABLES | known.MAPPINGS | known.TUPLES)
    if found is None:
        return None
    head, parameters = found
    if head in known.TUPLES and not (len(parameters) == 2 and isinstance(parameters[1], ast.Constant)
                                     and parameters[1].value is Ellipsis):
        return None
    return Declared(parameters[0], declared.facts)


def item(declared: Optional[Declared]) -> Optional[Declared]:
    """What ``value[key]`` (a mapping's value, a sequence's element) gives."""
    if declared is None:
        return None
    found = _container(declared, known.MAPPINGS | known.SEQUENCES)
    if found is None:
        return None
    head, parameters = found
    if head in known.MAPPINGS:
        return Declared(parameters[1], declared.facts) if len(parameters) == 2 else None
    return Declared(parameters[0], declared.facts)


def _returned(declared: Optional[Declared]) -> Optional[Declared]:
    """What calling a ``Callable[[...], R]`` gives."""
    if declared is None:
        return None
    found = _container(declared, known.CALLABLES)
    if found is None or len(found[1]) != 2:
        return None
    return Declared(found[1][1], declared.facts)


def instance_of(declared: Optional[Declared]) -> Optional[Declared]:
    """What calling a value of type ``type[X]`` (``Type[X]``) makes: an ``X``, or an instance of a subclass."""
    if declared is None:
        return None
    found = _container(declared, ("type", "Type"))
    return Declared(found[1][0], declared.facts) if found is not None and len(found[1]) == 1 else None


def _pairs(mapping: Declared) -> Optional[Declared]:
    """What ``.items()`` of a mapping of this type gives: ``list[tuple[K, V]]``."""
    found = _container(mapping, known.MAPPINGS)
    if found is None or len(found[1]) != 2:
        return None
    pair = ast.Subscript(value=ast.Name(id="tuple", ctx=ast.Load()), slice=ast.Tuple(elts=list(found[1]),
                                                                                      ctx=ast.Load()), ctx=ast.Load())
    return Declared(ast.Subscript(value=ast.Name(id="list", ctx=ast.Load()), slice=pair, ctx=ast.Load()),
                    mapping.facts)


def _unpacked(declared: Optional[Declared], position: int, count: int) -> Optional[Declared]:
    """The type of the ``position``-th of ``count`` names a value of this type is unpacked into
    (``for name, job_cls in registry.items()``): a ``tuple[A, B]``'s member at that place."""
    found = _container(declared, known.TUPLES) if declared is not None else None
    if found is None or len(found[1]) != count:
        return None
    return Declared(found[1][position], declared.facts)


def classes(declared: Optional[Declared]) -> List[ClassRef]:
    """The project classes a value of this type may be an instance of."""
    if declared is None:
        return []
    found: List[ClassRef] = []
    for member in members(declared.annotation):
        if isinstance(member, ast.Subscript):
            if _head(member) in known.CALLABLES or _head(member) == "type":
                continue
            member = member.value  # ``Handler[Event]``: the generic class itself
        if isinstance(member, (ast.Name, ast.Attribute)):
            ref = class_of(member, declared.facts)
            if ref is not None and not any(ref[0] is other[0] for other in found):
                found.append(ref)
    return found


def library_class(declared: Optional[Declared]) -> Optional[str]:
    """The qualified name of the one class outside the project a value of this type is (``prometheus_client.
    Gauge``), or None."""
    if declared is None:
        return None
    kinds = members(declared.annotation)
    if len(kinds) != 1 or not isinstance(kinds[0], (ast.Name, ast.Attribute)) or classes(declared):
        return None
    qualified = declared.facts.qualify(kinds[0]) or ""
    if "." not in qualified or qualified.startswith(known.TYPING_MODULES):
        return None  # a special form (``Any``, ``Self``), not a class of values
    return qualified


def base_classes(cls: ast.ClassDef, facts: ModuleFacts) -> List[ClassRef]:
    """The project classes ``cls`` names as bases (``Base``, ``Batched[Event]``)."""
    found = []
    for base in cls.bases:
        if isinstance(base, ast.Subscript):
            base = base.value
        ref = class_of(base, facts)
        if ref is not None:
            found.append(ref)
    return found


# ------------------------------------------------------------------------------------------------
# Expressions
# ------------------------------------------------------------------------------------------------
def type_of(expr: ast.AST, facts: ModuleFacts, function: Optional[FunctionNode], steps: int = 0,
            self_class: Optional[ClassRef] = None) -> Optional[Declared]:
    """What the code declares ``expr`` (in ``function`` of ``facts``) to hold, or None.  ``self_class`` is
    the class ``self`` is an instance of when ``function`` is a method inherited from a base of it."""
    if steps > _MAX_STEPS:
        return None
    # Remembered per module for everything the answer depends on: a call's receiver is asked for its own type
    # and again as the owner of the attribute called, so a chain of calls (``a.b().c().d()``) would be asked
    # twice as often at each link.
    memo = facts.cached("declared-types:type-of", _new_memo)
    key = (id(expr), id(function), id(self_class[0]) if self_class is not None else 0, steps,
           getattr(_resolving, "depth", 0))
    held = memo.get(key)
    if held is None:
        # (the objects keyed by their id are kept with the answer: no other object can take their id meanwhile)
        held = memo[key] = (_type_of(expr, facts, function, steps, self_class), (expr, function, self_class))
    return held[0]


def _new_memo(_facts: ModuleFacts) -> Dict[tuple, tuple]:
    return {}


def _type_of(expr: ast.AST, facts: ModuleFacts, function: Optional[FunctionNode], steps: int,
             self_class: Optional[ClassRef]) -> Optional[Declared]:
    if isinstance(expr, ast.Await):
        return type_of(expr.value, facts, function, steps + 1, self_class)
    if isinstance(expr, ast.Name):
        return _name_type(expr.id, facts, function, steps, self_class)
    if isinstance(expr, ast.Attribute):
        # (a class's name is capitalised by convention: other receivers are not looked up as classes, for cost)
        named = class_of(expr.value, facts) if isinstance(expr.value, ast.Name) and expr.value.id[:1].isupper() \
            else None
        if named is not None:
            # ``BaseJob.registry``: what the class body declares its own attribute to hold
            return attribute_type(named[0], named[1], expr.attr, steps + 1)
        for cls, cls_facts in owner_classes(expr.value, facts, function, steps + 1, self_class):
            declared = attribute_type(cls, cls_facts, expr.attr, steps + 1)
            if declared is not None:
                return declared
        return None
    if isinstance(expr, ast.Subscript):
        return item(type_of(expr.value, facts, function, steps + 1, self_class))
    if isinstance(expr, ast.Call):
        return _call_type(expr, facts, function, steps, self_class)
    if isinstance(expr, (ast.BoolOp, ast.IfExp)):
        # ``members or MemberRepository()``, ``x if x is not None else X()``: what either side declares
        sides = expr.values if isinstance(expr, ast.BoolOp) else [expr.body, expr.orelse]
        for side in sides:
            declared = type_of(side, facts, function, steps + 1, self_class)
            if declared is not None:
                return declared
    return None


def owner_classes(expr: ast.AST, facts: ModuleFacts, function: Optional[FunctionNode],
                  steps: int = 0, self_class: Optional[ClassRef] = None) -> List[ClassRef]:
    """The project classes ``expr`` may be an instance of: ``self``'s class, or its declared type's."""
    if isinstance(expr, ast.Name) and expr.id in ("self", "cls") and function is not None:
        if self_class is not None:
            return [self_class]
        cls = facts.enclosing_class(function)
        return [(cls, facts)] if cls is not None else []
    return classes(type_of(expr, facts, function, steps, self_class))


def attribute_type(cls: ast.ClassDef, facts: ModuleFacts, attr: str, steps: int = 0,
                   bases: int = 0, self_class: Optional[ClassRef] = None) -> Optional[Declared]:
    """What ``cls`` (or a base of it) declares its attribute ``attr`` to hold.  In a base's methods ``self``
    is still an instance of ``self_class`` (by default ``cls``): ``self.batch = self.make_batch()`` in a
    base calls the subclass's ``make_batch``."""
    if steps > _MAX_STEPS:
        return None
    instance = self_class or (cls, facts)
    # ``factory = cast(Callable[[], Queue], Queue)`` in the class body, then ``self.x: T`` / ``self.x = ...``
    in_body = [s for s in cls.body if isinstance(s, ast.Assign)
               and any(isinstance(t, ast.Name) and t.id == attr for t in s.targets)]
    for node in in_body + attribute_writes(cls).get(attr, []):
        if isinstance(node, ast.AnnAssign) and not _says_nothing(node.annotation):
            return Declared(node.annotation, facts)
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            node = ast.Assign(targets=[node.target], value=node.value)  # ``x: Final = Queue()``: the value's
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Call, ast.Name, ast.Await, ast.BoolOp,
                                                                     ast.IfExp)):
            declared = type_of(node.value, facts, facts.enclosing_function(node), steps + 1, instance)
            if declared is not None:
                return declared
    for statement in cls.body:
        # ``@property def lag_histogram(self) -> Histogram:``: what reading the attribute gives
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == attr \
                and statement.returns is not None and not _says_nothing(statement.returns) and any(
                    (isinstance(d, ast.Name) and d.id in _PROPERTIES) or (isinstance(d, ast.Attribute)
                                                                         and d.attr in _PROPERTIES)
                    for d in statement.decorator_list):
            return Declared(statement.returns, facts)
    if bases < _MAX_BASES:
        for base, base_facts in base_classes(cls, facts):
            declared = attribute_type(base, base_facts, attr, steps + 1, bases + 1, instance)
            if declared is not None:
                return declared
    return None


#: Decorators that make a method read as an attribute.
_PROPERTIES = frozenset({"property", "cached_property"})


def _name_type(name: str, facts: ModuleFacts, function: Optional[FunctionNode], steps: int,
               self_class: Optional[ClassRef]) -> Optional[Declared]:
    annotation = parameter_annotation(function, name)
    if annotation is not None:
        return Declared(annotation, facts)
    scope = function
    while scope is not None:
        binding = _bindings(scope).get(name)
        if binding is not None:
            return _binding_type(binding, facts, scope, steps, self_class, name)
        scope = facts.enclosing_function(scope)
    binding = _bindings(facts.tree).get(name)
    if binding is not None:
        return _binding_type(binding, facts, None, steps, None)
    if facts.context.cross_file and facts.imports.is_imported(name):
        # ``from .metrics import SWEEPS``: what the other module binds the name to.
        qualified = facts.qualify(ast.Name(id=name, ctx=ast.Load())) or ""
        found = project.find_assignment(qualified, facts.config, project.roots_for(facts)) if "." in qualified else None
        if found is not None:
            value, value_facts = found
            return type_of(value, value_facts, None, steps + 1)
    return None


def _bindings(scope: ast.AST) -> Dict[str, ast.AST]:
    """name -> the first statement or clause that binds it in ``scope`` (an assignment, an annotation, a
    ``for`` or comprehension target, a walrus), read once per scope."""
    cached = getattr(scope, "_og_typed_bindings", None)
    if cached is not None:
        return cached
    table: Dict[str, ast.AST] = {}
    nodes = scope.body if isinstance(scope, ast.Module) else walk_no_nested_functions(scope)
    for node in nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    table.setdefault(target.id, node)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            table.setdefault(node.target.id, node)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and isinstance(node.target, ast.Name):
            table.setdefault(node.target.id, node)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and isinstance(node.target, ast.Tuple):
            for name in node.target.elts:
                if isinstance(name, ast.Name):
                    table.setdefault(name.id, node)
        elif isinstance(node, ast.NamedExpr):
            table.setdefault(node.target.id, node)
    scope._og_typed_bindings = table
    return table


def _says_nothing(annotation: ast.AST) -> bool:
    """A bare ``Final`` or ``ClassVar``: the type is the value's."""
    name = annotation.attr if isinstance(annotation, ast.Attribute) else getattr(annotation, "id", "")
    return name in known.WRAPPERS


def _binding_type(binding: ast.AST, facts: ModuleFacts, scope: Optional[FunctionNode], steps: int,
                  self_class: Optional[ClassRef], name: str = "") -> Optional[Declared]:
    if isinstance(binding, ast.AnnAssign):
        if _says_nothing(binding.annotation):
            return type_of(binding.value, facts, scope, steps + 1, self_class) if binding.value is not None else None
        return Declared(binding.annotation, facts)
    if isinstance(binding, (ast.For, ast.AsyncFor, ast.comprehension)):
        yielded = element(type_of(binding.iter, facts, scope, steps + 1, self_class))
        if isinstance(binding.target, ast.Tuple):
            places = [i for i, e in enumerate(binding.target.elts) if isinstance(e, ast.Name) and e.id == name]
            return _unpacked(yielded, places[0], len(binding.target.elts)) if places else None
        return yielded
    if isinstance(binding, (ast.Assign, ast.NamedExpr)):
        return type_of(binding.value, facts, scope, steps + 1, self_class)
    return None


def _call_type(call: ast.Call, facts: ModuleFacts, function: Optional[FunctionNode], steps: int,
               self_class: Optional[ClassRef]) -> Optional[Declared]:
    func = call.func
    returns = getattr(call, "_og_returns", None)  # a forwarding helper's call, looked through in its module
    if returns is not None:
        return Declared(returns, facts)
    if (facts.callee(call) or "") in ("typing.cast", "cast") and call.args:
        return Declared(call.args[0], facts)
    if isinstance(func, ast.Attribute):
        receiver = type_of(func.value, facts, function, steps + 1, self_class)
        if receiver is not None and _container(receiver, known.MAPPINGS | known.SEQUENCES):
            if func.attr in known.MAPPING_VALUE_METHODS:
                return item(receiver)
            if func.attr == "values":
                value = item(receiver)
                return Declared(ast.Subscript(value=ast.Name(id="list", ctx=ast.Load()), slice=value.annotation,
                                              ctx=ast.Load()), value.facts) if value is not None else None
            if func.attr == "items":
                return _pairs(receiver)
            return None
        called = _returned(type_of(func, facts, function, steps + 1, self_class))
        if called is not None:
            return called
        handed = _container_provides(func, facts, function, steps, self_class)
        if handed is not None:
            return handed
    elif isinstance(func, ast.Name):
        called = _returned(type_of(func, facts, function, steps + 1)) if parameter_annotation(function, func.id) else None
        if called is not None:
            return called
    if isinstance(func, (ast.Name, ast.Attribute)):
        if class_of(func, facts) is not None:
            return Declared(func, facts)  # a constructor
        # ``job_cls(ctx)`` with ``job_cls`` declared ``type[BaseJob]`` (a loop over a registry of classes): asked
        # only of a lower-case name or an attribute of ``self`` (a class is called by its capitalised name,
        # resolved above), for cost
        if (isinstance(func, ast.Name) and func.id[:1].islower()) or (
                isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls")):
            made = instance_of(type_of(func, facts, function, steps + 1, self_class))
            if made is not None:
                return made
        qualified = facts.qualify(func) or ""
        last = func.attr if isinstance(func, ast.Attribute) else func.id
        head = func
        while isinstance(head, ast.Attribute):
            head = head.value
        if "." in qualified and last[:1].isupper() and isinstance(head, ast.Name) and facts.imports.is_imported(head.id):
            return Declared(func, facts)  # ``Gauge(...)``, ``asyncio.Lock()``: an instance of a library's class
    if getattr(_resolving, "depth", 0) >= _MAX_RESOLVING:
        return None
    from .summaries import resolve  # a function's return annotation; summaries resolve calls with this module
    _resolving.depth = getattr(_resolving, "depth", 0) + 1
    try:
        targets = resolve(call, facts, function, by_name=False, self_class=self_class)
    finally:
        _resolving.depth -= 1
    for target, target_facts in targets[:1]:
        if target.returns is not None:
            return Declared(target.returns, target_facts)
        return _made_by_returns(target, target_facts)
    return None


def _container_provides(func: ast.Attribute, facts: ModuleFacts, function: Optional[FunctionNode], steps: int,
                        self_class: Optional[ClassRef]) -> Optional[Declared]:
    """``container.exporter()`` on a dependency-injection container of the project: what the provider its class
    binds to ``exporter`` makes (asked only of a name the container's class binds in its body)."""
    from .injected_providers import provided, provider_names
    from .summaries import instance_class

    if func.attr not in provider_names(facts):
        return None
    owners = owner_classes(func.value, facts, function, steps + 1, self_class)
    if not owners and steps <= 1:
        owner = instance_class(func.value, facts, function)  # (what start-up code keeps on the app, too)
        owners = [owner] if owner is not None else []
    return provided(owners, func.attr) if owners else None


def _made_by_returns(function: FunctionNode, facts: ModuleFacts) -> Optional[Declared]:
    """A factory without an annotation whose every ``return`` builds the same project class (``def
    build_poller(): return MailboxPoller(...)``): what calling it gives."""
    made = [node.value for node in walk_no_nested_functions(function)
            if isinstance(node, ast.Return) and node.value is not None]
    if not made or not all(isinstance(value, ast.Call) and isinstance(value.func, (ast.Name, ast.Attribute))
                           for value in made):
        return None
    found = [class_of(value.func, facts) for value in made]
    if found[0] is None or any(ref is None or ref[0] is not found[0][0] for ref in found):
        return None
    return Declared(made[0].func, facts)


def one_class(made: Iterable[Optional[ClassRef]]) -> Optional[ClassRef]:
    """The class every value is an instance of: None when one is something else, or two classes differ (a
    module's tree may be parsed again between two values: the same class is the same place)."""
    found: Optional[ClassRef] = None
    for cls in made:
        if cls is None or found is not None and _place(cls) != _place(found):
            return None
        found = cls
    return found


def _place(cls: ClassRef) -> Tuple[str, int]:
    return cls[1].context.path or "", cls[0].lineno
