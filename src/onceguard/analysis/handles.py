"""Which expressions hold a pooled database handle and which hold one pinned connection.

Follows module-level names, locals, ``with ... as`` targets, parameters
annotated with a known type, and ``self.x`` attributes assigned anywhere in
the class.  A name whose origin is not visible gives ``None``: the rules stay
silent rather than guess from a variable's name.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Tuple

from .facts import ModuleFacts, ancestors, walk_no_nested_functions
from ..knowledge import databases as db


@dataclass(frozen=True)
class Handle:
    kind: str  # databases.POOLED / PINNED / SESSION_FACTORY / FLASK_SQLALCHEMY
    library: str
    how: str  # the constructor or method that produced it: "connect", "acquire", "create_pool", ...
    origin: Optional[ast.AST] = None  # the with-item or assignment that bound it, when known
    #: The pool closes connections instead of keeping them (SQLAlchemy ``poolclass=NullPool``): the server
    #: session, and every session-level lock of it, ends when a checkout is returned.
    closes_on_release: bool = False

    @property
    def pooled(self) -> bool:
        return self.kind in (db.POOLED, db.SESSION_FACTORY)

    @property
    def pinned(self) -> bool:
        return self.kind == db.PINNED


def _annotation_target(node: Optional[ast.AST]) -> Optional[ast.AST]:
    """``Optional[X]``, ``Annotated[X, Depends()]``, ``X | None`` and ``"X"`` all mean X here."""
    while node is not None:
        if isinstance(node, ast.Subscript):
            inner = node.slice
            node = inner.elts[0] if isinstance(inner, ast.Tuple) and inner.elts else inner
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            node = node.left if not (isinstance(node.left, ast.Constant) and node.left.value is None) else node.right
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                node = ast.parse(node.value, mode="eval").body
            except SyntaxError:
                return None
        else:
            return node
    return None


class Handles:
    """Database handles by default; a subclass binds other kinds of objects (Redis clients) by giving
    its own tables and, where its objects are made differently, its own ``_of_call``."""

    _MAX_DEPTH = 8
    CACHE_KEY = "handles"
    CONSTRUCTORS: Dict[str, tuple] = db.CONSTRUCTORS
    OBJECTS: Dict[str, tuple] = db.OBJECTS
    ANNOTATIONS: Dict[str, tuple] = db.ANNOTATIONS

    def __init__(self, facts: ModuleFacts) -> None:
        self.facts = facts
        self._scopes: Dict[int, Dict[str, List[Tuple[ast.AST, ast.AST, bool]]]] = {}
        self._class_attrs: Dict[int, Dict[str, List[Tuple[ast.AST, ast.AST, bool]]]] = {}

    @classmethod
    def of_module(cls, facts: ModuleFacts):
        return facts.cached(cls.CACHE_KEY, cls)

    # -- bindings ------------------------------------------------------------
    def _bindings(self, scope: ast.AST) -> Dict[str, List[Tuple[ast.AST, ast.AST, bool]]]:
        """name -> [(binding node, value or annotation, is_annotation)] within one scope."""
        key = id(scope)
        if key in self._scopes:
            return self._scopes[key]
        table: Dict[str, List[Tuple[ast.AST, ast.AST, bool]]] = {}

        def bind(name: str, origin: ast.AST, value: ast.AST, is_annotation: bool = False) -> None:
            table.setdefault(name, []).append((origin, value, is_annotation))

        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = scope.args
            every = arguments.posonlyargs + arguments.args + arguments.kwonlyargs + [
                a for a in (arguments.vararg, arguments.kwarg) if a is not None]
            for arg in every:
                # An unannotated parameter is bound too, to nothing known: it hides a module-level
                # handle of the same name instead of borrowing its origin.
                bind(arg.arg, arg, arg.annotation, True)
        for node in walk_no_nested_functions(scope):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        bind(target.id, node, node.value)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                if node.value is not None:
                    bind(node.target.id, node, node.value)
                else:
                    bind(node.target.id, node, node.annotation, True)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if isinstance(item.optional_vars, ast.Name):
                        bind(item.optional_vars.id, item, item.context_expr)
            elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
                bind(node.target.id, node, node.value)
        self._scopes[key] = table
        return table

    def _self_attributes(self, cls_node: ast.ClassDef) -> Dict[str, List[Tuple[ast.AST, ast.AST, bool]]]:
        key = id(cls_node)
        if key in self._class_attrs:
            return self._class_attrs[key]
        table: Dict[str, List[Tuple[ast.AST, ast.AST, bool]]] = {}
        for statement in cls_node.body:
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                table.setdefault(statement.target.id, []).append(
                    (statement, statement.value or statement.annotation, statement.value is None))
        for node in ast.walk(cls_node):
            if isinstance(node, ast.Assign):
                targets = node.targets
                value = node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets = [node.target]
                value = node.value
            else:
                continue
            for target in targets:
                if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                        and target.value.id == "self"):
                    table.setdefault(target.attr, []).append((node, value, False))
        self._class_attrs[key] = table
        return table

    # -- resolution -------------------------------------------------------------
    def of(self, expr: Optional[ast.AST], _depth: int = 0) -> Optional[Handle]:
        if expr is None or _depth > self._MAX_DEPTH:
            return None
        depth = _depth + 1
        if isinstance(expr, ast.Await):
            return self.of(expr.value, depth)
        qualified = self.facts.qualify(expr) if isinstance(expr, (ast.Name, ast.Attribute)) else None
        if qualified in self.OBJECTS:
            kind, library = self.OBJECTS[qualified]
            return Handle(kind, library, qualified.rsplit(".", 1)[-1])
        if isinstance(expr, ast.Call):
            return self._of_call(expr, depth)
        if isinstance(expr, ast.Name):
            return self._of_name(expr, depth)
        if isinstance(expr, ast.Attribute):
            if isinstance(expr.value, ast.Name) and expr.value.id == "self":
                cls_node = self.facts.enclosing_class(expr)
                if cls_node is None:
                    return None
                return self._agree(self._self_attributes(cls_node).get(expr.attr, []), depth)
            receiver = self.of(expr.value, depth)
            if receiver and receiver.kind == db.FLASK_SQLALCHEMY and expr.attr in db.FLASK_SQLALCHEMY_POOLED_ATTRS:
                return Handle(db.POOLED, receiver.library, expr.attr, receiver.origin)
        return None

    def _of_call(self, call: ast.Call, depth: int) -> Optional[Handle]:
        callee = self.facts.callee(call)
        if callee in self.CONSTRUCTORS:
            kind, library = self.CONSTRUCTORS[callee]
            return Handle(kind, library, callee.rsplit(".", 1)[-1], call, self._null_pool(call))
        func = call.func
        if isinstance(func, ast.Attribute):
            receiver = self.of(func.value, depth)
            if receiver is None:
                return None
            if (receiver.kind == db.POOLED and func.attr == "connection" and receiver.library == "sqlalchemy"
                    and receiver.how in db.SESSION_HOWS):
                return Handle(db.POOLED, receiver.library, db.SESSION_CONNECTION, call, receiver.closes_on_release)
            if receiver.kind == db.POOLED and func.attr in db.PIN_METHODS:
                return Handle(db.PINNED, receiver.library, func.attr, call, receiver.closes_on_release)
            if receiver.kind == db.SESSION_FACTORY and func.attr == "begin":
                return Handle(db.POOLED, receiver.library, "session", call)
            if receiver.kind == db.PINNED and (func.attr in db.SAME_HANDLE_METHODS or func.attr in ("transaction", "begin")):
                return receiver
            if receiver.kind == db.POOLED and func.attr in db.SAME_HANDLE_METHODS:
                return receiver
            return None
        receiver = self.of(func, depth)
        if receiver is not None and receiver.kind == db.SESSION_FACTORY:
            return Handle(db.POOLED, receiver.library, "session", call)
        if receiver is not None and receiver.kind == db.POOLED and receiver.how == "scoped_session":
            return Handle(db.POOLED, receiver.library, "session", call)
        return None

    def _null_pool(self, call: ast.Call) -> bool:
        for keyword in call.keywords:
            if keyword.arg == "poolclass" and isinstance(keyword.value, (ast.Name, ast.Attribute)):
                return (self.facts.qualify(keyword.value) or "") in db.CLOSING_POOL_CLASSES
        return False

    def _of_name(self, name: ast.Name, depth: int) -> Optional[Handle]:
        for scope in self._scopes_of(name):
            bindings = self._bindings(scope).get(name.id)
            if bindings:
                return self._agree(bindings, depth)
        return None

    def _scopes_of(self, node: ast.AST):
        for above in ancestors(node):
            if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield above
        yield self.facts.tree

    def _agree(self, bindings: List[Tuple[ast.AST, ast.AST, bool]], depth: int) -> Optional[Handle]:
        """The handle all bindings of a name agree on; a name bound to different kinds is unknown."""
        found: Optional[Handle] = None
        for origin, value, is_annotation in bindings:
            if is_annotation:
                target = _annotation_target(value)
                qualified = self.facts.qualify(target) if target is not None else None
                entry = self.ANNOTATIONS.get(qualified or "")
                handle = Handle(entry[0], entry[1], qualified.rsplit(".", 1)[-1], origin) if entry else None
            else:
                handle = self.of(value, depth)
                if handle is not None and isinstance(origin, ast.withitem):
                    handle = replace(handle, origin=origin)
            if handle is None:
                return None
            if found is not None and found.kind != handle.kind:
                return None
            found = found or handle
        return found
