"""Rows picked by status and updated without claiming them (OG302).  reference/frameworks.md §6.

Two replicas running the same pickup both see the row in its old state and both act on it, unless the
selection claims it (``FOR UPDATE SKIP LOCKED``, ``select_for_update(skip_locked=True)``) or the write is
conditional on the old state and its row count is read.  The same for one row: a state tested in Python,
then written unconditionally around the work it guards (check-then-act), and a single-use entry deleted
without reading the row count before success is returned.

- ``selection``: status filters and the rows they select
- ``moved``: rows a loader hands back, the writes behind helpers, functions that move the rows they pick
- ``callers``: claims and serialising locks taken by a function's callers
- ``check_then_act``: one row's state tested, then written around the work
- ``consumes``: single-use entries deleted without a row count
- ``rule``: the OG302 rule
"""
from __future__ import annotations

from .rule import CHECK_THEN_ACT_TRIGGERS, CONSUME_TRIGGERS, UnclaimedRowPickup
from .selection import status_column

__all__ = ["CHECK_THEN_ACT_TRIGGERS", "CONSUME_TRIGGERS", "UnclaimedRowPickup", "status_column"]
