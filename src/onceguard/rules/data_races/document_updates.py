"""OG301 for document stores (MongoDB through pymongo or motor): a field read with ``find_one``, changed in
Python and written back with ``$set``.

``tier = await tiers.find_one({"_id": tid})`` … ``await tiers.update_one({"_id": tid}, {"$set": {"remaining":
tier["remaining"] - n}})``: two replicas that read the same document both write their own result, and one
change is lost. The update operators change the value inside the store (``$inc``, ``$push``), and a filter that
compares the field read (``{"_id": tid, "remaining": {"$gte": n}}``) makes the write conditional: both are safe.
The ``$set`` operator names the store's own update language, so no type of the collection is needed.
"""
from __future__ import annotations

import ast
from typing import Iterator, Set, Tuple

from ...analysis.facts import FunctionNode, ModuleFacts, walk
from .flow import Flow
from .loads import function_nodes, later

#: Calls that read one document.
_READS = frozenset({"find_one", "find_one_and_update", "find_one_and_replace"})
#: Calls that write with an update document (the filter first, the update second).
_UPDATES = frozenset({"update_one", "update_many", "find_one_and_update"})
_SET = "$set"


def document_write_backs(facts: ModuleFacts, changed_in_place) -> Iterator[Tuple[ast.Call, str, ast.Call, bool]]:
    """(update, field, read, a collection) for each ``$set`` of a field to a value computed from a document read
    earlier in the function (directly, or through a method of the same class or a function of the module that
    returns what its ``find_one`` read); ``changed_in_place`` is the stores' test of a value changed in place
    (``stores._changed_in_place``, handed in as ``whole_documents`` is)."""
    for call in facts.calls_named(*_UPDATES):
        if len(call.args) < 2 or not isinstance(call.args[1], ast.Dict):
            continue
        function = facts.enclosing_function(call)
        if function is None:
            continue
        assigned = _set_fields(call.args[1])
        if not assigned:
            continue
        reads = [node for node in function_nodes(function, facts) if isinstance(node, ast.Call)
                 and later(call, node) and _reads_a_document(node, facts)]
        if not reads:
            continue
        read_ids = {id(read) for read in reads}
        flow = Flow(function, facts, lambda n: id(n) in read_ids, at=call)
        compared = _filtered_fields(call.args[0])
        for field, value in assigned:
            if field not in compared and flow.arithmetic(value):
                yield call, field, reads[0], False
                break
            if field not in compared and _changed_copy(value, flow, reads[0], call, function, facts,
                                                       changed_in_place):
                yield call, field, reads[0], True  # (a list or mapping changed: ``$push``/``$pull``, not ``$inc``)
                break


def _changed_copy(value: ast.AST, flow: Flow, read: ast.Call, write: ast.Call, function: FunctionNode,
                 facts: ModuleFacts, changed_in_place) -> bool:
    """What was read, changed in place before the write (``hooks.append(hook)``, ``tags[k] = v``: the stores'
    own test, ``changed_in_place``), or filtered by a comprehension, written out or bound to the name written
    (``hooks = [h for h in hooks if h["id"] != gone]``)."""
    if isinstance(value, ast.Name):
        bindings = [n.value for n in function_nodes(function, facts) if isinstance(n, ast.Assign) and later(write, n)
                    and any(isinstance(t, ast.Name) and t.id == value.id for t in n.targets)]
        if bindings and isinstance(bindings[-1], (ast.ListComp, ast.SetComp, ast.DictComp)):
            value = bindings[-1]
        else:
            return changed_in_place(value, flow, read, write, function, facts) is not None
    if isinstance(value, (ast.ListComp, ast.SetComp, ast.DictComp)):
        return any(flow.reads(generator.iter) for generator in value.generators)
    return False


def _set_fields(update: ast.Dict):
    """(field, value) of the update's ``$set`` document."""
    for key, value in zip(update.keys, update.values):
        if isinstance(key, ast.Constant) and key.value == _SET and isinstance(value, ast.Dict):
            return [(k.value, v) for k, v in zip(value.keys, value.values)
                    if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    return []


def _filtered_fields(query: ast.AST) -> Set[str]:
    """Fields the filter compares: a write only when the stored value is still what was read is a
    compare-and-set."""
    return {key.value for node in walk(query) if isinstance(node, ast.Dict) for key in node.keys
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and not key.value.startswith("$")}


def _reads_a_document(call: ast.Call, facts: ModuleFacts) -> bool:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name in _READS:
        return True
    helper = _local_helper(call, facts)
    return helper is not None and any(
        isinstance(node, ast.Return) and node.value is not None and _returns_a_read(node.value, helper)
        for node in walk(helper))


def _returns_a_read(value: ast.AST, helper: FunctionNode) -> bool:
    """``return doc`` with ``doc = ... find_one(...)``, or ``return await coll.find_one(...)``."""
    read_names = {target.id for node in walk(helper) if isinstance(node, ast.Assign)
                  and any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _READS
                          for n in walk(node.value))
                  for target in node.targets if isinstance(target, ast.Name)}
    return any((isinstance(n, ast.Name) and n.id in read_names)
               or (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _READS)
               for n in walk(value))


def _local_helper(call: ast.Call, facts: ModuleFacts):
    """The def a call of ``self.method(...)`` or of a module function runs, in this module."""
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        cls = facts.enclosing_class(call)
        return next((s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and s.name == func.attr), None) if cls is not None else None
    if isinstance(func, ast.Name):
        return next((f for f in facts.functions_by_name.get(func.id, ())
                     if facts.enclosing_function(f) is None and facts.enclosing_class(f) is None), None)
    return None
