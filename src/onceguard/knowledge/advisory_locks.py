"""PostgreSQL's eleven advisory-lock functions (PostgreSQL manual, "Advisory Lock Functions")."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict


@dataclass(frozen=True)
class AdvisoryFunction:
    name: str
    session: bool  # False: released at COMMIT/ROLLBACK
    blocking: bool  # waits for the lock
    try_lock: bool  # returns a boolean instead of waiting
    unlock: bool
    shared: bool

    @property
    def is_lock(self) -> bool:
        return not self.unlock


def _row(name: str, session: bool, blocking: bool, try_lock: bool, unlock: bool) -> AdvisoryFunction:
    return AdvisoryFunction(name, session, blocking, try_lock, unlock, name.endswith("_shared"))


ADVISORY_FUNCTIONS: Dict[str, AdvisoryFunction] = {
    f.name: f
    for f in (
        _row("pg_advisory_lock", True, True, False, False),
        _row("pg_advisory_lock_shared", True, True, False, False),
        _row("pg_try_advisory_lock", True, False, True, False),
        _row("pg_try_advisory_lock_shared", True, False, True, False),
        _row("pg_advisory_unlock", True, False, False, True),
        _row("pg_advisory_unlock_shared", True, False, False, True),
        _row("pg_advisory_unlock_all", True, False, False, True),
        _row("pg_advisory_xact_lock", False, True, False, False),
        _row("pg_advisory_xact_lock_shared", False, True, False, False),
        _row("pg_try_advisory_xact_lock", False, False, True, False),
        _row("pg_try_advisory_xact_lock_shared", False, False, True, False),
    )
}

#: Byte strings that let the prefilter keep a file that may take an advisory lock.
TRIGGERS = (b"advisory",)
