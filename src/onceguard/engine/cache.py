"""Results of earlier runs, so an unchanged file is not read, let alone parsed, again.

One file per onceguard version (and entry format) under ``.onceguard_cache/``, keyed by config digest and path.
An entry is trusted when the file's size and mtime are unchanged; otherwise
its content hash decides.  Writes are atomic; a corrupt cache is ignored.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from typing import Dict, Iterable, List, Optional, Tuple

from .. import __version__
from ..model import Diagnostic

CACHE_DIRECTORY = ".onceguard_cache"
#: Bumped when what an entry holds changes (2: findings carry their ``related`` places), so that results
#: written by an earlier build of the same version are not read as complete.
FORMAT = 2


def content_hash(source: bytes) -> str:
    return hashlib.blake2b(source, digest_size=16).hexdigest()


class ResultCache:
    def __init__(self, root: str) -> None:
        self.directory = os.path.join(root, CACHE_DIRECTORY)
        self.path = os.path.join(self.directory, f"results-v{__version__}-f{FORMAT}.json")
        self.entries: Dict[str, list] = {}
        self.dirty = False
        try:
            with open(self.path, encoding="utf-8") as handle:
                data = json.load(handle)
            if isinstance(data, dict):
                self.entries = data
        except (OSError, ValueError):
            self.entries = {}

    @staticmethod
    def signature(path: str) -> Optional[Tuple[int, int]]:
        try:
            info = os.stat(path)
        except OSError:
            return None
        return info.st_size, info.st_mtime_ns

    @staticmethod
    def key(path: str, config_digest: str) -> str:
        return f"{config_digest}:{os.path.abspath(path)}"

    def entry(self, path: str, config_digest: str) -> Optional[list]:
        """[size, mtime_ns, content hash, findings, {other file read: [size, mtime_ns]}] or None."""
        entry = self.entries.get(self.key(path, config_digest))
        return entry if isinstance(entry, list) and len(entry) == 5 else None

    def dependencies_unchanged(self, entry: list) -> bool:
        """Findings that depend on other files (a job defined elsewhere) are stale when those change."""
        return all(self.signature(other) == tuple(signature) for other, signature in entry[4].items())

    def lookup_by_stat(self, path: str, config_digest: str) -> Optional[List[Diagnostic]]:
        entry = self.entry(path, config_digest)
        if entry is None or self.signature(path) != (entry[0], entry[1]) or not self.dependencies_unchanged(entry):
            return None
        return decode(entry[3], path)

    def dependents(self, changed: Iterable[str]) -> List[str]:
        """Files whose last findings depended on one of ``changed`` (absolute paths): a job registered there
        and defined in a changed file, say. A run over a few files (pre-commit's staged ones) checks these too,
        so a finding that a change causes elsewhere is not missed."""
        wanted = {os.path.abspath(path) for path in changed}
        found = set()
        for key, entry in self.entries.items():
            if isinstance(entry, list) and len(entry) == 5 and isinstance(entry[4], dict):
                if wanted.intersection(entry[4]):
                    found.add(key.split(":", 1)[1])
        return sorted(found - wanted)

    def store(self, path: str, config_digest: str, digest: str, signature: Optional[Tuple[int, int]],
              found: List[Diagnostic], dependencies: Iterable[str] = ()) -> None:
        if signature is None or any(d.code == "OG001" for d in found):
            return  # an internal error is not a result worth keeping
        others = {}
        for other in dependencies:
            other_signature = self.signature(other)
            if other_signature is None:
                return  # cannot tell later whether it changed: do not cache
            others[other] = list(other_signature)
        self.entries[self.key(path, config_digest)] = [
            signature[0], signature[1], digest, [d.to_json() for d in found], others,
        ]
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            os.makedirs(self.directory, exist_ok=True)
            ignore = os.path.join(self.directory, ".gitignore")
            if not os.path.exists(ignore):
                with open(ignore, "w", encoding="utf-8") as handle:
                    handle.write("*\n")
            descriptor, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                json.dump(self.entries, handle, separators=(",", ":"))
            os.replace(temporary, self.path)
        except OSError:
            pass  # a read-only checkout still gets its results, just not cached


def decode(found: list, path: str) -> List[Diagnostic]:
    """Stored findings as the engine returned them: the checked file's path as given this run, related
    places with the absolute paths they were stored with."""
    return [Diagnostic.from_json(d).with_path(path) for d in found]


def clean(root: str) -> bool:
    import shutil

    directory = os.path.join(root, CACHE_DIRECTORY)
    if os.path.isdir(directory):
        shutil.rmtree(directory, ignore_errors=True)
        return True
    return False
