"""Name bindings within one module, and the names the module itself is imported as.

``Bindings`` says what a name or ``self.x`` was assigned (by assignment and ``with ... as``, in a function and at
module level), the module's own defs a name refers to, and a method an attribute names.  ``own_module_names``
gives every dotted name the checked module may be imported as, for matching what other modules import.
"""
from __future__ import annotations

import ast
from typing import Dict, Iterable, List, Optional, Set, Tuple

from ..analysis.facts import FunctionNode, ModuleFacts, ancestors, walk, walk_no_nested_functions
from ..analysis.names import ImportTable

_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPE_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


class Bindings:
    """Values bound to names by assignment and ``with ... as`` in a function and at module level.

    Only what is visible: parameters and names bound by loops or imports have no value here.
    """

    def __init__(self, facts: ModuleFacts) -> None:
        self.facts = facts
        self._scopes: Dict[int, Dict[str, List[ast.AST]]] = {}
        self._params: Dict[int, Set[str]] = {}
        self._classes: Dict[int, Dict[str, List[ast.AST]]] = {}
        self._def_tables: Dict[int, Dict[str, FunctionNode]] = {}

    @classmethod
    def of_module(cls, facts: ModuleFacts) -> "Bindings":
        return facts.cached("scheduled-bindings", cls)

    def _table(self, scope: ast.AST) -> Dict[str, List[ast.AST]]:
        key = id(scope)
        table = self._scopes.get(key)
        if table is not None:
            return table
        table = {}
        nodes = walk_no_nested_functions(scope) if scope is not self.facts.tree else _module_level(scope)
        for node in nodes:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        table.setdefault(target.id, []).append(node.value)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                table.setdefault(node.target.id, []).append(node.value)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if isinstance(item.optional_vars, ast.Name):
                        table.setdefault(item.optional_vars.id, []).append(item.context_expr)
            elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
                table.setdefault(node.target.id, []).append(node.value)
            elif isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.target, ast.Name):
                # A loop variable has no single value: mark it bound but unknown.
                table.setdefault(node.target.id, []).append(node.target)
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and scope is not self.facts.tree:
                for alias in node.names:
                    name = (alias.asname or alias.name).split(".", 1)[0]
                    table.setdefault(name, []).append(node)
        self._scopes[key] = table
        return table

    def _parameters(self, function: ast.AST) -> Set[str]:
        key = id(function)
        found = self._params.get(key)
        if found is None:
            args = function.args
            found = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
            if args.vararg:
                found.add(args.vararg.arg)
            if args.kwarg:
                found.add(args.kwarg.arg)
            self._params[key] = found
        return found

    def scope_of(self, name: ast.Name) -> Tuple[Optional[ast.AST], List[ast.AST]]:
        """(scope, values) of the innermost scope that binds ``name``; scope None when nothing does."""
        for above in ancestors(name):
            if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                if isinstance(above, ast.Lambda):
                    if name.id in {a.arg for a in above.args.args}:
                        return above, []
                    continue
                if name.id in self._parameters(above):
                    return above, []
                values = self._table(above).get(name.id)
                if values:
                    return above, values
        values = self._table(self.facts.tree).get(name.id)
        if values:
            return self.facts.tree, values
        return None, []

    def imported_name(self, expr: ast.AST) -> Optional[str]:
        """What ``expr`` (a name or a dotted chain on one) names when an import binds its head where it is
        used: at module level, or in a function around it (``from billing import collector`` inside
        ``ready()`` before ``collector.run_forever``); None when an assignment, a parameter or a loop binds
        the head there instead, or no import does."""
        head = expr
        while isinstance(head, ast.Attribute):
            head = head.value
        if not isinstance(head, ast.Name) or not self.facts.imports.is_imported(head.id):
            return None
        scope, values = self.scope_of(head)
        if scope is None:
            return self.facts.qualify(expr)
        if values and all(isinstance(value, (ast.Import, ast.ImportFrom)) for value in values):
            return ImportTable(values, self.facts.imports.package).qualify(expr)
        return None

    def values(self, expr: ast.AST) -> List[ast.AST]:
        """What ``expr`` (a Name or ``self.attr``) was bound to; empty when not visible."""
        if isinstance(expr, ast.Name):
            return self.scope_of(expr)[1]
        if (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self"):
            cls_node = self.facts.enclosing_class(expr)
            if cls_node is None:
                return []
            return self._class_attributes(cls_node).get(expr.attr, [])
        return []

    def _class_attributes(self, cls_node: ast.ClassDef) -> Dict[str, List[ast.AST]]:
        key = id(cls_node)
        table = self._classes.get(key)
        if table is not None:
            return table
        table = {}
        for node in walk(cls_node):
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            for target in targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                    table.setdefault(target.attr, []).append(value)
        self._classes[key] = table
        return table

    def origin(self, expr: ast.AST, depth: int = 0) -> Optional[ast.AST]:
        """The single expression ``expr`` stands for, following aliases (``a = b``); None if ambiguous."""
        if depth > 6:
            return None
        if isinstance(expr, ast.Await):
            return self.origin(expr.value, depth + 1)
        if isinstance(expr, ast.Name) or (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name)
                                          and expr.value.id == "self"):
            values = self.values(expr)
            if len(values) != 1:
                return None
            value = values[0]
            if isinstance(value, (ast.Name, ast.Attribute, ast.Await)) and value is not expr:
                return self.origin(value, depth + 1) or value
            return value
        return expr

    def configured_origin(self, expr: ast.AST) -> Optional[ast.AST]:
        """The one value ``expr`` (a name or ``self.attr``) is bound to besides ``None``: a placeholder the code
        binds until it is configured (``self._clock = None`` in ``__init__``, ``self._clock = Clock()`` when the
        process boots) is no second value for a method call on it, which ``None`` would not answer."""
        values = self.values(expr)
        configured = [value for value in values if not (isinstance(value, ast.Constant) and value.value is None)]
        if len(configured) != 1 or len(configured) == len(values):
            return None
        value = configured[0]
        if isinstance(value, (ast.Name, ast.Attribute, ast.Await)) and value is not expr:
            return self.origin(value) or value
        return value

    def _defs(self, scope: ast.AST) -> Dict[str, FunctionNode]:
        """name -> the last ``def`` directly inside ``scope`` (a function, or the module's top level)."""
        key = id(scope)
        table = self._def_tables.get(key)
        if table is None:
            table = {}
            nodes = scope.body if scope is self.facts.tree else walk_no_nested_functions(scope)
            for node in nodes:
                if isinstance(node, _FUNCTION_TYPES):
                    table[node.name] = node
            self._def_tables[key] = table
        return table

    def module_function(self, name: ast.Name) -> Optional[FunctionNode]:
        """The ``def`` a name refers to: a def of an enclosing function or of the module, not shadowed (a
        rebinding that decorates it, ``job = app.task(job)``, still names that def)."""
        for above in ancestors(name):
            if isinstance(above, _FUNCTION_TYPES):
                if name.id in self._parameters(above):
                    return None
                found = self._defs(above).get(name.id)
                if found is not None:
                    return found
                if self._table(above).get(name.id):
                    return None
        found = self._defs(self.facts.tree).get(name.id)
        values = self._table(self.facts.tree).get(name.id)
        if values and not (found is not None and all(self._decorates(v, name.id) for v in values)):
            return None
        return found

    @staticmethod
    def _decorates(value: ast.AST, name: str) -> bool:
        """``deco(...)(name)`` or ``a(b(name))``: the def of ``name``, decorated."""
        depth = 0
        while isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords:
            value, depth = value.args[0], depth + 1
        return depth > 0 and isinstance(value, ast.Name) and value.id == name

    def method(self, expr: ast.Attribute) -> Optional[FunctionNode]:
        """``self.name`` -> the method ``name`` of the enclosing class."""
        if not (isinstance(expr.value, ast.Name) and expr.value.id == "self"):
            return None
        cls_node = self.facts.enclosing_class(expr)
        if cls_node is None:
            return None
        for statement in cls_node.body:
            if isinstance(statement, _FUNCTION_TYPES) and statement.name == expr.attr:
                return statement
        return None


def _module_level(tree: ast.Module) -> Iterable[ast.AST]:
    """Statements of the module outside functions and classes (including if/try/with blocks)."""
    stack = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield node
        children = list(ast.iter_child_nodes(node))
        children.reverse()
        stack.extend(c for c in children if not isinstance(c, _SCOPE_TYPES))


def own_module_name(facts: ModuleFacts) -> str:
    """Dotted name of the checked module (``app.jobs``), as far as ``__init__.py`` files show it."""
    filename = facts.context.filename
    stem = filename[:-3] if filename.endswith(".py") else filename
    package = facts.context.package
    if stem == "__init__":
        return package
    return f"{package}.{stem}" if package else stem


def own_module_names(facts: ModuleFacts) -> Set[str]:
    """Every dotted name the checked module may be imported as: by packages, and by its path under the root."""
    names = {own_module_name(facts)}
    rel = facts.context.rel_path
    if rel.endswith(".py") and not rel.startswith("../") and not rel.startswith("/"):
        dotted_path = rel[:-3].replace("/", ".")
        if dotted_path.endswith(".__init__"):
            dotted_path = dotted_path[: -len(".__init__")]
        names.add(dotted_path)
        if dotted_path.startswith("src."):
            names.add(dotted_path[4:])
    names.discard("")
    return names
