"""What a test decides, and where a function's answer is tested.

A container's membership test (``if key in _seen: return``), or a method that answers from it, decides
whether work happens: ``decided_work`` is the work a test lets through, ``acts_on_answer`` whether a caller
does something that leaves the process on the answer it is given.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, FrozenSet, List, Optional

from ..analysis.facts import ModuleFacts, ancestors, parent, walk, walk_no_nested_functions
from ..analysis.names import dotted

if TYPE_CHECKING:  # (process_state imports this module)
    from .process_state import Access, StateMatcher

# ------------------------------------------------------------------------------------------------
# What a test decides, and where a function's answer is tested
# ------------------------------------------------------------------------------------------------
def decided_work(node: ast.AST, answers_exit: bool = False) -> Optional[List[ast.AST]]:
    """The statements a test decides: its branches, and what follows it in the same block when a branch leaves
    early (``if key in _seen: return`` … the work).  None when the test is not a statement, or when a branch
    returns a value or raises: then the decision goes back to the caller (``if token in _used: return False``)
    and what it decides is not here to judge; with ``answers_exit`` (the test is where the caller acts on an
    answer) those leave early too."""
    if not isinstance(node, (ast.If, ast.While)):
        return None
    branches = [*node.body, *node.orelse]
    exits = False
    for statement in branches:
        for part in [statement, *walk_no_nested_functions(statement)]:
            if not answers_exit and (isinstance(part, ast.Raise)
                                     or (isinstance(part, ast.Return) and part.value is not None)):
                return None
            exits = exits or isinstance(part, (ast.Return, ast.Continue, ast.Break, ast.Raise))
    if not exits:
        return branches
    return branches + following_statements(node)


def following_statements(node: ast.stmt) -> List[ast.stmt]:
    """The statements after ``node`` in its block."""
    above = parent(node)
    for field_name in ("body", "orelse", "finalbody"):
        block = getattr(above, field_name, None)
        for index, statement in enumerate(block if isinstance(block, list) else ()):
            if statement is node:
                return block[index + 1:]
    return []


def yields_items(work: List[ast.AST]) -> bool:
    """The work hands items out with ``yield`` (a generator that filters what it is given: ``if refund["ref"] in
    _done: continue`` … ``yield refund``): what is done with each item is its consumer's."""
    return any(isinstance(part, (ast.Yield, ast.YieldFrom)) and part.value is not None
               for statement in work for part in [statement, *walk_no_nested_functions(statement)])


def _loop_over(call: ast.Call) -> Optional[ast.AST]:
    """The ``for`` loop whose iterable is what ``call`` returns (``for refund in fresh(batch):``)."""
    statement = ModuleFacts.statement_of(call)
    if isinstance(statement, (ast.For, ast.AsyncFor)) and _unawaited(statement.iter) is call:
        return statement
    return None


def answer_test(call: ast.Call, facts: ModuleFacts) -> Optional[ast.AST]:
    """The ``if``/``while`` of the caller that tests what ``call`` answers: the call in its test
    (``if not store.first_time(key):``), or a local bound to the answer and tested after
    (``fresh = store.first_time(key)`` … ``if not fresh:``)."""
    statement = ModuleFacts.statement_of(call)
    if isinstance(statement, (ast.If, ast.While)) and any(part is call for part in walk(statement.test)):
        return statement
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name) and _unawaited(statement.value) is call):
        return None
    name = statement.targets[0].id
    function = facts.enclosing_function(call)
    if function is None:
        return None
    for node in facts.own_nodes(function, (ast.If, ast.While)):
        if node.lineno > statement.lineno and any(isinstance(part, ast.Name) and part.id == name
                                                  for part in walk(node.test)):
            return node
    return None


def answer_dropped(call: ast.Call) -> bool:
    """``store.first_time(key)`` as a statement of its own: the caller does not look at the answer."""
    statement = ModuleFacts.statement_of(call)
    return isinstance(statement, ast.Expr) and _unawaited(statement.value) is call


def answers_membership(access: Access, matcher: StateMatcher) -> bool:
    """``return key in self._seen`` (also negated, or one part of ``and``/``or``): the function answers whether
    a key is marked, and its caller decides on the answer."""
    if not isinstance(access.node, ast.Return) or access.function is None:
        return False
    names = matcher.aliases(access.function)
    pending = [access.node.value]
    while pending:
        value = pending.pop()
        if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
            pending.append(value.operand)
        elif isinstance(value, ast.BoolOp):
            pending.extend(value.values)
        elif isinstance(value, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in value.ops) \
                and any(matcher.derives(c, names, access.function) for c in value.comparators):
            return True
    return False


def acts_on_answer(call: ast.Call, facts: ModuleFacts, fills: FrozenSet[str] = frozenset()) -> bool:
    """The caller of a marker's method acts on its answer: it tests what ``call`` answers and what the test
    decides leaves the process (``if not seen_events.first_time(event_id): return`` … ``credit_delivery(...)``);
    when another function fills the marker (``fills``: ``store.seen(key)`` … ``store.remember(key)``), the
    caller calls it too.  An answer thrown away decides nothing; one passed on (returned, summed) is not
    followed and counts as deciding; the marker's own bookkeeping on the same object is no work."""
    from ..analysis.facts import call_name
    from .summaries import summaries_for

    if answer_dropped(call):
        return False
    # (a filter's answer is the items it yields: the loop over them does the work it decides)
    loop = _loop_over(call)
    test = loop or answer_test(call, facts)
    if test is None:
        return True
    caller = facts.enclosing_function(call)
    if caller is None:
        return False
    if fills and not any(facts.enclosing_function(other) is caller for other in facts.calls_named(*fills)):
        return False
    work = loop.body if loop is not None else decided_work(test, answers_exit=True) or []
    if loop is None and _answers_the_request(test, caller):
        return True
    receiver = dotted(call.func.value) if isinstance(call.func, ast.Attribute) else None
    own = {id(part) for statement in work for part in walk(statement)
           if isinstance(part, ast.Call) and ((receiver and isinstance(part.func, ast.Attribute)
                                               and dotted(part.func.value) == receiver)
                                              or call_name(part) in fills)}
    return not summaries_for(facts).effects_of(work, caller, facts, skip=own).process_only


def _answers_the_request(test: ast.AST, caller: ast.AST) -> bool:
    """The branch the answer decides ends the caller with a value or an error (``if is_revoked(jti): return
    _unauthorized(...)``, ``raise PermissionDenied``): what the client is told depends on it, and another replica,
    asked the same, tells it otherwise."""
    branch = test if isinstance(test, (ast.If, ast.While)) else None
    if branch is None:
        return False
    for statement in branch.body:
        for node in [statement, *walk(statement)]:
            if isinstance(node, ast.Raise) or (isinstance(node, ast.Return) and node.value is not None
                                               and not (isinstance(node.value, ast.Constant)
                                                        and node.value.value is None)):
                return True
    return False


def in_loop_over_state(access: Access, matcher: StateMatcher) -> bool:
    """``access`` sits in a loop over the state itself (``for key, at in list(self._seen.items()):`` … ``del
    self._seen[key]``), or in a loop that takes the key it drops from the state's own entries (``while
    self._seen: key, at = next(iter(self._seen.items()))`` … ``del self._seen[key]``): entries dropped as the
    loop finds them old, not one key's work ending."""
    if access.function is None:
        return False
    names = matcher.aliases(access.function)
    for above in ancestors(access.node):
        if above is access.function:
            return False
        if isinstance(above, (ast.For, ast.AsyncFor)) and matcher.touches(above.iter, names, access.function):
            return True
        if isinstance(above, ast.While) and _key_read_from_state(access, above, matcher, names):
            return True
    return False


def _key_read_from_state(access: Access, loop: ast.While, matcher: StateMatcher, names) -> bool:
    """The key ``access`` removes (``del d[key]``, ``d.pop(key)``) is a name ``loop`` binds from the state itself."""
    node = access.node
    if isinstance(node, ast.Expr):
        node = node.value
    if isinstance(node, ast.Delete) and node.targets and isinstance(node.targets[0], ast.Subscript):
        key = node.targets[0].slice
    elif isinstance(node, ast.Call) and node.args:
        key = node.args[0]
    else:
        return False
    if not isinstance(key, ast.Name):
        return False
    for statement in walk_no_nested_functions(loop):
        if isinstance(statement, ast.Assign) and any(
                isinstance(n, ast.Name) and n.id == key.id for target in statement.targets for n in walk(target)) \
                and matcher.touches(statement.value, names, access.function):
            return True
    return False


def _unawaited(value: ast.AST) -> ast.AST:
    while isinstance(value, ast.Await):
        value = value.value
    return value


def enclosing_statement_list(node: ast.AST) -> List[ast.stmt]:
    above = parent(node)
    return getattr(above, "body", []) if above is not None else []


