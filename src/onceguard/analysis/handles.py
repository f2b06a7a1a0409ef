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

from .applied_decorators import decorators
from .facts import ModuleFacts, ancestors, position, walk, walk_no_nested_functions
from .names import dotted
from ..knowledge import claims as claim_known
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


@dataclass(frozen=True)
class ConnectionScope:
    """Where one checkout is in force: from its ``with`` item to the end of that block.  When the block ends
    the connection goes back to its pool (or is closed, ``handle.closes_on_release``), taking with it every
    session-level state set on it: advisory locks, ``SET`` parameters, temporary tables."""

    item: ast.withitem
    block: ast.AST  # ast.With / ast.AsyncWith
    handle: Handle

    @property
    def line(self) -> int:
        return self.item.context_expr.lineno

    @property
    def described(self) -> str:
        """How a message names the checkout: its ``with`` block, or a ``getconn()`` a ``finally`` gives back."""
        if isinstance(self.block, ast.Try):
            return f"the checkout at line {self.line} (given back in `finally:`)"
        return f"the `with` block at line {self.line}"

    @property
    def end_line(self) -> int:
        return getattr(self.block, "end_lineno", None) or self.line

    def contains(self, node: ast.AST) -> bool:
        return any(above is self.block for above in ancestors(node))

    def after(self, node: ast.AST) -> bool:
        """``node`` runs once the block has ended (later in the source, outside the block)."""
        end = (getattr(self.block, "end_lineno", 0), getattr(self.block, "end_col_offset", 0))
        return position(node) > end and not self.contains(node)

    def result_leaves(self, call: ast.Call, function: Optional[ast.AST]) -> bool:
        """The call's result is used once the block has ended: returned from inside it (the helper's caller
        holds it after the block closed), or kept in a name read after the block -- also through the names
        computed from it (``row = cur.fetchone(); return bool(row[0])``)."""
        if _under_return(call, self.block):
            return True
        if function is None:
            return False
        statement = ModuleFacts.statement_of(call)
        carried = _assigned_names(statement) if isinstance(statement, (ast.Assign, ast.AnnAssign)) else set()
        nodes = list(walk_no_nested_functions(function))
        # ``cur.execute(<lock>)`` then ``(got,) = cur.fetchone()``: the row a later fetch on that cursor returns
        # is the call's result
        cursor = call.func.value if isinstance(call.func, ast.Attribute) else None
        if isinstance(cursor, ast.Name):
            for node in nodes:
                value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
                value = value.value if isinstance(value, ast.Await) else value
                if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                        and value.func.attr in _FETCHES and isinstance(value.func.value, ast.Name) \
                        and value.func.value.id == cursor.id and position(value) > position(call):
                    carried |= _assigned_names(node)
        if not carried:
            return False
        derived = [n for n in nodes if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None]
        grown = True
        while grown:  # names computed from names that hold the result hold it too
            grown = False
            for assign in derived:
                if _reads_any(assign.value, carried) and not _assigned_names(assign) <= carried:
                    carried |= _assigned_names(assign)
                    grown = True
        return any(isinstance(node, ast.Name) and node.id in carried and isinstance(node.ctx, ast.Load)
                   and (self.after(node) or _under_return(node, self.block)) for node in nodes)


def bindings_before(function: ast.AST, name: str, node: ast.AST) -> List[ast.Assign]:
    """The assignments of ``function`` (outside its nested defs) that bind ``name`` before ``node``: the last is
    the checkout in force there when the name is checked out more than once."""
    return [statement for statement in walk_no_nested_functions(function) if isinstance(statement, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == name for t in statement.targets)
            and position(statement) < position(node)]


def _gives_back(node: ast.AST, name: str) -> bool:
    """``pool.putconn(name)`` / ``pool.release(name)`` / ``name.close()``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in db.RETURN_METHODS):
        return False
    if isinstance(node.func.value, ast.Name) and node.func.value.id == name and node.func.attr == "close":
        return True
    return any(isinstance(a, ast.Name) and a.id == name for a in node.args)


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _declared_global(function: ast.AST) -> set:
    """Names a function's own ``global`` statements declare."""
    return {name for node in walk_no_nested_functions(function) if isinstance(node, ast.Global) for name in node.names}


def _under_return(node: ast.AST, block: ast.AST) -> bool:
    for above in ancestors(node):
        if above is block:
            return False
        if isinstance(above, ast.Return):
            return True
    return False


def _assigned_names(statement: ast.AST) -> set:
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    return {n.id for t in targets for n in ([t] if isinstance(t, ast.Name) else getattr(t, "elts", ()))
            if isinstance(n, ast.Name)}


#: What reads a statement's rows off its cursor.
_FETCHES = frozenset({"fetchone", "fetchall", "fetchmany", "fetchval", "fetchrow"})


def _reads_any(value: ast.AST, names: set) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in walk(value))


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


#: What binds a name in a scope: only these of a function's nodes are read (off the module's node list,
#: ``ModuleFacts.own_nodes``, instead of a walk of the function).
_BINDING_KINDS = (ast.Assign, ast.AnnAssign, ast.With, ast.AsyncWith, ast.NamedExpr)


def cursor_of(expr: ast.AST) -> Optional[str]:
    """``conn`` of ``conn.cursor(...)`` (``self.conn`` of ``self.conn.cursor()``): a handle on its receiver's
    connection, whose block closes only itself."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "cursor":
        return dotted(expr.func.value)
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
        for node in self.facts.own_nodes(scope, _BINDING_KINDS):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        bind(target.id, node, node.value)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                if node.value is not None and not _is_none(node.value):
                    bind(node.target.id, node, node.value)
                else:  # ``pool: Optional[Pool] = None``: a placeholder whose annotation says what it will hold
                    bind(node.target.id, node, node.annotation, True)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if isinstance(item.optional_vars, ast.Name):
                        bind(item.optional_vars.id, item, item.context_expr)
            elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
                bind(node.target.id, node, node.value)
        if scope is self.facts.tree:
            # ``global pool`` then ``pool = await create_pool(...)`` in a connect function binds the module's name.
            for function, assign in self._global_assignments():
                for target in (assign.targets if isinstance(assign, ast.Assign) else [assign.target]):
                    if isinstance(target, ast.Name) and target.id in _declared_global(function) \
                            and assign.value is not None:
                        bind(target.id, assign, assign.value)
        self._scopes[key] = table
        return table

    def _global_assignments(self) -> List[Tuple[ast.AST, ast.AST]]:
        """(function, assignment) for the assignments of functions that declare a ``global`` name."""
        facts = self.facts
        if facts.lines and not any("global" in line for line in facts.lines):
            return []  # (most modules: no scan of their nodes)
        functions = []
        for node in facts.nodes:
            if type(node) is ast.Global:
                function = facts.enclosing_function(node)
                if function is not None and function not in functions:
                    functions.append(function)
        return [(function, node) for function in functions
                for node in facts.own_nodes(function, (ast.Assign, ast.AnnAssign))]

    def _self_attributes(self, cls_node: ast.ClassDef) -> Dict[str, List[Tuple[ast.AST, ast.AST, bool]]]:
        key = id(cls_node)
        if key in self._class_attrs:
            return self._class_attrs[key]
        table: Dict[str, List[Tuple[ast.AST, ast.AST, bool]]] = {}
        for statement in cls_node.body:
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                table.setdefault(statement.target.id, []).append(
                    (statement, statement.value or statement.annotation, statement.value is None))
        for node in walk(cls_node):
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
            entry = self.OBJECTS[qualified]
            # (kind, library[, how]): without its own ``how``, an object is named for what made it
            return Handle(entry[0], entry[1], entry[2] if len(entry) > 2 else qualified.rsplit(".", 1)[-1])
        if isinstance(expr, ast.Call):
            return self._of_call(expr, depth)
        if isinstance(expr, ast.Name):
            if qualified and qualified != expr.id and not self._bound_locally(expr):
                return self._of_imported(qualified, depth)  # ``from .db import engine``
            return self._of_name(expr, depth)
        if isinstance(expr, ast.Attribute):
            head = expr.value
            while isinstance(head, ast.Attribute):
                head = head.value  # ``import app.db`` then ``app.db.engine``
            if (qualified and isinstance(head, ast.Name) and self.facts.imports.is_imported(head.id)
                    and not self._bound_locally(head)):
                found = self._of_imported(qualified, depth)  # ``from app import db`` then ``db.engine``
                if found is not None:
                    return found
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
        made = self._made_by_factory(call, callee, depth)
        if made is not None:
            return made
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

    # -- factories and imports ----------------------------------------------------------------------------
    def _bound_locally(self, name: ast.Name) -> bool:
        """A binding of this module (or of an enclosing function) hides an import of the same name."""
        return any(name.id in self._bindings(scope) for scope in self._scopes_of(name))

    def _made_by_factory(self, call: ast.Call, callee: Optional[str], depth: int) -> Optional[Handle]:
        """``get_session()`` where a function of this module returns a handle (``return SessionLocal()``);
        an imported factory is :meth:`_returned_by_imported`'s question, also through its module
        (``db.SessionLocal()``, ``db.open_session()``)."""
        func = call.func
        head = func.value if isinstance(func, ast.Attribute) else None
        while isinstance(head, ast.Attribute):
            head = head.value  # ``svc.db.open_session()`` after ``import svc.db``
        if (isinstance(head, ast.Name) and callee and self.facts.imports.is_imported(head.id)
                and not self._bound_locally(head)):
            held = self._of_imported(callee, depth)
            if held is not None and held.kind == db.SESSION_FACTORY:
                return Handle(db.POOLED, held.library, "session", call)
            found = self._returned_by_imported(callee, depth) if held is None else None
            return replace(found, origin=call) if found is not None else None
        if not isinstance(func, ast.Name):
            return None
        if callee and callee != func.id:
            found = self._returned_by_imported(callee, depth)
        else:
            definitions = [f for f in self.facts.functions_by_name.get(func.id, ())
                           if ModuleFacts.enclosing_function(f) is None and self.facts.enclosing_class(f) is None]
            found = self.returned_by(definitions[0], depth) if len(definitions) == 1 else None
        return replace(found, origin=call) if found is not None else None

    def returned_by(self, function: ast.AST, depth: int = 0) -> Optional[Handle]:
        """The handle a function hands back, when every ``return`` that gives one agrees on its kind.

        A generator (a FastAPI dependency that yields its Session) is not a factory: its caller gets the
        generator, not the handle."""
        if depth > self._MAX_DEPTH or not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        if self._context_factory(function):
            return self._checkout_yielded(function, depth)
        found: Optional[Handle] = None
        for node in walk_no_nested_functions(function):
            if isinstance(node, (ast.Yield, ast.YieldFrom)):
                return None
            if isinstance(node, ast.Return) and node.value is not None:
                if isinstance(node.value, ast.Constant) and node.value.value is None:
                    continue
                handle = self.of(node.value, depth + 1)
                if handle is None:
                    return None
                if found is not None and found.kind != handle.kind:
                    return None
                found = found or handle
        return found

    def _context_factory(self, function: ast.AST) -> bool:
        """Made a context manager by ``contextlib``: the ``with`` binds what it yields."""
        return any((self.facts.qualify(d) or "") in claim_known.CONTEXT_MANAGER_DECORATORS
                   for d in decorators(function, self.facts))

    def _checkout_yielded(self, function: ast.AST, depth: int) -> Optional[Handle]:
        """``@contextmanager def pooled(): conn = pool.getconn(); try: yield conn; finally: pool.putconn(conn)``:
        the ``with`` that enters it holds one checkout of the pool for its block, given back when it ends."""
        yielded = [node.value for node in walk_no_nested_functions(function)
                   if isinstance(node, ast.Yield) and isinstance(node.value, ast.Name)]
        if len(yielded) != 1:
            return None
        name = yielded[0].id
        handle = self.of(yielded[0], depth + 1)
        if handle is None or handle.kind != db.PINNED or not any(
                _gives_back(node, name) for node in walk_no_nested_functions(function)):
            return None
        return handle

    def _of_imported(self, qualified: str, depth: int) -> Optional[Handle]:
        """What a name imported from another module of the project holds; this module alone cannot tell."""
        return None

    def _returned_by_imported(self, qualified: str, depth: int) -> Optional[Handle]:
        """What a factory imported from another module of the project returns; this module alone cannot tell."""
        return None

    # -- connection scopes -------------------------------------------------------------------------------
    def scope_of(self, call: ast.Call, receiver: Optional[ast.AST]) -> Optional["ConnectionScope"]:
        """The ``with`` block whose checkout (a pinned connection or a Session) runs ``call``: the innermost
        enclosing ``with ... as name`` that binds the receiver's root name to a connection."""
        root = receiver
        while isinstance(root, (ast.Attribute, ast.Call)):
            root = root.value if isinstance(root, ast.Attribute) else root.func
        if not isinstance(root, ast.Name):
            return None
        name = root.id
        for above in ancestors(call):
            if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return self._explicit_checkout(call, name, above)
            if isinstance(above, ast.Lambda):
                return None
            if isinstance(above, (ast.With, ast.AsyncWith)):
                for item in above.items:
                    implicit = self._implicit_checkout(item, name)
                    if implicit is not None:
                        return ConnectionScope(item, above, replace(implicit, origin=item))
                    if isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == name:
                        opened = cursor_of(item.context_expr)
                        if opened is not None:
                            # ``with conn.cursor() as cur``: the block closes a cursor, not a checkout; the
                            # connection's own block (if any) is the scope.
                            name = opened
                            break
                        handle = self.of(item.context_expr)
                        if handle is None or not (handle.pinned or handle.how in db.SESSION_HOWS
                                                  or handle.how == "session"):
                            return None
                        return ConnectionScope(item, above, replace(handle, origin=item))
        return None

    def _explicit_checkout(self, call: ast.Call, name: str, function: ast.AST) -> Optional["ConnectionScope"]:
        """``conn = pool.getconn()`` then ``try: ... finally: pool.putconn(conn)`` around ``call`` (on ``conn``):
        the ``try`` is the checkout's block, as a ``with`` block would be."""
        for above in ancestors(call):
            if above is function:
                return None
            if not (isinstance(above, ast.Try) and any(_gives_back(node, name) for statement in above.finalbody
                                                       for node in walk(statement))):
                continue
            checkouts = bindings_before(function, name, above)
            if not checkouts:
                return None
            value = max(checkouts, key=position).value
            checked = value.value if isinstance(value, ast.Await) else value
            handle = self.of(checked) if isinstance(checked, ast.Call) else None
            if handle is None or not handle.pinned or not isinstance(checked.func, ast.Attribute) \
                    or checked.func.attr not in db.PIN_METHODS:
                return None
            item = ast.withitem(context_expr=checked, optional_vars=ast.Name(id=name, ctx=ast.Store()))
            return ConnectionScope(item, above, replace(handle, origin=item))
        return None

    def _implicit_checkout(self, item: ast.withitem, name: str) -> Optional[Handle]:
        """``with db.connection_context():`` around a call on ``db``: the block's connection (see
        ``IMPLICIT_CHECKOUTS``), or None."""
        expr = item.context_expr
        if item.optional_vars is not None or not isinstance(expr, ast.Call) \
                or not isinstance(expr.func, ast.Attribute) or not isinstance(expr.func.value, ast.Name) \
                or expr.func.value.id != name:
            return None
        handle = self.of(expr.func.value)
        if handle is None or expr.func.attr not in db.IMPLICIT_CHECKOUTS.get(handle.library, ()):
            return None
        checkout = self.of(expr)
        return checkout if checkout is not None and checkout.pinned else None

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
            if not is_annotation and isinstance(value, ast.Constant) and value.value is None:
                continue  # ``conn = None`` before ``conn = pool.getconn()``: a placeholder, not another handle
            if is_annotation:
                target = _annotation_target(value)
                if isinstance(value, ast.Subscript) and (self.facts.qualify(value.value) or "") in self.ANNOTATIONS:
                    target = value.value  # ``async_sessionmaker[AsyncSession]``: the factory, not what it makes
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
