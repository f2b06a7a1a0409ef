"""The text and identity of a Redis key: what every replica sees stored, and when two spellings are one key."""
from __future__ import annotations

import ast
from typing import Optional, Tuple

from ..analysis.facts import ModuleFacts, walk, walk_no_nested_functions
from ..analysis.redis_arguments import words
from ..knowledge import redis_clients as known
from .definitions import definition, definition_facts
from .index import find_function, roots_for
from .redis_clients import RedisClients

_MAX_TEXT_DEPTH = 6

# -- keys ---------------------------------------------------------------------------------------------



def key_names_a_lock(key: Optional[ast.AST], facts: ModuleFacts, taken_with_nx: bool = False) -> bool:
    """``"lock:report"``, ``f"{job}:lock"``, ``self.lock_key`` holding ``"lease:..."``: the key's own text calls it
    a lock.  The names of the variables that hold or build it do not count (``lock_name``, ``LOCK_KEY``): a
    name is a guess, the stored key is what every replica sees."""
    if key is None:
        return False
    text = key_text(key, facts)
    if text is None:
        return False
    said = [word for word in words(text) if word]
    if any(word in known.LOCK_KEY_WORDS for word in said):
        return True
    # ``lease`` and ``leader`` are also nouns of a domain (a rental lease, a leaderboard): they name a lock when
    # the key ends with one (``scheduler:leader``, ``lease:{}``) or is taken only if absent (``setnx``), not in a
    # key a later part says holds something else and nothing takes (``lease:{}:balance``)
    if taken_with_nx:
        return any(word in known.LOCK_KEY_NOUNS for word in said)
    return bool(said) and said[-1] in known.LOCK_KEY_NOUNS


def key_text(node: ast.AST, facts: ModuleFacts, depth: int = 0) -> Optional[str]:
    """The literal text of a key, its variable parts as ``{}``: through f-strings, concatenation, local and
    module constants, imported constants (CLI), ``self`` attributes and properties, and methods returning it."""
    if depth > _MAX_TEXT_DEPTH or node is None:
        return None
    depth += 1
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        # A hole filled from a constant (``f"{LOCK_PREFIX}{conversation_id}"``) is stored text like the rest.
        return "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str)
                       else (_hole_text(v, facts, depth) or "{}") for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = key_text(node.left, facts, depth), key_text(node.right, facts, depth)
        if left is None and right is None:
            return None
        return (left or "{}") + (right or "{}")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return key_text(node.left, facts, depth)
    if isinstance(node, ast.Await):
        return key_text(node.value, facts, depth)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "format":
            return key_text(func.value, facts, depth)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
            return _member_text(func.value, func.attr, facts, depth, called=True)
        if isinstance(func, ast.Name):
            return _returned_text(func, facts, depth)
        method = facts.module_method(func)  # ``slots._slot(job)`` on a module-level instance
        if method is not None:
            return _function_text(method, facts, depth)
        return None
    if isinstance(node, ast.Name):
        return _name_text(node, facts, depth)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        if node.value.id in ("self", "cls"):
            return _member_text(node.value, node.attr, facts, depth, called=False)
        qualified = facts.qualify(node)
        if qualified and "." in qualified:
            return _imported_text(qualified, facts, depth)
    return None


def _returned_text(func: ast.Name, facts: ModuleFacts, depth: int) -> Optional[str]:
    """``_key(job)`` where ``def _key(job): return f"app:lease:{job}"``: the text the function's one ``return``
    gives (its parameters are the variable parts), for a function of this module or (CLI) one it imports."""
    where, function = facts, next((s for s in facts.tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                                   and s.name == func.id), None)
    if function is None:
        qualified = facts.qualify(func)
        if not qualified or qualified == func.id or not facts.context.cross_file:
            return None
        found = find_function(qualified, facts.config, roots_for(facts))
        if found is None:
            return None
        function, where = found
    return _function_text(function, where, depth)


def _function_text(function: ast.AST, where: ModuleFacts, depth: int) -> Optional[str]:
    returns = [n for n in walk_no_nested_functions(function) if isinstance(n, ast.Return)]
    if len(returns) != 1 or returns[0].value is None:
        return None
    return key_text(returns[0].value, where, depth)


def _hole_text(value: ast.AST, facts: ModuleFacts, depth: int) -> Optional[str]:
    if not isinstance(value, ast.FormattedValue) or value.format_spec is not None:
        return None
    if not isinstance(value.value, (ast.Name, ast.Attribute)):
        return None
    return key_text(value.value, facts, depth)


def _single_value(bindings) -> Optional[ast.AST]:
    values = [value for _, value, is_annotation in bindings if not is_annotation and value is not None]
    return values[0] if len(values) == 1 and len(bindings) == 1 else None


def _name_text(node: ast.Name, facts: ModuleFacts, depth: int) -> Optional[str]:
    clients = RedisClients.of_module(facts)
    for scope in clients._scopes_of(node):
        bindings = clients._bindings(scope).get(node.id)
        if bindings:
            value = _single_value(bindings)
            return key_text(value, facts, depth) if value is not None else None
    qualified = facts.qualify(node)
    if qualified and qualified != node.id:
        return _imported_text(qualified, facts, depth)
    return None


def _imported_text(qualified: str, facts: ModuleFacts, depth: int) -> Optional[str]:
    located = definition_facts(qualified, facts)
    if located is None or located[0] is facts:
        return None
    where, name = located
    values = []
    for statement in where.tree.body:
        if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                     for t in statement.targets):
            values.append(statement.value)
        elif (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
              and statement.target.id == name and statement.value is not None):
            values.append(statement.value)
    return key_text(values[0], where, depth) if len(values) == 1 else None


def _member_text(receiver: ast.Name, attr: str, facts: ModuleFacts, depth: int, called: bool) -> Optional[str]:
    """``self.key`` / ``self.key_for()`` / a property: in the class, then in its bases (CLI: in other modules)."""
    cls_node = facts.enclosing_class(receiver)
    where = facts
    for _ in range(4):
        if cls_node is None:
            return None
        text = _text_in_class(cls_node, attr, where, depth, called)
        if text is not None:
            return text
        base = next((b for b in cls_node.bases if isinstance(b, (ast.Name, ast.Attribute))), None)
        if base is None:
            return None
        qualified = where.qualify(base)
        found = definition(qualified, where) if qualified else None
        if found is None or not isinstance(found[0], ast.ClassDef):
            return None
        cls_node, where = found
    return None


def _text_in_class(cls_node: ast.ClassDef, attr: str, facts: ModuleFacts, depth: int, called: bool) -> Optional[str]:
    for statement in cls_node.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == attr:
            is_property = any(_decorator_name(d) in ("property", "cached_property") for d in statement.decorator_list)
            if called == is_property:
                return None
            returns = [n.value for n in walk_no_nested_functions(statement)
                       if isinstance(n, ast.Return) and n.value is not None]
            return key_text(returns[0], facts, depth) if len(returns) == 1 else None
        if not called and isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if any(isinstance(t, ast.Name) and t.id == attr for t in targets) and statement.value is not None:
                return key_text(statement.value, facts, depth)
    if called:
        return None
    values = [value for _, value, is_annotation in RedisClients.of_module(facts)._self_attributes(cls_node).get(attr, [])
              if not is_annotation and value is not None]
    texts = {key_text(v, facts, depth) for v in values}
    return texts.pop() if len(texts) == 1 else None


def _decorator_name(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def key_scope(key: ast.AST, facts: ModuleFacts) -> Tuple[str, int]:
    """Where two spellings of the same key mean the same key: a function, a class (``self.key``), the module."""
    function = facts.enclosing_function(key)
    head = key.func if isinstance(key, ast.Call) else key
    if isinstance(head, ast.Attribute) and isinstance(head.value, ast.Name) and head.value.id in ("self", "cls"):
        cls_node = facts.enclosing_class(key)
        if cls_node is not None:
            return ("class", id(cls_node))
    if isinstance(key, ast.Name) and function is not None and key.id not in _local_names(function, facts):
        return ("module", 0)
    if isinstance(key, ast.Constant):
        return ("module", 0)
    return ("function", id(function))


def _local_names(function: ast.AST, facts: ModuleFacts) -> frozenset:
    def build(_facts: ModuleFacts) -> frozenset:
        names = {a.arg for a in walk(function.args) if isinstance(a, ast.arg)}
        for node in walk_no_nested_functions(function):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
        return frozenset(names)

    return facts.cached(f"local_names:{id(function)}", build)


def canonical_key(key: ast.AST, facts: ModuleFacts) -> ast.AST:
    """``lock_key = self.lock_key_for()`` then ``r.delete(lock_key)``: the local stands for what it was bound to
    once, when that means the same in every method (a constant, ``self.x``, ``self.x()`` with constants)."""
    if not isinstance(key, ast.Name):
        return key
    function = facts.enclosing_function(key)
    if function is None:
        return key
    bindings = RedisClients.of_module(facts)._bindings(function).get(key.id)
    value = _single_value(bindings) if bindings else None
    if value is None:
        return key
    stable = isinstance(value, ast.Constant) or (
        isinstance(value, (ast.Attribute, ast.Call))
        and all(isinstance(n, ast.Constant) or (isinstance(n, ast.Name) and n.id in ("self", "cls"))
                or isinstance(n, (ast.Attribute, ast.Call, ast.Load, ast.expr_context))
                for n in walk(value))
        and any(isinstance(n, ast.Name) and n.id in ("self", "cls") for n in walk(value)))
    return value if stable else key


def key_identity(key: ast.AST, facts: ModuleFacts) -> Tuple[Tuple[str, int], str]:
    key = canonical_key(key, facts)
    return key_scope(key, facts), ast.dump(key)
