"""The text of a project's files, read once a run and searched as one buffer.

Whole-project lookups by name (which files mention a word, define ``def name``, call ``.name(``) ask for
every file of a project listing, word after word. Tested a file at a time, each ask is a loop over
thousands of files in Python, and a project larger than a per-file cache is read from disk again for each
word. Joined into one buffer (a NUL after each file, which no word searched for holds), a listing is
searched by one automaton pass per word, keeping a file at its first hit; a listing that lies inside a larger
one already joined (a package of the repository) is a range of it, not a second copy.

What a run reads here is what the project held when it was read: the word searches built on it and the
bytes handed out agree, and both are forgotten together (``clear``: a file saved in the editor, a new run).
"""
from __future__ import annotations

import bisect
import os
import stat as _stat
import threading
from collections import OrderedDict
from typing import Callable, Dict, Iterable, List, Optional, Set, Tuple

from ahocorasick_rs import BytesAhoCorasick

#: Larger files are no module of the project worth a search (generated data); they read as empty.
MAX_FILE_BYTES = 2_000_000
#: What the joined texts may hold together. A listing larger than this alone is searched a file at a time,
#: each read from disk, as before anything was joined.
TEXT_BUDGET = 64 << 20
#: Files read alone (not in a joined text) kept for the next ask, and slices of joined texts handed out
#: (the same object again for the same file: some callers remember what they built for the last text by
#: identity).
_LOOSE_BUDGET = 8 << 20
_SLICES_KEPT = 64

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_SEPARATOR = b"\0"


def read_file(path: str) -> bytes:
    """A regular file's bytes, empty when it cannot be read or is larger than ``MAX_FILE_BYTES``.

    Descriptor-level calls: a search reads thousands of files, and a Python file object's set-up costs more
    than the read itself. Opened non-blocking and checked with ``fstat``: a FIFO or a device named *.py would
    block or never end."""
    try:
        descriptor = os.open(path, os.O_RDONLY | _NONBLOCK)
    except OSError:
        return b""
    try:
        stat = os.fstat(descriptor)
        if not _stat.S_ISREG(stat.st_mode) or stat.st_size > MAX_FILE_BYTES:
            return b""
        return _read_all(descriptor, stat.st_size)
    except OSError:
        return b""
    finally:
        os.close(descriptor)


def _read_all(descriptor: int, size: int) -> bytes:
    """The whole file: one read when it is the size ``fstat`` gave (a short read of a regular file is its
    end), more while it grows."""
    wanted = max(size, 1 << 16) + 1
    chunks = []
    while True:
        chunk = os.read(descriptor, wanted)
        chunks.append(chunk)
        if len(chunk) < wanted:
            return b"".join(chunks)


class JoinedText:
    """The files of one listing, in its order, joined: file ``i`` is ``buffer[starts[i]:starts[i + 1] - 1]``.

    Read straight into one growing buffer, never copied whole: a large project's text is held once, not once
    as files and again joined."""

    __slots__ = ("paths", "starts", "buffer", "position")

    def __init__(self, paths: List[str], buffer: bytearray, starts: List[int]) -> None:
        self.paths = paths
        self.position = {path: index for index, path in enumerate(paths)}
        self.starts = starts
        self.buffer = buffer

    def file_bytes(self, index: int) -> bytes:
        with memoryview(self.buffer) as view:
            return bytes(view[self.starts[index]:self.starts[index + 1] - 1])

    def files_with(self, needle: bytes, first: int, last: int) -> List[str]:
        """The files ``first`` to ``last`` (exclusive) whose bytes contain ``needle`` (no NUL in it)."""
        starts, paths = self.starts, self.paths
        if not needle:
            return paths[first:last]
        begin = starts[first]
        # One pass of a compiled single-word automaton over the range: several times faster than
        # ``bytes.find``; a word many files spell gives a hit per spelling, and only the first of a file counts.
        hits = BytesAhoCorasick([needle]).find_matches_as_indexes(memoryview(self.buffer)[begin:starts[last]])
        found: List[str] = []
        boundary = -1
        for _, at, _ in hits:
            if at < boundary:
                continue
            index = bisect.bisect_right(starts, begin + at) - 1
            found.append(paths[index])
            boundary = starts[index + 1] - begin
        return found

    def holds(self, paths: List[str]) -> Optional[int]:
        """Where ``paths`` begin as one run of this listing, if they do."""
        first = self.position.get(paths[0])
        if first is None or self.paths[first:first + len(paths)] != paths:
            return None
        return first


_lock = threading.Lock()
#: Joined texts by the base of the listing they were built for, least recently used first.
_texts: "OrderedDict[str, JoinedText]" = OrderedDict()
_text_bytes = 0
#: base -> (the text holding its listing, first index, end index), or None when it is searched file by file.
_ranges: Dict[str, Optional[Tuple[JoinedText, int, int]]] = {}
_loose: "OrderedDict[str, bytes]" = OrderedDict()
_loose_bytes = 0
_slices: "OrderedDict[str, bytes]" = OrderedDict()


def clear() -> None:
    global _text_bytes, _loose_bytes
    with _lock:
        _texts.clear()
        _ranges.clear()
        _loose.clear()
        _slices.clear()
        _text_bytes = _loose_bytes = 0


def listing_range(base: str, paths: List[str]) -> Optional[Tuple[JoinedText, int, int]]:
    """The joined text that holds the listing ``paths`` of ``base``, joined now if no text holds it yet; None
    for an empty listing or one too large to keep."""
    if not paths:
        return None
    with _lock:
        if base in _ranges:
            known = _ranges[base]
            if known is None or any(text is known[0] for text in _texts.values()):
                return known
        for text in reversed(_texts.values()):
            first = text.holds(paths)
            if first is not None:
                _ranges[base] = (text, first, first + len(paths))
                return _ranges[base]
    text = _join(paths)
    with _lock:
        _ranges[base] = None if text is None else (text, 0, len(paths))
        if text is not None:
            _keep(base, text)
    return _ranges[base]


def _join(paths: List[str]) -> Optional[JoinedText]:
    buffer = bytearray()
    starts = [0] * (len(paths) + 1)
    for index, path in enumerate(paths):
        data = _loose.get(path)
        if data is None:
            data = read_file(path)
        if len(buffer) + len(data) + 1 > TEXT_BUDGET:
            return None
        starts[index] = len(buffer)
        buffer += data
        buffer += _SEPARATOR
    starts[-1] = len(buffer)
    return JoinedText(paths, buffer, starts)


def _keep(base: str, text: JoinedText) -> None:
    """Keep a new text (under the lock): the texts it holds whole go (their listings are ranges of it now),
    then the least recently used while all of them are over the budget."""
    global _text_bytes
    for other_base, other in list(_texts.items()):
        if text.holds(other.paths) is not None:
            del _texts[other_base]
            _text_bytes -= len(other.buffer)
    _texts[base] = text
    _text_bytes += len(text.buffer)
    while _text_bytes > TEXT_BUDGET and len(_texts) > 1:
        _, oldest = _texts.popitem(last=False)
        _text_bytes -= len(oldest.buffer)
    _slices.clear()


def file_bytes(path: str) -> bytes:
    """A file's bytes as this run read them: from a joined text that holds it, else read once and kept while
    there is room."""
    global _loose_bytes
    with _lock:
        data = _slices.get(path)
        if data is not None:
            _slices.move_to_end(path)
            return data
        for text in _texts.values():
            index = text.position.get(path)
            if index is not None:
                data = _slices[path] = text.file_bytes(index)
                if len(_slices) > _SLICES_KEPT:
                    _slices.popitem(last=False)
                return data
        data = _loose.get(path)
        if data is not None:
            _loose.move_to_end(path)
            return data
    data = read_file(path)
    with _lock:
        previous = _loose.pop(path, None)
        if previous is not None:
            _loose_bytes -= len(previous)
        while _loose and _loose_bytes + len(data) > _LOOSE_BUDGET:
            _loose_bytes -= len(_loose.popitem(last=False)[1])
        if len(data) <= _LOOSE_BUDGET:
            _loose[path] = data
            _loose_bytes += len(data)
    return data


def files_mentioning(needle: bytes, base: str, paths: List[str]) -> List[str]:
    """The files of the listing ``paths`` (of ``base``) whose bytes contain ``needle``, in listing order."""
    joined = listing_range(base, paths) if _SEPARATOR not in needle else None
    if joined is None:
        return [path for path in paths if needle in file_bytes(path)]
    text, first, last = joined
    return text.files_with(needle, first, last)


def name_index(base: str, paths: List[str], names_in: Callable[[bytes], Iterable[bytes]]) -> Dict[str, List[str]]:
    """name -> the files of the listing (in its order) in whose bytes ``names_in`` finds it."""
    index: Dict[str, List[str]] = {}
    joined = listing_range(base, paths)
    if joined is None:
        texts = ((path, file_bytes(path)) for path in paths)
    else:
        text, first, last = joined
        texts = ((text.paths[i], text.file_bytes(i)) for i in range(first, last))
    for path, data in texts:
        names: Set[bytes] = set(names_in(data))
        for name in names:
            index.setdefault(name.decode("ascii"), []).append(path)
    return index
