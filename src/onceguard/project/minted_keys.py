"""Keys a writer mints: an entry stored under one is there to be found by whoever is handed the key.

``token = secrets.token_urlsafe(32); cache[token] = member`` or ``job = Job(id=uuid4().hex, ...)`` then
``self._jobs[job.id] = job``: no other process can compute the key, so the writer hands it out (a one-time
link, a job id in the response) and a later request -- served by any replica -- reads the entry back by it.
An entry under such a key in one process's memory is a store the other replicas never see.
"""
from __future__ import annotations

import ast
from typing import List, Optional

from ..analysis.executed_sql import bound_value
from ..analysis.facts import ModuleFacts, parent, walk
from ..knowledge import process_state as known
from .definitions import called_def


def minted(expr: ast.AST, facts: ModuleFacts) -> bool:
    """A key (or a part of one) made of a value only this caller minted, read through its names."""
    return any(_mints(part, facts) for part in _key_parts(expr, facts))


def minted_key(node: ast.AST, facts: ModuleFacts) -> bool:
    """``node`` (``store[key] = value`` or ``cache.set(key, value)``) stores its entry under a minted key."""
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        keys = [t.slice for t in targets if isinstance(t, ast.Subscript)]
    elif isinstance(node, ast.Call) and node.args:
        keys = [node.args[0]]  # ``cache.set(key, value)``
    else:
        return False
    return any(minted(key, facts) for key in keys)


def minted_by_callers(node: ast.AST, facts: ModuleFacts) -> bool:
    """``def begin(upload_id): _paths[upload_id] = ...`` (or ``cache.set(f"upload:{upload_id}", ...)``) called with
    ``uuid.uuid4().hex`` by a route: the callers mint the key the entry is stored under (command line only; asked
    after the cheaper questions)."""
    if not facts.context.cross_file:
        return False
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        keys = [t.slice for t in targets if isinstance(t, ast.Subscript)]
    elif isinstance(node, ast.Call) and node.args:
        keys = [node.args[0]]  # ``cache.set(f"job:{job_id}", status)``
    else:
        return False
    return any(_minted_by_callers(key, node, facts) for key in keys)


def _minted_by_callers(key: ast.AST, node: ast.AST, facts: ModuleFacts) -> bool:
    from ..analysis.handed import argument_for, parameter_names
    from .fixed_arguments import callers_of
    from .reach import _method_callers_by_name

    function = facts.enclosing_function(node)
    if function is None:
        return False
    # The key, or the one parameter a key written around it names (``f"job:{job_id}"``).
    named = [part for part in walk(key) if isinstance(part, ast.Name)]
    if len(named) != 1 or named[0].id not in parameter_names(function, receiver=False):
        return False
    key = named[0]
    # ``_uploads[upload.upload_id] = upload``: the key is a field of the object the caller hands in, minted
    # where the caller builds it (``Upload(upload_id=uuid4().hex, ...)``)
    above = parent(key)
    field = above.attr if isinstance(above, ast.Attribute) and above.value is key else None
    # (read only when a file of the project both names the function and mints a key: most never do)
    from . import index as project

    root = project.search_root(facts)
    minting = {path for word in _MINT_WORDS for path in project.files_mentioning(word, root)}
    candidates = minting.intersection(project.files_mentioning(function.name, root))
    own = facts.context.path
    # (a caller that mints the key spells both the function and the minting call, within a few lines)
    if not any(path == own or _mints_near_a_call(project.read_bytes(path), function.name) for path in candidates):
        return False
    # (a method called on an object its caller reaches without naming the class, ``app[STORE].begin(...)``: the
    # calls that resolve to it)
    for call, other in callers_of(function, facts) or _method_callers_by_name(function, facts):
        given = argument_for(call, function, key.id)
        if given is not None and field is not None:
            given = _field_given(given, field, other)
        if given is not None and any(_mints(part, other) for part in _key_parts(given, other)):
            return True
    return False


def _field_given(value: ast.AST, field: str, facts: ModuleFacts) -> Optional[ast.AST]:
    """What the keyword ``field`` of the constructor call ``value`` is (or the name ``value`` is bound to) gives."""
    made = bound_value(value, facts) if isinstance(value, ast.Name) else value
    if not isinstance(made, ast.Call):
        return None
    return next((k.value for k in made.keywords if k.arg == field), None)


def _mints_near_a_call(source: bytes, name: str) -> bool:
    """A call of ``name`` within a few lines after a minting call (``upload_id = uuid.uuid4().hex`` …
    ``uploads.begin(upload_id)``)."""
    called = (name + "(").encode()
    for word in _MINT_WORDS:
        at = source.find((word + "(").encode())
        while at != -1:
            if called in source[at:at + _NEAR_BYTES]:
                return True
            at = source.find((word + "(").encode(), at + 1)
    return False


#: How far after the minting call its key is handed on, in bytes of source.
_NEAR_BYTES = 800
#: How the calls that mint a key are spelled, for the text search before the callers are read.
_MINT_WORDS = tuple(sorted({name.rsplit(".", 1)[-1] for name in known.MINTED_KEY_CALLS}))


def _key_parts(key: ast.AST, facts: ModuleFacts) -> List[ast.AST]:
    """The key's nodes, a name read through its binding, and ``record.id`` through the keyword ``id=`` of the
    constructor ``record`` was made by."""
    parts: List[ast.AST] = []
    for part in walk(key):
        if isinstance(part, ast.Name):
            parts.append(bound_value(part, facts) or part)
        elif isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name):
            made = bound_value(part.value, facts)
            if isinstance(made, ast.Call):
                parts.extend(k.value for k in made.keywords if k.arg == part.attr)
            parts.append(part)
        else:
            parts.append(part)
    return parts


def _mints(value: ast.AST, facts: ModuleFacts) -> bool:
    return any(isinstance(node, ast.Call) and (facts.callee(node) or "") in known.MINTED_KEY_CALLS
               for node in walk(value))


def minted_value(node: ast.AST, value: Optional[ast.AST], facts: ModuleFacts) -> bool:
    """``store[email] = code`` where ``code`` is a secret drawn here (``secrets.randbelow``, ``token_urlsafe``),
    directly or by a function of the project it calls (``code = new_code()``): a one-time code the writer hands
    out and a later request checks against the entry."""
    if value is None:
        return False
    return any(_draws_secret(part, facts, 0) for part in _key_parts(value, facts))


#: How many project functions a secret is followed through (a helper over ``secrets``, a factory over that).
_MAX_DRAW_DEPTH = 3


def _draws_secret(value: ast.AST, facts: ModuleFacts, depth: int) -> bool:
    calls = [node for node in walk(value) if isinstance(node, ast.Call)]
    if any((facts.callee(call) or "") in known.MINTED_VALUE_CALLS for call in calls):
        return True
    if depth >= _MAX_DRAW_DEPTH:
        return False
    for call in calls:
        found = called_def(call, facts)
        if found is not None and any(isinstance(n, ast.Return) and n.value is not None
                                     and _draws_secret(n.value, found[1], depth + 1) for n in walk(found[0])):
            return True
    return False
