"""OG301 for document stores written whole: a document read, changed in Python and put back entire.

``item = table.get_item(Key=k)["Item"]`` … ``item["balance"] -= amount`` … ``table.put_item(Item=item)`` (DynamoDB),
``doc = ref.get().to_dict()`` … ``ref.set({**doc, "clicks": doc["clicks"] + 1})`` (Firestore),
``doc = es.get(index=i, id=k)["_source"]`` … ``es.index(index=i, id=k, document=doc)`` (Elasticsearch): two replicas
that read the same document each put back their own copy, and the later one erases the other's change.  The read
may be a helper of the module that returns what it read.  A store is recognised by its own calls and by an import
of its client library (in the module; in the project for calls only that store has).
"""
from __future__ import annotations

import ast
from typing import Iterator, Optional, Tuple

from ...analysis.facts import FunctionNode, ModuleFacts, walk
from ...knowledge import orm
from ...knowledge.orm import WholeDocumentStore
from ...project import index as project
from .document_updates import _local_helper as module_helper
from .flow import Flow
from .loads import function_nodes, later


def whole_document_write_backs(facts: ModuleFacts, changed_in_place) -> Iterator[Tuple[ast.Call, ast.Call, str, str]]:
    """(write, read, store, what to use instead) for each document written back whole after a change made in
    Python to what an earlier read of the function returned."""
    for store in orm.WHOLE_DOCUMENT_STORES:
        writes = [call for call in facts.calls_named(*store.writes) if isinstance(call.func, ast.Attribute)]
        if not writes or not _store_in_sight(store, facts):
            continue
        for write in writes:
            function = facts.enclosing_function(write)
            value = _written(write, store)
            if function is None or value is None:
                continue
            reads = [node for node in function_nodes(function, facts) if isinstance(node, ast.Call)
                     and later(write, node) and _reads_a_document(node, store, facts)]
            if not reads:
                continue
            read_ids = {id(read) for read in reads}
            flow = Flow(function, facts, lambda n: id(n) in read_ids, at=write)
            if flow.arithmetic(value) or changed_in_place(value, flow, reads[0], write, function, facts):
                yield write, reads[0], store.name, store.instead


def _store_in_sight(store: WholeDocumentStore, facts: ModuleFacts) -> bool:
    """The module imports the store's client (``google.cloud.firestore``, not any ``google`` package); for a store
    whose calls are its own (``get_item``/``put_item``), any file of the project that names its client will do."""
    if any(target == module or target.startswith(module + ".")
           for module in store.modules for target in facts.imports.aliases.values()):
        return True
    if not (store.distinctive and facts.context.cross_file):
        return False
    root = project.search_root(facts)
    return any(project.files_mentioning(module, root) for module in store.modules)


def _written(write: ast.Call, store: WholeDocumentStore) -> Optional[ast.AST]:
    keyword, position = store.writes[write.func.attr]
    for k in write.keywords:
        if k.arg in (keyword, orm.DOCUMENT_BODY_KEYWORD) and k.arg is not None:
            return k.value
    return write.args[position] if position is not None and len(write.args) > position else None


def _reads_a_document(call: ast.Call, store: WholeDocumentStore, facts: ModuleFacts) -> bool:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in store.reads:
        return True
    helper = _local_helper(call, facts)
    return helper is not None and any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in store.reads
        for node in walk(helper)) and any(isinstance(node, ast.Return) and node.value is not None
                                          for node in walk(helper))


def _local_helper(call: ast.Call, facts: ModuleFacts) -> Optional[FunctionNode]:
    """The def a call runs in this module: a module function or ``self.method`` (as the ``$set`` write-backs read
    them), or a method of a module-level instance (``store.load(key)``)."""
    found = module_helper(call, facts)
    if found is None and isinstance(call.func, ast.Attribute):
        found = facts.module_method(call.func)
    return found
