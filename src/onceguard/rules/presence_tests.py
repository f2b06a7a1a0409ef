"""How OG608 reads a test of its state: whether a key is there (``key in _seen``, or the entry looked up by it
compared with ``None``), and whether the function that stores an entry hands back what it stored (memoisation)."""
from __future__ import annotations

import ast
from typing import Optional, Set

from ..analysis.facts import FunctionNode, ancestors, statement_list, walk, walk_no_nested_functions
from ..project import process_state as state


def test_of(access: state.Access) -> Optional[ast.AST]:
    """What a deciding access tests; for a returned answer (``return key in self._seen``), the answer."""
    if access.function is None:
        return None
    if isinstance(access.node, ast.Return):
        return access.node.value
    return getattr(access.node, "test", None)


def membership_test(access: state.Access, matcher: state.StateMatcher) -> bool:
    test = test_of(access)
    if test is None:
        return False
    names = matcher.aliases(access.function)
    looked_up = None
    for node in walk(test):
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            if any(matcher.derives(c, names, access.function) for c in node.comparators):
                return True
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)) \
                and isinstance(node.left, ast.Name) and isinstance(node.comparators[0], ast.Constant) \
                and node.comparators[0].value is None:
            # ``entry = _claims.get(key)`` … ``if entry is None:``: whether the key is there, asked of its entry
            if looked_up is None:
                looked_up = _entry_lookups(access.function, matcher, names)
            if node.left.id in looked_up:
                return True
    return False


def _entry_lookups(function: FunctionNode, matcher: state.StateMatcher, names: Set[str]) -> Set[str]:
    """Names ``function`` binds to one entry of the state looked up by its key (``entry = _claims.get(key)``)."""
    return {target.id for node in walk_no_nested_functions(function) if isinstance(node, ast.Assign)
            for value in [node.value.value if isinstance(node.value, ast.Await) else node.value]
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "get"
            and value.args and matcher.derives(value.func.value, names, function)
            for target in node.targets if isinstance(target, ast.Name)}


def hands_back_stored(record: state.Access) -> bool:
    """The function returns what it stored (``_fares[route] = amount`` … ``return amount``, or ``return
    _fares[route]``): a value computed on a miss and kept, memoisation, not a record that the key was seen."""
    node = record.node
    value = getattr(node, "value", None)
    # (spelled as source: the stored place is a Store and the returned one a Load)
    stored = {ast.unparse(_target(node))} | ({value.id} if isinstance(value, ast.Name) else set())
    return any(isinstance(n, ast.Return) and n.value is not None and ast.unparse(n.value) in stored
               for n in walk_no_nested_functions(record.function))



def _target(node: ast.AST) -> ast.AST:
    if isinstance(node, ast.Assign):
        return node.targets[0]
    return getattr(node, "target", node)


def stored_when_absent(record: state.Access, decision: state.Access, matcher: state.StateMatcher) -> bool:
    """``record`` runs only where ``decision`` found the key missing: in the body of ``if key not in d:`` / ``if
    entry is None:``, in the ``else`` of ``if key in d:``, or after ``if key in d: return``. An entry written
    where the key is already there (``if key not in d: return False`` … ``d[key] = limit``) updates it."""
    check = decision.node
    if not isinstance(check, ast.If) or not membership_test(decision, matcher):
        return False
    test, negated = check.test, False
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negated = test.operand, not negated
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    missing_when_true = isinstance(test.ops[0], (ast.NotIn, ast.Is)) != negated
    above = {id(node) for node in ancestors(record.node)}
    if any(id(statement) in above or statement is record.node for statement in check.body):
        return missing_when_true
    if any(id(statement) in above or statement is record.node for statement in check.orelse):
        return not missing_when_true
    siblings = statement_list(check) or []
    bails = bool(check.body) and isinstance(check.body[-1], (ast.Return, ast.Continue, ast.Break, ast.Raise))
    after = siblings[siblings.index(check) + 1:] if check in siblings else []
    if bails and not check.orelse and any(id(statement) in above or statement is record.node for statement in after):
        return not missing_when_true
    return False
