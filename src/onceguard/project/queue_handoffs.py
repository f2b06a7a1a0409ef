"""Work handed on through an in-process queue.

A function that puts items into a queue its process made (``queue.Queue``, ``asyncio.Queue``, ...) hands them to
whatever takes them from that queue: a worker thread of the same class (``self.jobs.get()``), a worker loop of the
same module (a module-level queue), or the function a thread or task was started on with the queue as an argument.
What those consumers do with an item is the producer's work, done later by another thread or task of the same
process; a rule that follows rows into the work done on them follows them through the queue too.
"""

import ast
from typing import Iterator, List, Optional, Tuple

from ..analysis.facts import FunctionNode, ModuleFacts, parent, walk
from ..analysis.names import dotted
from ..knowledge.process_state import IN_PROCESS_QUEUES, QUEUE_PUTS, QUEUE_TAKES

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)

#: (the consumer, its module, the call that takes an item from the queue)
Consumer = Tuple[FunctionNode, ModuleFacts, ast.Call]


def queue_put(node: ast.AST) -> Optional[ast.Call]:
    """The call when ``node`` puts an item into a queue-like receiver (``q.put(x)``, ``self.jobs.put_nowait(x)``)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in QUEUE_PUTS \
            and node.args:
        return node
    return None


def consumers(put: ast.Call, function: FunctionNode, facts: ModuleFacts) -> List[Consumer]:
    """The functions that take what ``put`` puts, when its receiver is a queue the process made: the methods of
    ``function``'s class that take from the same ``self`` attribute, the functions of the module that take from
    the same module-level queue, or, for a queue made in ``function``, the functions it hands that queue to."""
    receiver = put.func.value  # type: ignore[attr-defined]
    if isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) and receiver.value.id == "self":
        owner = facts.enclosing_class(function)
        if owner is None or not _class_makes_queue(owner, receiver.attr, facts):
            return []
        return [(method, facts, take) for method in _methods(owner)
                for take in _takes(method, lambda r: _is_self_attribute(r, receiver.attr))]
    if not isinstance(receiver, ast.Name):
        return []
    name = receiver.id
    if _made_in(function, name, facts):
        return list(_handed_to(function, name, facts))
    if _made_in(facts.tree, name, facts, top_level=True):
        return [(other, facts, take) for other in facts.functions
                for take in _takes(other, lambda r: isinstance(r, ast.Name) and r.id == name)]
    return []


def _is_self_attribute(node: ast.AST, attr: str) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.value, ast.Name)
            and node.value.id == "self")


def _methods(owner: ast.ClassDef) -> Iterator[FunctionNode]:
    return (statement for statement in owner.body if isinstance(statement, _FUNCTIONS))


def _takes(function: FunctionNode, is_queue) -> Iterator[ast.Call]:
    for node in walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in QUEUE_TAKES \
                and is_queue(node.func.value):
            yield node


def _makes_queue(value: Optional[ast.AST], facts: ModuleFacts) -> bool:
    return isinstance(value, ast.Call) and (facts.qualify(value.func) or "") in IN_PROCESS_QUEUES


def _declares_queue(annotation: Optional[ast.AST], facts: ModuleFacts) -> bool:
    if annotation is None:
        return False
    head = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    return (facts.qualify(head) or dotted(head) or "") in IN_PROCESS_QUEUES


def _class_makes_queue(owner: ast.ClassDef, attr: str, facts: ModuleFacts) -> bool:
    """A method of the class binds ``self.<attr>`` to a new queue (or declares it one)."""
    for method in _methods(owner):
        for node in walk(method):
            if isinstance(node, ast.Assign) and any(_is_self_attribute(t, attr) for t in node.targets):
                if _makes_queue(node.value, facts):
                    return True
            elif isinstance(node, ast.AnnAssign) and _is_self_attribute(node.target, attr):
                if _makes_queue(node.value, facts) or _declares_queue(node.annotation, facts):
                    return True
    return False


def _made_in(scope: ast.AST, name: str, facts: ModuleFacts, top_level: bool = False) -> bool:
    statements = scope.body if top_level else list(walk(scope))  # type: ignore[attr-defined]
    for node in statements:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            if _makes_queue(node.value, facts):
                return True
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            if _makes_queue(node.value, facts) or _declares_queue(node.annotation, facts):
                return True
    return False


def _handed_to(function: FunctionNode, name: str, facts: ModuleFacts) -> Iterator[Consumer]:
    """The functions of the module ``function`` starts or calls with the queue ``name`` as an argument
    (``Thread(target=work, args=(q,))``, ``create_task(work(q))``, ``pool.submit(work, q)``), each taking from
    the parameter the queue arrives in."""
    for node in walk(function):
        if not isinstance(node, ast.Call):
            continue
        for target, position, keyword in _started_with(node, name):
            for consumer in _module_functions(target, facts):
                parameter = _parameter(consumer, position, keyword)
                if parameter is None:
                    continue
                for take in _takes(consumer, lambda r, p=parameter: isinstance(r, ast.Name) and r.id == p):
                    yield consumer, facts, take


def _started_with(call: ast.Call, name: str) -> Iterator[Tuple[ast.AST, Optional[int], Optional[str]]]:
    """(the callable, the position or keyword the queue takes in its call) for each way ``call`` runs a
    callable with ``name`` as an argument."""
    def position_in(arguments: List[ast.expr]) -> Optional[int]:
        return next((i for i, a in enumerate(arguments) if isinstance(a, ast.Name) and a.id == name), None)

    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    # the call itself: ``work(q)`` or ``create_task(work(q))`` (the inner call)
    at = position_in(call.args)
    if at is not None:
        yield call.func, at, None
        if call.args and at > 0:
            yield call.args[0], at - 1, None  # ``pool.submit(work, q)``, ``loop.run_in_executor(None, work, q)``
            if len(call.args) > 1 and at > 1:
                yield call.args[1], at - 2, None
    for keyword in call.keywords:
        if isinstance(keyword.value, ast.Name) and keyword.value.id == name and keyword.arg:
            yield call.func, None, keyword.arg
    # ``Thread(target=work, args=(q,))`` / ``Process(target=work, kwargs={"jobs": q})``
    target, handed = keywords.get("target"), keywords.get("args")
    if target is not None and isinstance(handed, (ast.Tuple, ast.List)):
        at = position_in(list(handed.elts))
        if at is not None:
            yield target, at, None
    handed_keywords = keywords.get("kwargs")
    if target is not None and isinstance(handed_keywords, ast.Dict):
        for key, value in zip(handed_keywords.keys, handed_keywords.values):
            if isinstance(key, ast.Constant) and isinstance(value, ast.Name) and value.id == name:
                yield target, None, key.value


def _module_functions(target: ast.AST, facts: ModuleFacts) -> List[FunctionNode]:
    if isinstance(target, ast.Name):
        return [f for f in facts.functions_by_name.get(target.id, ()) if facts.enclosing_class(f) is None]
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        return [f for f in facts.functions_by_name.get(target.attr, ()) if facts.enclosing_class(f) is not None]
    return []


def _parameter(function: FunctionNode, position: Optional[int], keyword: Optional[str]) -> Optional[str]:
    arguments = function.args
    names = [a.arg for a in arguments.posonlyargs + arguments.args]
    if names and names[0] in ("self", "cls") and isinstance(parent(function), ast.ClassDef):
        names = names[1:]
    if keyword is not None:
        return keyword if keyword in names or keyword in [a.arg for a in arguments.kwonlyargs] else None
    if position is not None and position < len(names):
        return names[position]
    return None
