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

#: Conversions that give the same value for the same input in every process (a key made of fixed parts through
#: them is fixed): by qualified name, and as methods of a value (text, bytes, a digest object).
KEY_CONVERSIONS = frozenset({"int", "str", "bytes", "int.from_bytes", "zlib.crc32", "binascii.crc32"})
KEY_CONVERSION_PREFIXES = ("hashlib.",)
KEY_CONVERSION_METHODS = frozenset({
    "encode", "decode", "digest", "hexdigest", "join", "format", "lower", "upper", "casefold", "strip", "lstrip",
    "rstrip", "replace", "removeprefix", "removesuffix", "zfill", "to_bytes", "hex",
})

#: Built-ins whose value differs from one process to the next, and why (a lock key every replica must agree on).
UNSTABLE_CALLS: Dict[str, str] = {
    "hash": "the built-in `hash()` of text is salted per process (PYTHONHASHSEED), so each replica computes a "
            "different key",
    "id": "`id()` is a memory address, different in every process",
}

#: Factories of in-process counters: ``next()`` of one numbers things in the order this process first met them.
COUNTER_FACTORIES = frozenset({"itertools.count"})
COUNTER_WHY = ("a per-process counter numbers names in the order this process first used them, so replicas give "
               "the same name different keys")

#: Qualified calls (or prefixes) whose value differs between processes.
UNSTABLE_QUALIFIED_PREFIXES: Dict[str, str] = {
    "random.": "a random key is different in every replica",
    "secrets.": "a random key is different in every replica",
    "uuid.uuid4": "a random UUID is different in every replica",
    "uuid.uuid1": "a time-and-host UUID is different in every replica",
    "os.getpid": "a process id is different in every replica",
    "os.urandom": "a random key is different in every replica",
    "threading.get_ident": "a thread id is different in every process",
    "socket.gethostname": "each replica runs on its own host name",
    "platform.node": "each replica runs on its own host name",
    "time.monotonic": "a monotonic clock starts anywhere in each process",
    "time.perf_counter": "a performance counter starts anywhere in each process",
}

#: Clock readings: a key from one differs between replicas unless it is cut into periods (``//``, ``/``).
CLOCK_CALLS: Dict[str, str] = {
    "time.time": "a clock reading is different in every replica unless it is cut into periods",
    "time.time_ns": "a clock reading is different in every replica unless it is cut into periods",
}

#: The environment variable that fixes the built-in ``hash()`` of text for every process started with it.
HASH_SEED_VARIABLE = "PYTHONHASHSEED"
