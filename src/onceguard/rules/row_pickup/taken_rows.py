"""One row a loader of the project picks by its state and hands back, taken by a caller that moves it on.

``job = store.next_pending()`` (a repository's method selecting the oldest ``'pending'`` row and returning it),
then ``store.mark_running(job)`` (a helper that sets the state and commits) and the work on the row: two
replicas asking at once get the same row, both mark it and both do the work.  The caller reads no query of its
own and loops over nothing, so the pickup is reported where the row is selected -- as a raw SQL loader's is --
with the caller's mark as the related place.  A caller that writes rows itself, or loops over what the loader
returns, is read at the call instead (``returned_pickups``).
"""
from __future__ import annotations

import ast
from typing import NamedTuple, Optional

from ...analysis.facts import FunctionNode, ModuleFacts
from ...project.fixed_arguments import callers_of
from ..data_races import unwrap
from .handed_rows import handed_row_write
from .returned_pickups import _handed_session, _returns_rows, _row_sources
from .selection import Pickup, _functions_writing_rows, _rows_names


class TakenRow(NamedTuple):
    pickup: Pickup  # the row as the caller holds it (the call is its selection, the loader its source)
    write: ast.Call  # the call handing the row to the project helper that moves it out of its state
    caller: FunctionNode
    facts: ModuleFacts  # the caller's module


def taken_by_caller(pickup: Pickup, loader: FunctionNode, facts: ModuleFacts) -> Optional[TakenRow]:
    """The first caller of ``loader`` that binds the row it returns to a name and hands it to a project function
    moving it out of the state ``pickup`` selected by, with work done on it (``handed_row_write``)."""
    if pickup.loader is not None or not _returns_rows(pickup, loader):
        return None
    for call, other in callers_of(loader, facts):
        caller = other.enclosing_function(call)
        if caller is None or other.context.is_test:
            continue
        statement = other.statement_of(call)
        if not (isinstance(statement, ast.Assign) and unwrap(statement.value) is call):
            continue
        if id(caller) in _functions_writing_rows(other) or id(call) in _row_sources(caller, other):
            continue  # (read at the call: the caller's own write, or a loop over the rows)
        taken = Pickup(pickup.framework, call, pickup.model, pickup.column, _rows_names(call, other),
                       _handed_session(pickup.session, loader, call, facts), loader=(loader, facts))
        write = handed_row_write(taken, caller, other)
        if write is not None:
            return TakenRow(taken, write, caller, other)
    return None
