"""Read-modify-write on a shared store outside the database: Redis commands, cache wrappers and
project classes whose items live in a Redis hash."""
from __future__ import annotations

import ast
from typing import Iterable, Iterator, List, Optional, Set

from ...project import index as project
from ...project.redis_clients import json_module_of
from ...analysis.facts import FunctionNode, ModuleFacts, ancestors, in_exclusive_branches, parent, walk
from ...analysis.handed import argument_for, positional_parameters, switched_on
from ...knowledge import redis_clients as redis_known
from ...model import Diagnostic
from ..redis_leases import _client_calls, argument, has_spread, key_argument, per_process, redis_call, short
from .loads import _ARITHMETIC, function_nodes, later, target_names, unwrap
from .document_updates import document_write_backs
from .whole_documents import whole_document_write_backs
from .flow import Flow, _IN_PLACE, _is_name, _subscript_root


#: Hash commands that show a class's ``__setitem__`` writes a Redis hash field.
_HASH_WRITES = frozenset({"hset", "hsetnx", "hmset"})


def _reads_of_key(function: FunctionNode, facts: ModuleFacts, key_dump: str, field_dump: Optional[str],
                  spelled=ast.dump) -> Iterator[ast.Call]:
    """The Redis reads in ``function`` of the key (and field) ``key_dump`` (``field_dump``) spells, each argument
    spelled by ``spelled`` (``ast.dump``, or with a helper's parameters read as what its caller hands in)."""
    for command, (key_arg, field_arg) in redis_known.READS.items():
        if (field_arg is None) != (field_dump is None):
            continue
        for read in facts.calls_named(command):
            if facts.enclosing_function(read) is not function:
                continue
            handle = redis_call(read, facts)
            read_key = key_argument(read, handle, key_arg) if handle is not None else None
            read_field = argument(read, field_arg) if field_arg else None
            if read_key is not None and spelled(read_key) == key_dump and (
                    field_dump is None or (read_field is not None and spelled(read_field) == field_dump)):
                yield read


def _returns_read(target: FunctionNode, target_facts: ModuleFacts, call: ast.Call, key_dump: str,
                  field_dump: Optional[str]) -> bool:
    """``target`` returns what it reads with a Redis read of the key (and field) the caller's write names, once
    its parameters are read as the arguments ``call`` hands in."""
    if not any(isinstance(node, ast.Return) and node.value is not None for node in walk(target)):
        return False
    handed = {parameter: argument_for(call, target, parameter) for parameter in positional_parameters(target)}
    return next(_reads_of_key(target, target_facts, key_dump, field_dump, lambda e: _as_handed(e, handed)),
                None) is not None


def _as_handed(expr: ast.AST, handed: dict) -> str:
    """``ast.dump`` of ``expr`` with each parameter replaced by the argument handed for it."""
    if isinstance(expr, ast.Name) and handed.get(expr.id) is not None:
        return ast.dump(handed[expr.id])
    return ast.dump(expr)


def _remote_dict_names(facts: ModuleFacts) -> Set[str]:
    """Module-level names bound (in some branch) to an instance of a project class whose ``__setitem__``
    writes a Redis hash: item assignment there is a network write other replicas see."""
    def build(_facts: ModuleFacts) -> Set[str]:
        names: Set[str] = set()
        for statement in facts.assigns:
            if not isinstance(statement, ast.Assign) or facts.enclosing_function(statement) is not None:
                continue
            value = statement.value
            if not isinstance(value, ast.Call):
                continue
            qualified = facts.callee(value)
            if not qualified or not qualified.rsplit(".", 1)[-1][:1].isupper():
                continue  # only a class makes an instance with ``__setitem__``
            if not _setitem_writes_hash(qualified, facts):
                continue
            names.update(t.id for t in statement.targets if isinstance(t, ast.Name))
        return names

    return facts.cached("remote_dict_names", build)


def _setitem_writes_hash(qualified: str, facts: ModuleFacts) -> bool:
    if "." not in qualified:
        method = None
        for cls in facts.classes:
            if cls.name == qualified:
                method = next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__setitem__"),
                              None)
        found = (method, facts) if method is not None else None
    elif facts.context.cross_file:
        found = project.find_function(f"{qualified}.__setitem__", facts.config, project.roots_for(facts))
    else:
        found = None  # (a class of another module: read with the project, not by a file judged alone)
    if found is None:
        return False
    method, where = found
    for node in walk(method):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _HASH_WRITES or (
                    node.func.attr in redis_known.WRITES and redis_call(node, where) is not None):
                return True
    return False


def _remote_read_back(assign: ast.Assign, name: str, key: ast.AST, function: FunctionNode,
                      facts: ModuleFacts) -> Optional[ast.AST]:
    """The read of ``name[key]`` the assigned value was built from: ``{**name.get(key), ...}`` in the value
    itself, or a local taken from ``name.get(key)`` / ``name[key]`` / ``for key, local in name.items()`` and
    changed in place before being put back."""
    key_text = ast.unparse(key)

    def reads_entry(node: ast.AST) -> Optional[ast.AST]:
        for n in walk(node):
            if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get"
                    and isinstance(n.func.value, ast.Name) and n.func.value.id == name and n.args
                    and ast.unparse(n.args[0]) == key_text):
                return n
            if (isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load) and isinstance(n.value, ast.Name)
                    and n.value.id == name and ast.unparse(n.slice) == key_text):
                return n
        return None

    value = assign.value
    direct = reads_entry(value)
    if direct is not None and not isinstance(unwrap(value), (ast.Call, ast.Subscript)):
        return direct
    if not isinstance(value, ast.Name):
        return None
    local = value.id
    origin: Optional[ast.AST] = None
    changed = False
    for node in function_nodes(function, facts):
        if not isinstance(node, ast.stmt) or not later(assign, node):
            continue
        if isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.target, ast.Tuple) and len(
                node.target.elts) == 2 and isinstance(node.target.elts[1], ast.Name) and node.target.elts[1].id == local:
            iterated = node.iter.args[0] if isinstance(node.iter, ast.Call) and node.iter.args else node.iter
            if (isinstance(iterated, ast.Call) and isinstance(iterated.func, ast.Attribute)
                    and iterated.func.attr == "items" and isinstance(iterated.func.value, ast.Name)
                    and iterated.func.value.id == name and ast.unparse(node.target.elts[0]) == key_text):
                origin, changed = node, False
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == local for t in node.targets):
            read = reads_entry(node.value)
            origin, changed = (read, False) if read is not None else (None, False)
        elif origin is not None and _changes_local(node, local):
            changed = True
    return origin if changed else None


def _changes_local(statement: ast.stmt, local: str) -> bool:
    if isinstance(statement, ast.Delete):
        return any(isinstance(t, ast.Subscript) and isinstance(_subscript_root(t), ast.Name)
                   and _subscript_root(t).id == local for t in statement.targets)
    if isinstance(statement, (ast.Assign, ast.AugAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        return any(isinstance(t, ast.Subscript) and isinstance(_subscript_root(t), ast.Name)
                   and _subscript_root(t).id == local for t in targets)
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        func = statement.value.func
        return (isinstance(func, ast.Attribute) and func.attr in _IN_PLACE
                and isinstance(_subscript_root(func.value), ast.Name) and _subscript_root(func.value).id == local)
    return False


#: Keywords by which a call on a two-level cache wrapper says it stays in this process's memory
#: (``cache.set_cache(key=k, value=v, local_only=True)``): each replica keeps its own copy on purpose.
_IN_PROCESS_KEYWORDS = frozenset({"local_only", "in_memory_only", "local"})


def _in_process_only(call: ast.Call) -> bool:
    return any(kw.arg in _IN_PROCESS_KEYWORDS and isinstance(kw.value, ast.Constant) and kw.value.value is True
               for kw in call.keywords)


def _changed_in_place(value: ast.AST, flow: Flow, read: ast.Call, write: ast.Call, function: FunctionNode,
                      facts: ModuleFacts) -> Optional[ast.AST]:
    """The first change, between the read and the write, to the object read or to a part of it reached through
    a local (``entry = data.get(k)``, ``for k, entry in data.items()``): an item set or counted, a key deleted,
    a list or dict grown in place.  The write then sends back the whole object, other writers' changes lost."""
    value = unwrap(value)
    if isinstance(value, ast.Call) and len(value.args) == 1 and isinstance(value.args[0], ast.Name):
        value = value.args[0]  # ``json.dumps(data)``: the object serialised on the way back
    if not (isinstance(value, ast.Name) and value.id in flow.tainted):
        return None
    if _made_afresh(value.id, read, write, function, facts, flow.tainted):
        return None
    aliases = {value.id}
    nodes = [n for n in function_nodes(function, facts)
             if isinstance(n, ast.stmt) and later(n, read) and later(write, n) and not in_exclusive_branches(n, write)]
    for node in function_nodes(function, facts):
        if not isinstance(node, ast.stmt) or not later(write, node):
            continue
        if isinstance(node, ast.Assign) and _rooted_in(node.value, aliases | flow.tainted):
            aliases.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, (ast.For, ast.AsyncFor)) and _rooted_in(node.iter, aliases):
            aliases.update(target_names(node.target))
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            if any(isinstance(t, ast.Subscript) and _rooted_in(t, aliases) for t in targets):
                return node
        elif isinstance(node, ast.Expr) and isinstance(unwrap(node.value), ast.Call):
            func = unwrap(node.value).func
            if isinstance(func, ast.Attribute) and func.attr in _IN_PLACE and _rooted_in(func.value, aliases):
                return node
    return None


def _made_afresh(name: str, read: ast.Call, write: ast.Call, function: FunctionNode, facts: ModuleFacts,
                 tainted) -> bool:
    """Every way from the read to the write passes a statement that binds ``name`` to a new object not made from
    what was read (``stats = cache.get(k); if stats is None: stats = []; ...; cache.set(k, stats)``): the write
    stores what this pass computed, a cache filled after a miss, and writes back nothing another writer read."""
    above_write = {id(node) for node in ancestors(write)}
    for node in function_nodes(function, facts):
        if not (isinstance(node, ast.Assign) and later(node, read) and later(write, node)
                and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
                and not _made_from(node.value, tainted | {name}, read)):
            continue
        holder = parent(node)
        for field in ("body", "orelse", "finalbody"):
            block = getattr(holder, field, None)
            if isinstance(block, list) and any(statement is node for statement in block):
                after = block[block.index(node) + 1:]
                if any(id(statement) in above_write or statement is write for statement in after):
                    return True
    return False


def _made_from(node: ast.AST, names, read: ast.Call) -> bool:
    """``node`` uses the read or a name holding what it read: the new object carries the old value."""
    return any((isinstance(n, ast.Name) and n.id in names) or n is read for n in walk(node))


def _rooted_in(node: ast.AST, names) -> bool:
    """``names`` holds the object ``node`` reaches through items, attributes, ``.get``/``.setdefault`` and
    ``.items()``/``.values()``: ``d["services"].setdefault(k, {})`` is part of ``d``."""
    node = unwrap(node)
    while True:
        if isinstance(node, (ast.Subscript, ast.Attribute)):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _VIEWS:
            node = node.func.value
        else:
            break
    return isinstance(node, ast.Name) and node.id in names


#: Methods that return a part of a container, not a copy of it.
_VIEWS = frozenset({"get", "setdefault", "items", "values", "__getitem__"})


def _entry_counted(value: ast.AST, flow: Flow, read: ast.Call, write: ast.Call, function: FunctionNode,
                   facts: ModuleFacts) -> bool:
    """``d[k] = d.get(k, 0) + n`` (or ``d[k] += n``) between the read of ``d`` and the write of ``d``: the
    read value changed in place, so the write sends a count computed in Python."""
    if not (isinstance(value, ast.Name) and value.id in flow.tainted):
        return False
    for node in function_nodes(function, facts):
        if not isinstance(node, (ast.Assign, ast.AugAssign)) or not later(node, read) or later(node, write):
            continue
        if isinstance(node, ast.Assign):
            targets, changed = node.targets, flow.arithmetic(node.value)
        elif isinstance(node, ast.AugAssign):
            targets, changed = [node.target], isinstance(node.op, _ARITHMETIC)
        else:
            continue
        if changed and any(isinstance(t, ast.Subscript) and _is_name(_subscript_root(t), value.id) for t in targets):
            return True
    return False


class StoreChecks:
    """OG301 on Redis and caches (mixed into the rule)."""

    # dict-like classes over a Redis hash: ``POOL[k] = {**POOL.get(k), ...}`` -----------------------------------
    def _remote_dicts(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        remote = _remote_dict_names(facts)
        if not remote:
            return
        for assign in facts.assigns:
            if not (isinstance(assign, ast.Assign) and len(assign.targets) == 1
                    and isinstance(assign.targets[0], ast.Subscript)):
                continue
            target = assign.targets[0]
            if not (isinstance(target.value, ast.Name) and target.value.id in remote):
                continue
            function = facts.enclosing_function(assign)
            if function is None:
                continue
            read = _remote_read_back(assign, target.value.id, target.slice, function, facts)
            if read is not None:
                name = target.value.id
                yield self.finding(
                    assign,
                    f"`{name}[{short(target.slice, 30)}]` is written back whole from the value read on line "
                    f"{read.lineno}, so another replica's change to that entry in between is lost.",
                    f"The mapping `{name}` keeps its entries in Redis, so the read and the write are two round trips "
                    "another replica can come between. Keep one Redis key (or hash field) per inner item so each change is a single command "
                    "(`HSET`/`HDEL` on `name:key`, a set with `SADD`/`SREM`), or do the change in a Lua script or "
                    "a `WATCH`/`MULTI` transaction.",
                )

    # Redis -----------------------------------------------------------------------------------------------
    def _redis(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        for command, (key_arg, field_arg, value_arg) in redis_known.WRITES.items():
            for call in facts.calls_named(command):
                function = facts.enclosing_function(call)
                if function is None or has_spread(call):
                    continue
                handle = redis_call(call, facts)
                if handle is None:
                    continue
                if json_module_of(call.func.value) is not None:  # ``r.json().set(key, "$", doc)``
                    if command not in redis_known.JSON_WRITES:
                        continue
                    key_arg, field_arg, value_arg = redis_known.JSON_WRITES[command]
                key = key_argument(call, handle, key_arg)
                field = argument(call, field_arg) if field_arg else None
                value = argument(call, value_arg)
                if key is None or value is None or (field_arg and field is None):
                    continue
                reads = self._reads_of(call, key, field, function, facts)
                if not reads:
                    continue
                if per_process(handle, facts):
                    continue  # each process's own cache: no other replica reads or writes the entry
                read_ids = {id(r) for r in reads}
                flow = Flow(function, facts, lambda n: id(n) in read_ids, at=call)
                # (an object changed in place is written back whole, whatever arithmetic its entries saw)
                if _changed_in_place(value, flow, reads[0], call, function, facts):
                    yield self._redis_report(call, command, reads[0], handle.kind, whole=True)
                elif flow.arithmetic(value):
                    yield self._redis_report(call, command, reads[0], handle.kind)
        yield from self._wrapper_redis(facts)
        yield from self._whole_hashes(facts)
        yield from self._member_scores(facts)

    def _member_scores(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        """``current = r.zscore(key, member)``, a score computed in Python, ``r.zadd(key, {member: total})``: each
        entry of the mapping writes one member's score, so a score computed from its own read loses the other
        writer's change (unless the write adds to the score, ``incr=True``)."""
        for command, (key_arg, mapping_arg) in redis_known.MEMBER_MAPPING_WRITES.items():
            for call in facts.calls_named(command):
                function = facts.enclosing_function(call)
                mapping = argument(call, mapping_arg) if function is not None else None
                if not isinstance(mapping, ast.Dict) or switched_on(call, redis_known.MEMBER_MAPPING_INCREMENT):
                    continue
                handle = redis_call(call, facts)
                key = key_argument(call, handle, key_arg) if handle is not None else None
                if key is None:
                    continue
                for member, score in zip(mapping.keys, mapping.values):
                    reads = self._reads_of(call, key, member, function, facts) if member is not None else []
                    if not reads or per_process(handle, facts):
                        continue
                    read_ids = {id(r) for r in reads}
                    if Flow(function, facts, lambda n: id(n) in read_ids, at=call).arithmetic(score):
                        yield self._redis_report(call, command, reads[0], handle.kind)
                        break

    def _whole_hashes(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        """``lines = r.hgetall(key)``, an entry changed in Python, ``r.hset(key, mapping=lines)``: the whole hash
        written back, other writers' changes to its fields lost."""
        for command, mapping_arg in redis_known.WHOLE_HASH_WRITES.items():
            for call in facts.calls_named(command):
                function = facts.enclosing_function(call)
                value = argument(call, mapping_arg)
                handle = redis_call(call, facts) if function is not None and value is not None else None
                key = key_argument(call, handle, redis_known.WRITES["hset"][0]) if handle is not None else None
                if key is None or per_process(handle, facts):
                    continue
                reads = [read for name, key_arg in redis_known.WHOLE_HASH_READS.items()
                         for read in facts.calls_named(name) if facts.enclosing_function(read) is function
                         and not later(read, call)
                         for read_handle in [redis_call(read, facts)] if read_handle is not None
                         and ast.dump(key_argument(read, read_handle, key_arg) or ast.Pass()) == ast.dump(key)]
                if not reads:
                    continue
                read_ids = {id(r) for r in reads}
                flow = Flow(function, facts, lambda n: id(n) in read_ids, at=call)
                if _changed_in_place(value, flow, reads[-1], call, function, facts):
                    yield self._redis_report(call, command, reads[-1], handle.kind, whole=True)

    def _whole_documents(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        """A document read, changed in Python and written back whole (DynamoDB ``put_item``, Firestore ``set``,
        Elasticsearch ``index``, MongoDB ``replace_one``)."""
        for write, read, store, instead in whole_document_write_backs(facts, _changed_in_place):
            yield self.finding(
                write,
                f"`{short(write, 50)}` writes back whole the {store} document read by `{short(read, 40)}` (line "
                f"{read.lineno}) and changed in Python, so one of two replicas' changes is lost.",
                "Two replicas (or requests) read the same document, and the later write puts back its own copy over "
                f"the other's change. Change the value in the store instead: {instead}.",
            )

    def _documents(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        """A document store's field read, changed in Python and written back with ``$set``."""
        for write, field, read, collection in document_write_backs(facts, _changed_in_place):
            if collection:
                operator = (f"(`{{\"$push\": {{\"{field}\": item}}}}`, `$pull`, `$addToSet`, or `$set` of one "
                            f"`\"{field}.<key>\"`)")
                guard = f"a filter that still holds for the write (`{{\"{field}.url\": {{\"$ne\": url}}}}`)"
            else:
                operator = f"(`{{\"$inc\": {{\"{field}\": delta}}}}`)"
                guard = f"a filter that still holds for the write (`{{\"{field}\": {{\"$gte\": amount}}}}`)"
            yield self.finding(
                write,
                f"`{field}` is read with `{short(read, 40)}` (line {read.lineno}), changed in Python and written "
                f"back with `$set`, so one of two replicas' changes is lost.",
                f"Two replicas (or requests) read the same document and the later write overwrites the other's "
                f"change. Change the value in the store with an update operator {operator}, with {guard} and a "
                f"check of `modified_count`; or compare the value read in the filter (compare-and-set).",
            )

    def _wrapper_redis(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        """A project class over a cache (``await self.cache.async_get_cache(key=k)``, the dict changed in
        Python, ``async_set_cache(key=k, value=d)``): the wrapper's methods are known by their verbs, the
        receiver only by a visible construction or annotation of such a class."""
        key_arg, _, value_arg = redis_known.WRITES["set"]
        writes = [item for item in _client_calls(facts, ("set",))
                  if item[1].kind == redis_known.WRAPPER and item[0].func.attr not in redis_known.WRITES]
        if not writes:
            return
        reads = [item for item in _client_calls(facts, ("get",)) if item[1].kind == redis_known.WRAPPER]
        for call, handle, _command in writes:
            function = facts.enclosing_function(call)
            if function is None or has_spread(call):
                continue
            if _in_process_only(call):
                continue
            key = key_argument(call, handle, key_arg)
            value = argument(call, value_arg)
            if key is None or value is None:
                continue
            key_dump = ast.dump(key)
            matching = [read for read, read_handle, _ in reads
                        if facts.enclosing_function(read) is function and not later(read, call)
                        and ast.dump(key_argument(read, read_handle, key_arg) or ast.Pass()) == key_dump]
            if not matching:
                continue
            read_ids = {id(r) for r in matching}
            flow = Flow(function, facts, lambda n: id(n) in read_ids, at=call)
            if flow.arithmetic(value):
                yield self._redis_report(call, "set", matching[-1], handle.kind)
            elif _entry_counted(value, flow, matching[-1], call, function, facts):
                # A dict of counts: a Redis hash counts each entry atomically.
                yield self._redis_report(call, "hset", matching[-1], handle.kind)
            elif _changed_in_place(value, flow, matching[-1], call, function, facts):
                yield self._redis_report(call, "set", matching[-1], handle.kind, whole=True)

    @staticmethod
    def _reads_of(write: ast.Call, key: ast.AST, field: Optional[ast.AST], function: FunctionNode,
                  facts: ModuleFacts) -> List[ast.Call]:
        key_dump = ast.dump(key)
        field_dump = ast.dump(field) if field is not None else None
        found = [read for read in _reads_of_key(function, facts, key_dump, field_dump) if not later(read, write)]
        return found or StoreChecks._helper_reads(write, key_dump, field_dump, function, facts)

    @staticmethod
    def _helper_reads(write: ast.Call, key_dump: str, field_dump: Optional[str], function: FunctionNode,
                      facts: ModuleFacts) -> List[ast.Call]:
        """Calls, before the write, of a project function that reads the same key (and field) and returns what
        it read (``current = await self.balance(account_id)``, whose body is ``raw = await
        self._redis.hget(self._key, account_id)`` ... ``return int(raw)``): the read is the call's, its parameters
        standing for what the call hands in."""
        from ...project.summaries import resolve

        found = []
        written = {id(node) for value in [*write.args, *(k.value for k in write.keywords)] for node in walk(value)}
        for call in function_nodes(function, facts):
            if not isinstance(call, ast.Call) or call is write:
                continue
            argument = id(call) in written
            if (later(call, write) and not argument) \
                    or not (argument or isinstance(facts.statement_of(call), (ast.Assign, ast.AnnAssign))):
                continue  # (only a value the function keeps, or one computed in the write, is written back)
            if isinstance(call.func, ast.Attribute) and call.func.attr in redis_known.READS \
                    and redis_call(call, facts) is not None:
                continue  # (a client's own read: compared above; a project def named ``get`` is read below)
            for target, target_facts in resolve(call, facts, function, by_name=False):
                if _returns_read(target, target_facts, call, key_dump, field_dump):
                    found.append(call)
                    break
        return found

    def _redis_report(self, write: ast.Call, command: str, read: ast.Call, kind: str,
                      whole: bool = False) -> Diagnostic:
        if whole:
            hazard = (f"`{short(write, 50)}` writes back whole the value read by `{short(read, 40)}` (line "
                      f"{read.lineno}), so one of two replicas' changes is lost.")
            atomic = ("`cache.incr(entry_key, delta)` per entry (after `cache.add(entry_key, 0)`)"
                      if kind == redis_known.DJANGO_CACHE else "`HINCRBY`/`HSET` on a hash field per entry")
            suggestion = (f"Two replicas (or tasks) change the same value read in Python, and the later write "
                          f"overwrites the other's change. "
                          f"Keep each entry under its own key or hash field and change it with one atomic command "
                          f"({atomic}); or make the read and the write one transaction (`WATCH`/`MULTI`, a Lua "
                          f"script, or a lock held around both).")
            return self.finding(write, hazard, suggestion)
        hazard = (f"`{short(write, 50)}` writes a value computed from `{short(read, 40)}` (line {read.lineno}), so "
                  "one of two replicas' updates is lost.")
        why = "Two replicas read the same value, and the later write overwrites the other's update. "
        if kind == redis_known.DJANGO_CACHE:
            suggestion = (why + "Use the cache's atomic counter: `cache.add(key, 0, timeout)` once, then "
                          "`cache.incr(key, delta)` (atomic on django-redis and Memcached).")
        else:
            atomic = redis_known.ATOMIC_COUNTER.get(command, "INCRBY")
            suggestion = (f"{why}Use {atomic}, which changes the value inside Redis in one command; when the key needs "
                          f"a TTL, send EXPIRE with it in a `MULTI` pipeline (or set it only when INCR returned "
                          f"the first value).")
        return self.finding(write, hazard, suggestion)
