"""Read-modify-write through a project's own keyed store: ``store.get_report(rid)``, the record merged or
changed in Python, ``store.upsert_report(rid, merged)``.

The read and the write are two calls on one store object for one key; whatever the store keeps (a table, a
file, a document database, a remote cache), a writer that reads the same key between them loses its change
to this write.  The pair is recognised by its verbs and its shared noun (``get_``/``load_``/``fetch_`` then
``set_``/``put_``/``upsert_``/``save_``/..., or the bare noun then its write: ``remaining`` then
``set_remaining``), the same receiver and the same key, and by the value written
being computed from the value read: the data flow is the evidence, not the names.
"""
from __future__ import annotations

import ast
from typing import Iterable, List, Optional, Tuple

from ...analysis.facts import FunctionNode, ModuleFacts, in_exclusive_branches, walk, walk_no_nested_functions
from ...model import Diagnostic
from ...project.claims import one_runner_reaches
from ...project.redis_clients import _method
from ...project.subclasses import overrides
from ...project.summaries import _is_stub, _local_receiver as local_receiver, _method_of as method_of, instance_class
from ..redis_leases import redis_call, short
from .flow import Flow, _merged, plain_name
from .loads import function_nodes, later
from .stores import _changed_in_place, _in_process_only

#: Verbs of a store method that returns a stored record by key, and of one that stores a record by key.
READ_VERBS = ("get", "load", "fetch", "read", "find")
WRITE_VERBS = ("set", "put", "upsert", "save", "store", "update", "write", "replace")


def _verb_and_noun(method: str, verbs: Tuple[str, ...], bare: bool = False) -> Optional[str]:
    """The noun after the verb (``get_report`` -> ``report``); with ``bare``, "" for the verb alone (``load``)."""
    for verb in verbs:
        if method.startswith(verb + "_") and len(method) > len(verb) + 1:
            return method[len(verb) + 1:]
        if bare and method == verb:
            return ""
    return None


def _project_store_pair(read: ast.Call, write: ast.Call, function: FunctionNode, facts: ModuleFacts) -> bool:
    """``self._store.load(k)`` then ``self._store.save(k, doc)`` with no noun to pair them: the pair counts
    when the receiver is an instance of a project class that writes both methods itself, and whose write does
    not keep the record in the object's own memory (a dict, a list, another library's object stays unknown)."""
    owner = instance_class(write.func.value, facts, function)
    if owner is None:
        return False
    cls, where = owner
    methods = [method_of(cls, where, call.func.attr) for call in (read, write)]
    if any(found is None for found in methods):
        return False
    saver, saver_facts = methods[1]
    if _is_stub(saver):
        # An interface's write: where the record goes is each implementation's.  With none in the project the
        # store is not one the project is shown to write; with some, it keeps records when one of them does
        # more than keep the record in its object's own memory.
        implementations = [(d, f) for d, f, _ in overrides((saver_facts.enclosing_class(saver), saver_facts),
                                                            saver, method_of) if not _is_stub(d)]
        return any(not _stores_in_class_container(d, f.enclosing_class(d), f) for d, f in implementations)
    return not _stores_in_class_container(saver, saver_facts.enclosing_class(saver), saver_facts)


def _key(call: ast.Call) -> Optional[str]:
    """The key a store call names: its first positional argument, or a keyword that says it is one."""
    if call.args and not isinstance(call.args[0], ast.Starred):
        return ast.dump(call.args[0])
    for keyword in call.keywords:
        if keyword.arg and (keyword.arg in ("key", "id", "pk", "name") or keyword.arg.endswith("_id")):
            return ast.dump(keyword.value)
    return None


def _written_values(call: ast.Call) -> List[ast.AST]:
    return list(call.args[1:]) + [k.value for k in call.keywords if k.arg and not (
        k.arg in ("key", "id", "pk", "name") or k.arg.endswith("_id"))]


def keyed_round_trips(function: FunctionNode, facts: ModuleFacts) -> Iterable[Tuple[ast.Call, ast.Call, ast.AST]]:
    """(read, write, where the value read is changed) for each store write in ``function`` whose value is
    computed from a read of the same key through the same receiver earlier in the function."""
    reads: List[Tuple[ast.Call, str, str, str]] = []
    nodes = function_nodes(function, facts)
    # A read may be the bare noun a write of the function names (``ledger.remaining(...)`` before
    # ``ledger.set_remaining(...)``): the write's verb says what the pair is.
    written = {noun for node in nodes if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               for noun in [_verb_and_noun(node.func.attr, WRITE_VERBS)] if noun is not None}
    for node in nodes:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        # The verbs first: most calls are neither a read nor a write, and the Redis lookup below (the
        # client's origin, through other modules) costs more than every other test together.
        read_noun = _verb_and_noun(node.func.attr, READ_VERBS, bare=True)
        if read_noun is None and node.func.attr in written:
            read_noun = node.func.attr
        noun = read_noun if read_noun is not None else _verb_and_noun(node.func.attr, WRITE_VERBS, bare=True)
        if noun is None:
            continue
        receiver = plain_name(node.func.value)
        key = _key(node)
        if receiver is None or key is None or _in_process_only(node) or not _receiver_seen(receiver, function, facts):
            continue
        # (a bare verb -- ``get``, ``update`` -- is on most dicts: its Redis lookup waits for a pair to judge)
        if noun and redis_call(node, facts) is not None:
            continue  # a Redis client or cache (wrapper): the store checks judge it by its commands
        if read_noun is not None:
            reads.append((node, receiver, noun, key))
            continue
        matching = [read for read, r, n, k in reads
                    if (r, k) == (receiver, key) and n in ((noun, noun + "s", noun + "es") if noun else ("",))
                    and later(node, read) and not in_exclusive_branches(read, node)]
        if not matching:
            continue
        if not noun and (not _project_store_pair(matching[-1], node, function, facts)
                         or redis_call(node, facts) is not None):
            continue  # a bare ``get`` then ``set``: only a store the project writes is known to keep records
        if receiver == "self" and _stores_in_own_container(node.func.attr, function, facts):
            continue  # the record is this object's own memory: no other replica stores it
        read_ids = {id(read) for read in matching}
        flow = Flow(function, facts, lambda n, ids=read_ids: id(n) in ids, at=node)
        for value in _written_values(node):
            if flow.arithmetic(value) or _merged(value, flow.reads_here):
                yield matching[-1], node, node
                break
            if _merged_through_local(value, flow):
                yield matching[-1], node, _last_assignment(value.id, node, function, facts) or node
                break
            changed = _changed_in_place(value, flow, matching[-1], node, function, facts)
            if changed is not None:
                yield matching[-1], node, changed
                break


#: Builtins a stored value may be handed to on its way into a container (size and type checks).
_LOOKS = frozenset({"len", "str", "repr", "isinstance", "type", "hash", "id", "bool", "sys.getsizeof"})


def _stores_in_own_container(method_name: str, function: FunctionNode, facts: ModuleFacts) -> bool:
    """``self.set_x(key, value)`` where the class's own ``set_x`` puts the value into a container the object
    made itself (``self.entries[key] = value`` after ``self.entries = {}``) and hands it to nothing but its
    own methods and size checks: the record lives in this process, whatever the method is called."""
    cls = facts.enclosing_class(function)
    method = _method(cls, method_name) if cls is not None else None
    if method is None:
        return False
    return _stores_in_class_container(method, cls, facts)


def _stores_in_class_container(method: FunctionNode, cls: Optional[ast.ClassDef], facts: ModuleFacts) -> bool:
    """``method`` (of ``cls``) puts the value it is handed after the key into a container the object made
    itself, and hands it to nothing but its own methods and size checks."""
    if cls is None:
        return False
    parameters = [a.arg for a in method.args.posonlyargs + method.args.args][2:]  # after self and the key
    if not parameters:
        return False
    stored = False
    for node in walk_no_nested_functions(method):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in parameters:
            stored = stored or any(isinstance(target, ast.Subscript) and local_receiver(target.value, method, facts)
                                   for target in node.targets)
        elif isinstance(node, ast.Call) and any(isinstance(n, ast.Name) and n.id in parameters
                                                for argument in node.args + [k.value for k in node.keywords]
                                                for n in walk(argument)):
            func = node.func
            own_method = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id == "self"
            if not own_method and (facts.callee(node) or "") not in _LOOKS:
                return False  # the value goes somewhere the class does not show
    return stored


def _last_assignment(name: str, before: ast.AST, function: FunctionNode, facts: ModuleFacts) -> Optional[ast.AST]:
    found = None
    for node in function_nodes(function, facts):
        if isinstance(node, ast.Assign) and later(before, node) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets):
            found = node
    return found


def _receiver_seen(receiver: str, function: FunctionNode, facts: ModuleFacts) -> bool:
    """Where the store object comes from is written down: an import, a module-level object, an attribute of
    ``self``, a local bound in the function, or an annotated parameter.  An unannotated parameter may be any
    object (a dict wrapper in this process) and proves nothing."""
    head = receiver.split(".", 1)[0]
    arguments = function.args
    for argument in arguments.posonlyargs + arguments.args + arguments.kwonlyargs:
        if argument.arg == head:
            return head in ("self", "cls") or argument.annotation is not None
    return True


def _merged_through_local(value: ast.AST, flow: Flow) -> bool:
    """``updated = {**existing, ...}`` then ``upsert(key, updated)``: the local holds the merge."""
    return isinstance(value, ast.Name) and value.id in flow.tainted and value.id in flow.merged


class KeyedStoreChecks:
    """OG301 on a project's keyed store (mixed into the rule)."""

    def _keyed_stores(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        functions = {}
        for call in facts.calls:
            if isinstance(call.func, ast.Attribute) and _verb_and_noun(call.func.attr, WRITE_VERBS, bare=True) \
                    is not None:
                function = facts.enclosing_function(call)
                if function is not None:
                    functions.setdefault(id(function), function)
        for function in functions.values():
            for read, write, changed in keyed_round_trips(function, facts):
                if one_runner_reaches(facts.statement_of(read), facts):
                    continue  # one replica at a time runs it: the claim serialises the read and the write
                yield self.finding(
                    changed,
                    f"The record `{short(read, 40)}` read on line {read.lineno} is stored again whole by "
                    f"`{short(write, 50)}`, so another replica's change to it in between is overwritten.",
                    f"The record is changed in Python and written back whole on line {write.lineno}, over whatever "
                    "another replica (or request) stored for the same key since the read. Make the read and the write one step the store serialises: a conditional write that matches a "
                    "version read with the record (and a retry when it no longer matches), a row lock or "
                    "transaction around both, or a store method that changes only the fields given "
                    "(`UPDATE ... SET field = :value`, `jsonb_set`, a document `$set`).",
                )
