"""The kinds of claim a function may lead with, and what a claim found in code is (``ClaimHit``, ``Lead``)."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import FrozenSet, Optional

from ..analysis.facts import parent

# Kinds of claim.
CLAIM_FUNCTION = "claim function"
TRY_LOCK = "pg_try_advisory lock"
SET_NX = "Redis SET NX"
LOCK_ACQUIRE = "Redis lock acquire(blocking=False)"
LOCK_WITH = "Redis lock"
CACHE_ADD = "cache.add"
ROW_LOCK = "FOR UPDATE SKIP LOCKED"
CONDITIONAL_UPDATE = "conditional UPDATE"
#: ``INSERT ... ON CONFLICT DO NOTHING``: the replica whose row goes in has the claim; the row count (or the
#: ``RETURNING`` value) says which one.
#: A Lua script that acts only for the key's holder (a lease renewed by its owner): false means the lease was
#: lost, a failure to report, not a replica that skips because another one runs.
OWNER_SCRIPT = "owner-conditional Redis script"
UNIQUE_INSERT = "INSERT ... ON CONFLICT DO NOTHING"  # (or get_or_create on a unique lookup)
#: ``Run.objects.create(week=...)`` on a unique field inside ``try`` whose ``except IntegrityError`` leaves: the
#: replica whose row goes in goes on; the others' insert raises and they leave.  No answer to test.
UNIQUE_CREATE = "unique row created, a duplicate raising"
HELPER_GUARD = "claiming helper"
HELPER_RESULT = "claiming helper result"
#: A context manager of the project that yields a claim's answer: the name ``with ... as`` binds is tested.
HELPER_CONTEXT = "claiming context manager"
HUEY_LOCK = "huey lock_task"
#: ``await pool.enqueue_job("send", day, _job_id=f"send:{day}")`` (arq): the queue keeps one job per id, so the
#: replica whose enqueue goes in gets the job back and every other one gets None.
QUEUED_ONCE = "enqueue under a job id the queue keeps once"

#: Kinds whose result must be tested before the work.
NEEDS_TEST = frozenset({CLAIM_FUNCTION, TRY_LOCK, SET_NX, OWNER_SCRIPT, LOCK_ACQUIRE, CACHE_ADD, CONDITIONAL_UPDATE,
                        UNIQUE_INSERT, QUEUED_ONCE,
                        HELPER_RESULT, HELPER_CONTEXT})
#: Kinds whose result answers whether the claim was obtained: what a helper hands back of one is that answer.
#: (An owner-conditional script is not one: a helper that only renews answers whether the lease was kept, and
#: its false is a loss to report, not another replica's turn.)
ANSWER_KINDS = frozenset({SET_NX, TRY_LOCK, CACHE_ADD, LOCK_ACQUIRE, HELPER_RESULT, QUEUED_ONCE})


@dataclass(frozen=True)
class ClaimHit:
    kind: str
    node: ast.AST
    #: for an object bound by ``with ... as lease`` that carries the answer: the attributes holding it
    #: (``lease.acquired``); empty when the bound value is the answer itself
    attributes: FrozenSet[str] = frozenset()

    @property
    def needs_test(self) -> bool:
        return self.kind in NEEDS_TEST

    def read_by(self, name: ast.Name) -> bool:
        """Whether the bound name, as read at ``name``, is the answer: itself, or an answer attribute of it."""
        if not self.attributes:
            return True
        above = parent(name)
        return isinstance(above, ast.Attribute) and above.value is name and above.attr in self.attributes


@dataclass
class Lead:
    """The outcome of reading a function's leading statements."""

    claimed: bool
    kind: Optional[str] = None
    #: The first statement that does work before any claim (None when claimed or when nothing happens).
    first_work: Optional[ast.AST] = None
