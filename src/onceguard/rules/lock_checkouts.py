"""Which checkout of a pool a lock or unlock call runs on (OG101): the ``with`` block that binds its connection,
or, for a connection a name is bound to more than once (``conn = pool.getconn()`` … ``pool.putconn(conn)``, then
again), the binding in force at the call."""
from __future__ import annotations

import ast
from typing import Optional

from ..analysis.facts import ancestors, position
from ..analysis.handles import bindings_before, cursor_of
from ..knowledge import databases as db


def checkout_of(use) -> Optional[ast.AST]:  # (``use``: an advisory_locks.LockUse)
    """The ``with pool.connection() as conn`` item whose connection runs this call.

    A name reused by several ``with`` blocks has one binding per block; the enclosing block is the one
    in force at the call."""
    receiver = use.receiver_text
    if receiver:
        root = receiver.split(".")[0]
        for above in ancestors(use.call):
            if isinstance(above, (ast.With, ast.AsyncWith)):
                for item in above.items:
                    if isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == root:
                        opened = cursor_of(item.context_expr)
                        if opened is None:
                            return item
                        root = opened  # a cursor's block: the checkout is its connection's
            if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef)):
                # ``conn = pool.getconn()`` … ``pool.putconn(conn)``, twice (or through a helper that checks one
                # out): the checkout in force at the call is the one bound last before it
                checkouts = [node for node in bindings_before(above, root, use.call) if isinstance(node.value, ast.Call)]
                if checkouts and use.handle is not None and use.handle.how in db.PIN_METHODS:
                    # (one binding: every call on the name, through a cursor block or not, runs on that checkout)
                    return max(checkouts, key=position)
                break
    return use.handle.origin if use.handle is not None else None
