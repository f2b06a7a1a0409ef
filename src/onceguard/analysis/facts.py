"""One traversal of a module's ``ast`` that every rule reads from.

The walk is iterative (no Python recursion), so a tree that CPython could
build is never too deep for us.  It links each node to its parent and files
the nodes the rules start from into lists, so a rule looks at the dozen
calls named ``execute`` instead of walking the whole tree again.
"""
from __future__ import annotations

import ast
import os
import sys
import typing
from collections import defaultdict
from typing import Dict, Iterator, List, Optional, Tuple, Union

from .context import FileContext
from .names import ImportTable, dotted

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]
PARENT = "_og_parent"


def parent(node: ast.AST) -> Optional[ast.AST]:
    return getattr(node, PARENT, None)


def chain_top(call: ast.AST) -> ast.AST:
    """The whole method chain ``call`` is a link of (``A.objects.filter(x)`` -> ``A.objects.filter(x).update(y)``,
    ``Model.update(...)`` -> ``Model.update(...).where(...)``)."""
    node = call
    while True:
        above = parent(node)
        called = parent(above) if above is not None else None
        if isinstance(above, ast.Attribute) and above.value is node and isinstance(called, ast.Call) \
                and called.func is above:
            node = called
        else:
            return node


def statement_list(statement: ast.AST) -> Optional[list]:
    """The ``body``, ``orelse`` or ``finalbody`` list of its parent that holds ``statement``."""
    above = parent(statement)
    for name in ("body", "orelse", "finalbody"):
        block = getattr(above, name, None)
        if isinstance(block, list) and any(s is statement for s in block):
            return block
    return None


def ancestors(node: ast.AST) -> Iterator[ast.AST]:
    node = getattr(node, PARENT, None)
    while node is not None:
        yield node
        node = getattr(node, PARENT, None)


def _arm(owner: ast.AST, child: ast.AST) -> Optional[object]:
    """Which arm of a branching statement ``child`` (a direct child of ``owner``) is in; None when it is in
    a part every run of ``owner`` may reach alongside an arm (a test, a ``try`` body)."""
    if isinstance(owner, ast.If):
        return "body" if any(s is child for s in owner.body) else "orelse" if any(
            s is child for s in owner.orelse) else None
    if isinstance(owner, ast.Match):
        return id(child) if isinstance(child, ast.match_case) else None
    if isinstance(owner, (ast.Try, getattr(ast, "TryStar", ast.Try))):
        return id(child) if isinstance(child, ast.ExceptHandler) else None
    return None


def in_exclusive_branches(first: ast.AST, second: ast.AST) -> bool:
    """Whether no single run executes both nodes: they lie in different arms of one ``if``/``elif``/``else``,
    in different cases of one ``match``, or in different handlers of one ``try``."""
    path: Dict[int, ast.AST] = {}
    child = first
    for owner in ancestors(first):
        path[id(owner)] = child
        child = owner
    child = second
    for owner in ancestors(second):
        other = path.get(id(owner))
        if other is not None:
            if other is child:
                return False
            mine, theirs = _arm(owner, child), _arm(owner, other)
            return mine is not None and theirs is not None and mine != theirs
        child = owner
    return False


def in_handler(node: ast.AST, scope: ast.AST) -> bool:
    """``node`` lies in an ``except`` handler between it and ``scope`` (its function): it runs only when the
    ``try`` body failed."""
    for above in ancestors(node):
        if above is scope:
            return False
        if isinstance(above, ast.ExceptHandler):
            return True
    return False


def position(node: ast.AST) -> Tuple[int, int]:
    """(line, column) of a node, for "which comes first" within one file."""
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


IMPORTED_NAME = "_og_imported_name"


def call_name(call: ast.Call) -> Optional[str]:
    """The last name of what is called: ``execute`` for ``conn.execute(...)``, ``text`` for ``text(...)``, and
    for a name bound by an import the name it was imported by (``text`` after ``from sqlalchemy import text
    as sql_text``): an alias is a spelling, not another function."""
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return getattr(call, IMPORTED_NAME, None) or func.id
    return None


#: Operators and load/store contexts: one shared instance per kind for every tree, never a rule's subject.
_SHARED_NODES = (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)
#: node kind -> its fields that can hold child nodes, last first: (name, True for a list / False for one
#: node / None when the field's type is not declared and each value is checked).
_CHILD_FIELDS: Dict[type, Tuple[Tuple[str, Optional[bool]], ...]] = {}
#: The same with the shared nodes' fields, for walks that hand every node to a rule.
_WALK_FIELDS: Dict[type, Tuple[Tuple[str, Optional[bool]], ...]] = {}


def _node_classes(annotation) -> Optional[List[type]]:
    """The node classes a ``_field_types`` annotation admits (``list[expr]``, ``expr | None``), None for a list."""
    origin = typing.get_origin(annotation)
    if origin is list:
        return None
    if origin is not None:
        found: List[type] = []
        for argument in typing.get_args(annotation):
            inner = _node_classes(argument)
            if inner is None:
                return None
            found.extend(inner)
        return found
    return [annotation] if isinstance(annotation, type) else []


def _holds_nodes(classes: List[type], with_shared: bool = False) -> bool:
    return any(issubclass(c, ast.AST) and (with_shared or not issubclass(c, _SHARED_NODES)) for c in classes)


def _declared_field_types(kind: type) -> Optional[Dict[str, object]]:
    """field -> type, as ``_field_types`` (Python 3.13+) gives them, read on older versions from the node
    class's ASDL signature (``FunctionDef(identifier name, arguments args, stmt* body, expr? returns, ...)``):
    a field of a builtin type (identifier, string, constant, int) holds no nodes, and is not read at all."""
    declared = getattr(kind, "_field_types", None)
    if declared is not None:
        return declared
    doc = kind.__doc__ or ""
    head = f"{kind.__name__}("
    if not doc.startswith(head) or not doc.endswith(")") or "\n" in doc:
        return None
    found: Dict[str, object] = {}
    for part in filter(None, (item.strip() for item in doc[len(head):-1].split(","))):
        words = part.split()
        if len(words) != 2:
            return None
        type_name, field = words
        base = getattr(ast, type_name.rstrip("*?"), None)
        node_type = base if isinstance(base, type) and issubclass(base, ast.AST) else str
        if type_name.endswith("*"):
            found[field] = List[node_type]
        elif type_name.endswith("?"):
            found[field] = Optional[node_type]
        else:
            found[field] = node_type
    return found if set(found) == set(getattr(kind, "_fields", ())) else None


def _child_fields(kind: type, with_shared: bool = False) -> Tuple[Tuple[str, Optional[bool]], ...]:
    declared = _declared_field_types(kind)
    fields: List[Tuple[str, Optional[bool]]] = []
    for field in getattr(kind, "_fields", ()):
        annotation = declared.get(field) if declared else None
        if annotation is None:
            fields.append((field, None))
            continue
        origin = typing.get_origin(annotation)
        if origin is list:
            items = _node_classes(typing.get_args(annotation)[0]) if typing.get_args(annotation) else None
            if items is None or _holds_nodes(items, with_shared):
                fields.append((field, True if items is not None else None))
        else:
            classes = _node_classes(annotation)
            if classes is None:
                fields.append((field, None))
            elif _holds_nodes(classes, with_shared):
                fields.append((field, False))
    return tuple(reversed(fields))


class ModuleFacts:
    def __init__(self, tree: ast.Module, context: FileContext, lines: Optional[List[str]] = None) -> None:
        self.tree = tree
        self.context = context
        self.config = context.config
        self.lines = lines or []
        self.calls: List[ast.Call] = []
        self.calls_by_name: Dict[str, List[ast.Call]] = defaultdict(list)
        self.functions: List[FunctionNode] = []
        self.functions_by_name: Dict[str, List[FunctionNode]] = defaultdict(list)
        self.classes: List[ast.ClassDef] = []
        self.withs: List[Union[ast.With, ast.AsyncWith]] = []
        self.assigns: List[Union[ast.Assign, ast.AnnAssign, ast.AugAssign]] = []
        self.loops: List[Union[ast.While, ast.For, ast.AsyncFor]] = []
        self.ifs: List[ast.If] = []
        imports: List[ast.AST] = []
        #: id of a function -> its place in ``nodes`` (a function's own nodes are one run of that list)
        self._function_positions: Dict[int, int] = {}
        self._walk(tree, imports)
        #: every ``import`` and ``from ... import`` statement of the module, in source order
        self.import_statements = imports
        self.imports = ImportTable(imports, context.package or _namespace_package(context, imports))
        self._file_imported_calls_by_name()
        self._cache: Dict[str, object] = {}

    def _file_imported_calls_by_name(self) -> None:
        """A call through an import alias is also filed under the name it was imported by:
        ``call_command`` finds ``run_command(...)`` after ``from django.core.management import
        call_command as run_command``, as it finds the call under its own spelling."""
        by_name = self.calls_by_name
        self._renamed_calls: List[ast.Call] = []
        for local, target in self.imports.aliases.items():
            imported = target.rpartition(".")[2]
            if imported == local or not imported or local not in by_name:
                continue
            filed = by_name[imported]
            known = {id(call) for call in filed}
            for call in by_name[local]:
                if type(call.func) is ast.Name and id(call) not in known:
                    filed.append(call)
                    setattr(call, IMPORTED_NAME, imported)
                    self._renamed_calls.append(call)
            filed.sort(key=position)

    def _walk(self, tree: ast.AST, imports: List[ast.AST]) -> None:
        # The hottest loop of a run: only the fields that can hold child nodes are read (a ``Name`` has
        # none), per node kind, computed once; node kinds are compared by identity.
        Attribute, Name, Call = ast.Attribute, ast.Name, ast.Call
        kinds = {
            ast.FunctionDef: self._add_function, ast.AsyncFunctionDef: self._add_function,
            ast.Assign: self.assigns.append, ast.AnnAssign: self.assigns.append, ast.AugAssign: self.assigns.append,
            ast.With: self.withs.append, ast.AsyncWith: self.withs.append, ast.If: self.ifs.append,
            ast.While: self.loops.append, ast.For: self.loops.append, ast.AsyncFor: self.loops.append,
            ast.ClassDef: self.classes.append, ast.Import: imports.append, ast.ImportFrom: imports.append,
        }
        calls_append = self.calls.append
        by_name = self.calls_by_name
        child_fields = _CHILD_FIELDS
        linked = self._linked = []  # every node given a parent link, so release() can unlink them
        link = linked.append
        stack = [tree]
        pop, push = stack.pop, stack.append
        while stack:
            node = pop()
            link(node)
            kind = type(node)
            if kind is Call:
                calls_append(node)
                func = node.func
                if type(func) is Attribute:
                    by_name[func.attr].append(node)
                elif type(func) is Name:
                    by_name[func.id].append(node)
            else:
                add = kinds.get(kind)
                if add is not None:
                    add(node)
            fields = child_fields.get(kind)
            if fields is None:
                fields = child_fields[kind] = _child_fields(kind)
            # Last field first, each list backwards: children pop in source order, so every list is in pre-order.
            for field, many in fields:
                value = getattr(node, field, None)
                if value is None:
                    continue
                if many is True:
                    for item in reversed(value):
                        if item is not None:
                            item._og_parent = node
                            push(item)
                elif many is False:
                    value._og_parent = node
                    push(value)
                elif type(value) is list:  # a field of unknown type (an older Python): check each value
                    for item in reversed(value):
                        if isinstance(item, ast.AST) and not isinstance(item, _SHARED_NODES):
                            item._og_parent = node
                            push(item)
                elif isinstance(value, ast.AST) and not isinstance(value, _SHARED_NODES):
                    value._og_parent = node
                    push(value)

    @property
    def nodes(self) -> List[ast.AST]:
        """Every node of the module, in pre-order (until ``release``)."""
        return self._linked

    def release(self) -> None:
        """Unlink parents and drop cached facts once the rules are done.

        Parent links make every tree a web of reference cycles that only the cyclic garbage collector
        can free, and its passes over millions of nodes cost more than the analysis itself; unlinked, a
        tree is freed the moment the last reference to it goes (and flake8's tree is handed back as it
        came)."""
        for node in self._linked:
            try:
                del node._og_parent
            except AttributeError:
                pass
        self._linked = []
        for call in self._renamed_calls:
            try:
                delattr(call, IMPORTED_NAME)
            except AttributeError:
                pass
        self._renamed_calls = []
        self.forget_cached()

    def forget_cached(self) -> None:
        """Drop the facts cached for this module.  Facts of a tree derived from it (the module with its
        helpers looked through) are released with them when nothing else holds them: their parent links
        would otherwise leave that tree to a full pass of the cyclic collector, which a run makes rare."""
        derived = [value for value in self._cache.values() if isinstance(value, ModuleFacts) and value is not self]
        self._cache.clear()
        for facts in derived:
            facts.forget_cached()  # (what is cached for it may hold it)
        while derived:
            facts = derived.pop()
            if sys.getrefcount(facts) <= 2:  # (``facts`` and the argument: the cache was its only holder)
                facts.release()
            del facts

    def _add_function(self, node: FunctionNode) -> None:
        self._function_positions[id(node)] = len(self._linked) - 1  # (linked just before it is filed)
        self.functions.append(node)
        self.functions_by_name[node.name].append(node)

    # -- names -----------------------------------------------------------
    def qualify(self, node: ast.AST) -> Optional[str]:
        return self.imports.qualify(node)

    def callee(self, call: ast.Call) -> Optional[str]:
        """Qualified name of what a call calls (``sqlalchemy.text``, ``conn.execute``)."""
        return self.imports.qualify(call.func)

    # -- structure -------------------------------------------------------
    @staticmethod
    def enclosing_function(node: ast.AST) -> Optional[FunctionNode]:
        for above in ancestors(node):
            if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return above
            if isinstance(above, (ast.ClassDef, ast.Lambda)):
                return None
        return None

    @staticmethod
    def enclosing_class(node: ast.AST) -> Optional[ast.ClassDef]:
        for above in ancestors(node):
            if isinstance(above, ast.ClassDef):
                return above
        return None

    @staticmethod
    def statement_of(node: ast.AST) -> ast.AST:
        while not isinstance(node, ast.stmt):
            above = parent(node)
            if above is None:
                return node
            node = above
        return node

    @staticmethod
    def in_finally(node: ast.AST, within: Optional[ast.AST] = None) -> bool:
        """Whether ``node`` runs from a ``finally:`` block (below ``within`` when given)."""
        child = node
        for above in ancestors(node):
            if above is within:
                return False
            if isinstance(above, ast.Try) and any(child is stmt for stmt in above.finalbody):
                return True
            child = above
        return False

    def module_method(self, expr: ast.AST) -> Optional[FunctionNode]:
        """The method ``expr`` names when it is ``instance.method`` on a module-level instance of a class this
        module defines (``service = Service()`` ... ``service.run``), or ``Class.method``: the same code as
        a module function, reached through an object."""
        if not (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name)):
            return None
        table = self.cached("module-instances", _module_instances)
        cls = table.get(expr.value.id)
        if cls is None:
            return None
        for statement in cls.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == expr.attr:
                return statement
        return None

    def instances_of(self, cls: ast.ClassDef) -> List[str]:
        """The module-level names this module binds to an instance of its class ``cls`` (``lock_keys =
        KeyRegistry()``): another module calls the class's methods through them, never naming the class."""
        return sorted(name for name, of in self.cached("module-instances", _module_instances).items() if of is cls)

    def own_nodes(self, function: FunctionNode, kinds: Tuple[type, ...]) -> List[ast.AST]:
        """The nodes of ``kinds`` in ``function`` and not in a function, class or lambda nested in it, in
        source order: what ``nodes_of_kinds`` finds, read off the module's pre-order list (``_own_runs``)."""
        runs = self._own_runs(function)
        if runs is None:
            return nodes_of_kinds(function, kinds)  # (released, or a function of another tree)
        nodes, wanted = self._linked, frozenset(kinds)
        return [node for first, last in runs for node in nodes[first:last] if type(node) in wanted]

    def own_subtree(self, function: FunctionNode) -> List[ast.AST]:
        """``walk_no_nested_functions(function)`` without the shared operator and context nodes: every node
        under ``function`` in source order, a function, class or lambda nested in it included but not what
        is inside it, read off the module's pre-order list (``_own_runs``)."""
        runs = self._own_runs(function)
        if runs is None:
            return [node for node in walk_no_nested_functions(function) if not isinstance(node, _SHARED_NODES)]
        nodes = self._linked
        if len(runs) == 1:
            return nodes[runs[0][0]:runs[0][1]]
        return [node for first, last in runs for node in nodes[first:last]]

    def _own_runs(self, function: FunctionNode) -> Optional[List[Tuple[int, int]]]:
        """The slices of ``nodes`` that hold ``function``'s own nodes: its subtree is one run of the pre-order
        list ending at its last descendant, less the inside of each scope nested in it (the nested def itself
        kept); a scan of that run in C instead of a walk of the tree in Python. None once released, or for a
        function of another tree."""
        run = self._run_of(function)
        if run is None:
            return None
        start, end = run
        nodes = self._linked
        nested = _NESTED_SCOPE_KINDS
        runs: List[Tuple[int, int]] = []
        resume = start + 1
        for position in [k for k in range(start + 1, end + 1) if type(nodes[k]) in nested]:
            if position < resume:
                continue  # (a scope inside one already skipped)
            runs.append((resume, position + 1))
            resume = nodes.index(_last_descendant(nodes[position]), position) + 1
        runs.append((resume, end + 1))
        return runs

    def functions_around_nodes(self) -> List[Optional[FunctionNode]]:
        """For each node of ``nodes`` (same index), the nearest function whose subtree holds it, through
        classes and lambdas (a def's decorators and defaults are in its subtree); a function itself maps to
        the one around it.  Each function's run of the pre-order list is filled in turn, outer ones first, so
        the innermost is what stays."""
        def build(_facts: "ModuleFacts") -> List[Optional[FunctionNode]]:
            nodes = self._linked
            around: List[Optional[FunctionNode]] = [None] * len(nodes)
            for function in self.functions:  # (in pre-order: an outer function before those it nests)
                run = self._run_of(function)
                if run is not None:
                    start, end = run
                    around[start + 1:end + 1] = [function] * (end - start)
            return around

        return self.cached("functions-around-nodes", build)

    def _run_of(self, function: FunctionNode) -> Optional[Tuple[int, int]]:
        """(first, last) place of ``function``'s subtree in ``nodes``: the def itself, then every node under
        it down to its last descendant; None once released, or for a function of another tree."""
        start = self._function_positions.get(id(function))
        nodes = self._linked
        if start is None or start >= len(nodes) or nodes[start] is not function:
            return None
        return start, nodes.index(_last_descendant(function), start)

    def calls_named(self, *names: str) -> Iterator[ast.Call]:
        for name in names:
            yield from self.calls_by_name.get(name, ())

    def cached(self, key: str, build):
        """Facts several rules share (handle bindings, lock calls) are built once per module."""
        if key not in self._cache:
            self._cache[key] = build(self)
        return self._cache[key]


def _module_instances(facts: "ModuleFacts") -> Dict[str, ast.ClassDef]:
    """name -> class, for this module's classes and for the names its top level binds once to an instance
    of one (``service = Service()``); a name bound twice is left out (which object it holds depends)."""
    classes = {node.name: node for node in facts.tree.body if isinstance(node, ast.ClassDef)}
    table: Dict[str, ast.ClassDef] = dict(classes)
    counts: Dict[str, int] = defaultdict(int)
    for statement in facts.tree.body:
        targets = statement.targets if isinstance(statement, ast.Assign) else (
            [statement.target] if isinstance(statement, ast.AnnAssign) else [])
        for target in targets:
            if isinstance(target, ast.Name):
                counts[target.id] += 1
                value = statement.value
                if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in classes
                        and target.id not in classes):
                    table[target.id] = classes[value.func.id]
    for name, count in counts.items():
        if count > 1 and name in table and name not in classes:
            del table[name]
    return table


def _namespace_package(context: FileContext, imports: List[ast.AST]) -> str:
    """The package of a file in a directory without ``__init__.py`` (a namespace package, which Python 3
    imports as well), for its relative imports: its folder below the project root, dotted. Only asked when
    the file has a relative import, so that ``from .db import engine`` names ``app.db`` in ``app/``."""
    if not any(isinstance(node, ast.ImportFrom) and node.level for node in imports):
        return ""
    if not context.path or not context.config.root:
        return ""
    directory = os.path.dirname(os.path.abspath(context.path))
    root = os.path.abspath(context.config.root)
    if not (directory + os.sep).startswith(root.rstrip(os.sep) + os.sep):
        return ""
    parts = os.path.relpath(directory, root).replace(os.sep, "/").split("/")
    if not all(part.isidentifier() for part in parts):
        return ""
    return ".".join(parts)


_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_NESTED_SCOPE_KINDS = frozenset(_NESTED_SCOPES)


def _last_descendant(node: ast.AST) -> ast.AST:
    """The node of ``node``'s subtree that the module walk (``ModuleFacts._walk``) reaches last: the last child
    of the last field that has one, and so on down; ``node`` itself when it has no children."""
    while True:
        fields = _CHILD_FIELDS.get(type(node))
        if fields is None:
            fields = _CHILD_FIELDS[type(node)] = _child_fields(type(node))
        last = None
        for field, many in fields:  # (last field first)
            value = getattr(node, field, None)
            if value is None:
                continue
            if many is True:
                last = next((item for item in reversed(value) if item is not None), None)
            elif many is False:
                last = value
            elif type(value) is list:
                last = next((item for item in reversed(value)
                             if isinstance(item, ast.AST) and not isinstance(item, _SHARED_NODES)), None)
            elif isinstance(value, ast.AST) and not isinstance(value, _SHARED_NODES):
                last = value
            if last is not None:
                break
        if last is None:
            return node
        node = last


def assigned_before(name: ast.Name, function: Optional[ast.AST]) -> Optional[ast.AST]:
    """The value last assigned to ``name`` by a plain ``name = ...`` in ``function`` before ``name`` is used."""
    if function is None:
        return None
    found = None
    use = (name.lineno, name.col_offset)
    for node in walk_no_nested_functions(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id == name.id and (node.end_lineno, node.end_col_offset) <= use:
            if found is None or node.lineno >= found.lineno:
                found = node  # ``q = q.filter(...)`` is not its own binding: it ends after its own ``q``
    return found.value if found is not None else None


def body_nodes(function: FunctionNode) -> Iterator[ast.AST]:
    """The nodes that run each time ``function`` runs: its body, without nested defs and classes (defining one
    runs nothing of it here), and without the function's own decorators, defaults and annotations, which ran
    once when it was defined (``@registry.add("x")`` on a view registers it at import; the view does not call
    it)."""
    for statement in function.body:
        if isinstance(statement, _NESTED_SCOPES):
            continue
        yield statement
        yield from walk_no_nested_functions(statement)


def nodes_of_kinds(node: ast.AST, kinds: Tuple[type, ...]) -> List[ast.AST]:
    """The nodes under ``node`` (not in nested function or class bodies) whose type is one of ``kinds``, in
    source order (``ModuleFacts.own_nodes`` reads the same off the module's node list; this is its answer
    for a tree that has none)."""
    wanted = frozenset(kinds)
    return [found for found in walk_no_nested_functions(node) if type(found) in wanted]


#: node kind -> its fields that can hold nodes, in declaration order (as ``ast.iter_child_nodes`` reads them).
_FORWARD_FIELDS: Dict[type, Tuple[Tuple[str, Optional[bool]], ...]] = {}


def spells_triggers(facts: "ModuleFacts", triggers) -> bool:
    """The module's text holds one of ``triggers`` (prefilter triggers: a byte string, or a tuple of byte strings
    that must all occur).  A rule that several trigger sets admit asks this before the dear reading one set
    stands for; cached per module and set."""
    def build(_facts: "ModuleFacts") -> bool:
        text = "\n".join(facts.lines).encode("utf-8", "replace")
        return any(all(word in text for word in ((trigger,) if isinstance(trigger, bytes) else trigger))
                   for trigger in triggers)

    return facts.cached(f"spells:{id(triggers)}", build)


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk``: every node under ``node`` and itself, breadth first, in the same order, each node's
    children queued before it is yielded.  The fields that can hold nodes are looked up once per node kind
    instead of asked of every node (the stdlib walk's generators per node cost more than most rules' own
    work)."""
    AST = ast.AST
    forward = _FORWARD_FIELDS
    queue = [node]
    push = queue.append
    index = 0
    while index < len(queue):
        current = queue[index]
        queue[index] = None  # (a long walk does not keep what it has handed out)
        index += 1
        kind = type(current)
        fields = forward.get(kind)
        if fields is None:
            fields = forward[kind] = tuple(reversed(_child_fields(kind, with_shared=True)))
        for field, many in fields:
            value = getattr(current, field, None)
            if value is None:
                continue
            if many is False:
                push(value)
            elif type(value) is list:
                for item in value:
                    if isinstance(item, AST):
                        push(item)
            elif isinstance(value, AST):
                push(value)
        yield current


def walk_no_nested_functions(node: ast.AST) -> Iterator[ast.AST]:
    """Like ``ast.walk`` (but in source order) without entering nested function or class bodies."""
    AST = ast.AST
    nested = _NESTED_SCOPES
    child_fields = _WALK_FIELDS
    stack = [node]
    pop, push = stack.pop, stack.append
    first = True
    while stack:
        current = pop()
        kind = type(current)
        if first:
            first = False
        else:
            yield current
            if kind in nested:
                continue
        fields = child_fields.get(kind)
        if fields is None:
            if isinstance(current, nested) and current is not node:
                continue  # a subclass of a scope node
            fields = child_fields[kind] = _child_fields(kind, with_shared=True)
        # Last field first, each list backwards: children pop in source order.
        for field, many in fields:
            value = getattr(current, field, None)
            if value is None:
                continue
            if many is True:
                for item in reversed(value):
                    if item is not None:
                        push(item)
            elif many is False:
                push(value)
            elif type(value) is list:
                for item in reversed(value):
                    if isinstance(item, AST):
                        push(item)
            elif isinstance(value, AST):
                push(value)


__all__ = ["ModuleFacts", "position", "walk", "walk_no_nested_functions", "nodes_of_kinds", "parent", "ancestors", "statement_list", "call_name", "dotted", "FunctionNode"]


def is_generator(function: ast.AST) -> bool:
    """The def yields (its own body, not a nested def's): a generator, a ``@contextmanager``'s body."""
    return any(isinstance(node, (ast.Yield, ast.YieldFrom)) for node in walk_no_nested_functions(function))


def returned_def(factory: ast.AST) -> Optional[FunctionNode]:
    """The def nested in ``factory`` that it returns (``def every(m): def deco(f): ...; return deco``, a lifespan
    factory's lifespan): the first ``return <name>`` of its own body naming one of its nested defs."""
    nested = {node.name: node for node in factory.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in walk_no_nested_functions(factory):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Name) and node.value.id in nested:
            return nested[node.value.id]
    return None
