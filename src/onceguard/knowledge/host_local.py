"""Locks that only exclude processes on one host, where they live, and what proves the work is shared."""
from __future__ import annotations

from typing import FrozenSet, Tuple

#: Constructors of a lock on a file: ``with FileLock(path):`` / ``lock.acquire()``.
FILE_LOCK_CONSTRUCTORS: FrozenSet[str] = frozenset({
    "filelock.FileLock", "filelock.SoftFileLock", "filelock.UnixFileLock", "filelock.WindowsFileLock",
    "filelock.AsyncFileLock", "filelock.AsyncSoftFileLock", "filelock.AsyncUnixFileLock",
    "portalocker.Lock", "portalocker.RLock", "portalocker.TemporaryFileLock",
    "fasteners.InterProcessLock", "fasteners.process_lock.InterProcessLock",
})

#: ``fcntl.flock(fd, fcntl.LOCK_EX)``: the file descriptor is the first argument.
FLOCK_CALLS: FrozenSet[str] = frozenset({"fcntl.flock", "fcntl.lockf", "portalocker.lock"})
#: The flag that releases instead of taking.
UNLOCK_FLAGS: FrozenSet[str] = frozenset({"LOCK_UN", "UNBLOCK"})

#: Calls whose result is a directory private to this host (a container's own filesystem).
TEMP_DIR_CALLS: FrozenSet[str] = frozenset({
    "tempfile.gettempdir", "tempfile.gettempdirb", "tempfile.mkdtemp", "tempfile.TemporaryDirectory",
})
#: Literal paths that are private to this host.
TEMP_PREFIXES: Tuple[str, ...] = ("/tmp/", "/var/tmp/", "/dev/shm/", "/run/lock/", "/var/lock/")
TEMP_DIRS: FrozenSet[str] = frozenset({"/tmp", "/var/tmp", "/dev/shm"})

#: Methods that write through a database handle (a Session, a connection, an engine).
HANDLE_WRITE_METHODS: FrozenSet[str] = frozenset({
    "add", "add_all", "delete", "merge", "commit", "flush", "bulk_save_objects", "bulk_insert_mappings",
    "bulk_update_mappings",
})
#: Methods that send SQL; a write when their SQL text starts with one of WRITE_STATEMENTS.
HANDLE_SQL_METHODS: FrozenSet[str] = frozenset({"execute", "exec", "executemany", "exec_driver_sql"})
WRITE_STATEMENTS: Tuple[str, ...] = ("INSERT", "UPDATE", "DELETE", "UPSERT", "MERGE")
#: Row writes that, with one of SESSION_ONLY_METHODS on the same receiver in one function, prove the
#: receiver is an ORM session (a set has ``add``, but no ``flush`` or ``commit``).
ROW_WRITE_METHODS: FrozenSet[str] = frozenset({"add", "add_all", "delete", "merge"})
SESSION_ONLY_METHODS: FrozenSet[str] = frozenset({"commit", "flush", "refresh", "exec", "execute", "scalars"})
#: Django manager writes: ``Model.objects.create(...)``.
DJANGO_MANAGER_WRITES: FrozenSet[str] = frozenset({
    "create", "bulk_create", "get_or_create", "update_or_create", "update", "delete", "bulk_update",
})

#: Byte strings that let the prefilter keep a file that may take a file lock.
TRIGGERS = (b"FileLock", b"flock", b"lockf", b"portalocker", b"InterProcessLock")
