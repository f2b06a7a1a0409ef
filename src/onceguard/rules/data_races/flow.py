"""How a value read from the store flows within one function: which names hold it, which hold Python
arithmetic or a merge on it, and the small expression tests those questions share."""
from __future__ import annotations

import ast
from typing import Callable, List, Optional, Set, Tuple

from ...analysis.facts import FunctionNode, ModuleFacts, in_exclusive_branches, parent, walk
from ...analysis.names import plain_name
from ...knowledge import orm
from .loads import _ARITHMETIC, function_nodes, later, target_names, unwrap


# -- value flow within a function ----------------------------------------------------------------------------


class Flow:
    """Which local names hold a value read from the store (``tainted``) and which hold Python arithmetic
    on such a value (``computed``), following assignments in source order."""

    def __init__(self, function: FunctionNode, facts: ModuleFacts, is_source: Callable[[ast.AST], bool],
                 at: Optional[ast.AST] = None) -> None:
        """``at``: the write the flow is asked about; an assignment in another arm of a branch around it (the
        other ``elif`` of a dispatcher) never runs before it, so what it binds says nothing there."""
        self.is_source = is_source
        self.tainted: Set[str] = set()
        self.computed: Set[str] = set()
        self.merged: Set[str] = set()  # names holding a dict built from the value read (``{**old, ...}``)
        for node in function_nodes(function, facts):
            if at is not None and isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) \
                    and in_exclusive_branches(node, at):
                continue
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [n for t in targets for n in target_names(t)]
                if self.arithmetic(node.value):
                    self.computed.update(names)
                    self.tainted.update(names)
                elif self.reads(node.value):
                    self.tainted.update(names)
                    if _merged(node.value, self.reads_here):
                        self.merged.update(names)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                if node.target.id in self.tainted and isinstance(node.op, _ARITHMETIC):
                    self.computed.add(node.target.id)
            elif isinstance(node, (ast.For, ast.AsyncFor)) and self.reads(node.iter):
                # Each element of a collection read from the store is a value read from it.
                self.tainted.update(target_names(node.target))

    def reads_here(self, node: ast.AST) -> bool:
        """This one node is a read (a tainted name or the source), without looking below it."""
        return (isinstance(node, ast.Name) and node.id in self.tainted) or self.is_source(node)

    def reads(self, node: ast.AST) -> bool:
        return any((isinstance(n, ast.Name) and n.id in self.tainted) or self.is_source(n) for n in walk(node))

    def arithmetic(self, node: ast.AST) -> bool:
        if any(isinstance(n, ast.Name) and n.id in self.computed for n in walk(node)):
            return True
        marked = _containing(node, self.reads_here)
        return bool(marked) and any(
            isinstance(n, ast.BinOp) and isinstance(n.op, _ARITHMETIC) and (
                id(n.left) in marked or id(n.right) in marked) and not _set_algebra(n) for n in walk(node))


def _local_value_before(name: ast.Name, statement: ast.AST, function: FunctionNode,
                        facts: ModuleFacts) -> Optional[ast.AST]:
    found = None
    for node in function_nodes(function, facts):
        if node is statement:
            break
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == name.id):
            found = node.value
    return found


def _database_expression(node: ast.AST, facts: ModuleFacts) -> bool:
    """``F("n") + 1`` or ``Counter.n + 1``: the database does the arithmetic."""
    for n in walk(node):
        if isinstance(n, ast.Call) and facts.callee(n) in orm.DJANGO_F:
            return True
    return False


# -- instances changed and written back ---------------------------------------------------------------------
# The write proves the value is a stored row: ``obj.save()``, ``session.add(obj)`` then ``commit()``/``flush()``,
# ``session.merge(obj)``, or a queryset ``update(n=obj.n)``.  Where the instance came from (a parameter,
# ``self.token``, a repository method, ``.all()[0]``, a loop over rows) does not matter once it is written back.

#: Methods that change a list, dict or set in place.
_IN_PLACE = frozenset({"append", "extend", "insert", "update", "setdefault", "pop", "popitem", "remove", "discard",
                       "add", "clear"})
#: ``obj.tags.append(x)``: a list column grown in place (Django ``ArrayField``/``JSONField``).  Only reported with
#: an instance ``save()``: on SQLAlchemy a relationship collection's ``append`` inserts a link row instead, and
#: Django's many-to-many managers (``add``/``remove``/``clear``) write their own rows.
_LIST_GROWTH = frozenset({"append", "extend", "insert"})
#: Calls that copy a value: ``dict(obj.meta)``, ``list(obj.tags)``, ``deepcopy(obj.data)``.
_COPY_CALLS = frozenset({"dict", "list", "set", "copy", "deepcopy", "OrderedDict", "defaultdict"})
#: ``save(update_fields=[...])``: the fields a Django save writes.
_UPDATE_FIELDS = "update_fields"


def _field_of(node: ast.AST) -> Optional[Tuple[str, str]]:
    """``obj.meta`` / ``self.token.count`` -> (instance, field)."""
    node = unwrap(node)
    if isinstance(node, ast.Attribute):
        instance = plain_name(node.value)
        if instance is not None:
            return instance, node.attr
    return None


def _copied_field(value: ast.AST) -> Optional[Tuple[str, str]]:
    """The field a local starts as a copy of: ``obj.meta``, ``obj.meta or {}``, ``dict(obj.meta or {})``,
    ``obj.meta.copy()``, ``{**obj.meta}``, either branch of ``{} if reset else dict(obj.meta)``."""
    value = unwrap(value)
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or) and value.values:
        return _copied_field(value.values[0])
    if isinstance(value, ast.IfExp):  # ``{} if reset else dict(obj.meta)``: a copy on one branch
        return _copied_field(value.body) or _copied_field(value.orelse)
    if isinstance(value, ast.Call):
        func = value.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name in _COPY_CALLS and len(value.args) == 1 and not value.keywords:
            return _copied_field(value.args[0])
        if isinstance(func, ast.Attribute) and func.attr == "copy" and not value.args:
            return _copied_field(func.value)
        return None
    if isinstance(value, ast.Dict) and len(value.keys) == 1 and value.keys[0] is None:
        return _copied_field(value.values[0])
    return _field_of(value)


def _tuple_branches(value: ast.AST) -> List[ast.Tuple]:
    """``a, b = (x, y)`` and ``a, b = ({}, {}) if reset else (x, y)``: the tuples a target may take."""
    value = unwrap(value)
    if isinstance(value, ast.Tuple):
        return [value]
    if isinstance(value, ast.IfExp):
        return _tuple_branches(value.body) + _tuple_branches(value.orelse)
    return []


def _subscript_root(node: ast.AST) -> ast.AST:
    while isinstance(node, ast.Subscript):
        node = node.value
    return node


def _is_field(node: ast.AST, instance: str, field: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == field and plain_name(node.value) == instance


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _reads(node: ast.AST, instance: str, field: str) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == field and plain_name(n.value) == instance
               for n in walk(node))


def _reads_name(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in walk(node))


def _containing(root: ast.AST, is_read: Callable[[ast.AST], bool]) -> Set[int]:
    """ids of the nodes under ``root`` (itself included) whose subtree holds a node ``is_read`` accepts.
    One walk and one climb per read, so deep expressions (a 2,500-term concatenation) stay linear."""
    marked: Set[int] = set()
    for n in walk(root):
        if not is_read(n):
            continue
        current: Optional[ast.AST] = n
        while current is not None and id(current) not in marked:
            marked.add(id(current))
            if current is root:
                break
            current = parent(current)
    return marked


def _arithmetic_on(node: ast.AST, is_read: Callable[[ast.AST], bool]) -> Optional[ast.BinOp]:
    """The first ``+ - * / ...`` in ``node`` with an operand that reads the value (``is_read`` judges one
    node, not a subtree)."""
    marked = _containing(node, is_read)
    if not marked:
        return None
    for n in walk(node):
        if (isinstance(n, ast.BinOp) and isinstance(n.op, _ARITHMETIC)
                and (id(n.left) in marked or id(n.right) in marked)
                and not _text(n.left) and not _text(n.right) and not _set_algebra(n)):
            return n
    return None


def _set_algebra(node: ast.BinOp) -> bool:
    """``set(a) - set(b)``: comparing two collections, not counting."""
    def is_set(n: ast.AST) -> bool:
        return isinstance(n, (ast.Set, ast.SetComp)) or (
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("set", "frozenset"))
    return is_set(node.left) or is_set(node.right)


def _text(node: ast.AST) -> bool:
    """A string literal or f-string: ``obj.prefix + "TEST-"`` builds text, it does not count; nor does a choice
    between two of them (``obj.notes += f"\n{line}" if obj.notes else f"{line}"``)."""
    if isinstance(node, ast.IfExp):
        return _text(node.body) and _text(node.orelse)
    return isinstance(node, ast.JoinedStr) or isinstance(node, ast.Constant) and isinstance(node.value, str)


def _merged(node: ast.AST, is_read: Callable[[ast.AST], bool]) -> bool:
    """``{**old, k: v}`` or ``old | new``: a dict built from the value read (``is_read`` judges one node)."""
    marked = _containing(node, is_read)
    if not marked:
        return False
    for n in walk(node):
        if isinstance(n, ast.Dict) and any(k is None and id(v) in marked for k, v in zip(n.keys, n.values)):
            return True
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.BitOr) and (id(n.left) in marked or id(n.right) in marked):
            return True
    return False


def _keyed(value: ast.AST, name: str) -> ast.AST:
    """The value a dict argument gives ``name`` (``{"count": n + 1}``), or the argument itself."""
    if isinstance(value, ast.Dict):
        for key, item in zip(value.keys, value.values):
            if isinstance(key, ast.Constant) and key.value == name:
                return item
    return value


def _first_arithmetic(flow: "Flow", read: ast.AST, write: ast.AST, function: FunctionNode,
                      facts: ModuleFacts) -> ast.AST:
    """Where the value read is first changed: ``n += 1`` / ``n = n + 1`` after the read, else the write."""
    for node in function_nodes(function, facts):
        if not isinstance(node, ast.stmt) or not later(node, read) or not later(write, node):
            continue
        if (isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id in flow.tainted
                and isinstance(node.op, _ARITHMETIC)):
            return node
        if isinstance(node, ast.Assign) and flow.arithmetic(node.value):
            return node
    return write
