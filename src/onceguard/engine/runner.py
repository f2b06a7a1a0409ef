"""Check many files: cache first, then the rest across a process pool in chunks."""
from __future__ import annotations

import gc
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Dict, List, Optional, Sequence, Tuple

from .cache import ResultCache, content_hash, decode
from ..config import Config
from .check import cannot_read, check_source, enabled_rules, read_source
from ..model import Diagnostic
from ..project.index import recording, trim_modules
from ..rules.registry import rule_classes

# Below this many files a pool costs more to start than it saves.
POOL_THRESHOLD = 48
_GC_THRESHOLD = 100_000

WorkItem = Tuple[str, Config, Optional[str]]
# (path, content hash, stat signature, findings or None to reuse the cached ones, other files read)
WorkResult = Tuple[str, Optional[str], Optional[Tuple[int, int]], Optional[List[Diagnostic]], Tuple[str, ...]]

_rules_by_digest: Dict[str, list] = {}


def _rules_for(config: Config):
    digest = config.digest()
    if digest not in _rules_by_digest:
        _rules_by_digest[digest] = enabled_rules(config)
    return _rules_by_digest[digest]


def check_one(item: WorkItem) -> WorkResult:
    path, config, cached_digest = item
    signature = ResultCache.signature(path)
    try:
        source = read_source(path)
    except OSError as error:
        return path, None, None, [cannot_read(path, error)], ()
    digest = content_hash(source)
    if digest == cached_digest:
        return path, digest, signature, None, ()  # unchanged content: reuse the cached findings
    with recording() as others:
        found = check_source(source, path, config, _rules_for(config), cross_file=config.whole_project,
                             read_at=signature)
    # A finding that names another file depends on it, whether or not the rule read it through the index.
    others.update(place.path for d in found for place in d.related)
    others.discard(os.path.abspath(path))
    trim_modules()
    return path, digest, signature, found, tuple(sorted(others))


def _fewer_collections() -> None:
    """Run the cyclic garbage collector less often while checking: each file allocates a whole syntax
    tree that is freed at once by reference counting (``ModuleFacts.release`` undoes the parent links),
    so the default every-2,000-allocations passes find nothing and cost several percent of a run."""
    if gc.get_threshold()[0] < _GC_THRESHOLD:
        gc.set_threshold(_GC_THRESHOLD, 20, 20)


def _check_chunk(items: List[WorkItem]) -> List[WorkResult]:
    _fewer_collections()  # in the worker too: a spawned or forkserver worker starts with the defaults
    return [check_one(item) for item in items]


#: In a worker: the pool's shared cursors (see ``WorkerPool.check``).
_cursors = None


def _warm_up(cursors=None) -> None:
    """A worker's start: the rule modules imported (and the rule catalogue read) before the first chunk."""
    global _cursors
    _cursors = cursors
    _fewer_collections()
    rule_classes()


def _next_chunk(own: int, ranges: int) -> Optional[Tuple[int, int]]:
    """(range, chunk) this worker checks next: the front of its own range, else the back of the range with the
    most left (the far end from where its owner works); None when every range is done."""
    cursors = _cursors
    with cursors.get_lock():
        front, back = cursors[2 * own], cursors[2 * own + 1]
        if front < back:
            cursors[2 * own] = front + 1
            return own, front
        other = max(range(ranges), key=lambda r: cursors[2 * r + 1] - cursors[2 * r])
        front, back = cursors[2 * other], cursors[2 * other + 1]
        if front >= back:
            return None
        cursors[2 * other + 1] = back - 1
        return other, back - 1


def _check_range(own: int, ranges: List[List[List[WorkItem]]]) -> List[Tuple[int, int, List[WorkResult]]]:
    """A worker's share of a run: the chunks of its own range in order, then what is left of the others."""
    done = []
    while True:
        taken = _next_chunk(own, len(ranges))
        if taken is None:
            return done
        which, index = taken
        done.append((which, index, _check_chunk(ranges[which][index])))


def _ready() -> None:
    return None


class WorkerPool:
    """Worker processes for a run, each importing the rules as it starts. Started by the caller before the
    files are all known (a cold run of the CLI), they get ready while the tree is still being walked."""

    def __init__(self, jobs: int) -> None:
        context = multiprocessing.get_context()
        if context.get_start_method() == "fork":
            # Forked workers inherit the modules this process has imported: the rules imported (and their
            # sources compiled) once here, not once in every worker.
            rule_classes()
        self.jobs = jobs
        # Per range of the work, the next chunk from its front and the end of what is left: shared by the
        # workers, which take chunks from them (``_next_chunk``).
        self.cursors = context.Array("q", 2 * jobs)
        self.executor = ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_warm_up,
                                            initargs=(self.cursors,))
        for _ in range(jobs):  # a task per worker makes every process start now
            self.executor.submit(_ready)

    def check(self, chunks: List[List[WorkItem]]) -> List[WorkResult]:
        """Each worker owns a run of consecutive chunks (files of the same packages, which read the same other
        modules: each worker parses them once, not every worker each), then helps with what the others
        have left, from its far end."""
        ranges = _ranges(chunks, self.jobs)
        cursors = self.cursors
        with cursors.get_lock():
            for index, owned in enumerate(ranges):
                cursors[2 * index], cursors[2 * index + 1] = 0, len(owned)
        futures = [self.executor.submit(_check_range, own, ranges) for own in range(len(ranges))]
        by_place = {(which, index): results for future in futures for which, index, results in future.result()}
        return [r for which, owned in enumerate(ranges) for index in range(len(owned)) for r in by_place[which, index]]

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def check_files(files: Sequence[Tuple[str, Config]], jobs: int, cache: Optional[ResultCache],
                pool: Optional[WorkerPool] = None) -> List[Diagnostic]:
    """Findings of every file, from the cache where it still holds. ``pool``, when given, does the work if
    there is enough of it for a pool; it stays the caller's to close."""
    results: List[Diagnostic] = []
    work: List[WorkItem] = []
    for path, config in files:
        digest = config.digest()
        if cache is not None:
            hit = cache.lookup_by_stat(path, digest)
            if hit is not None:
                results.extend(hit)
                continue
            entry = cache.entry(path, digest)
            reusable = entry is not None and cache.dependencies_unchanged(entry)
            work.append((path, config, entry[2] if reusable else None))
        else:
            work.append((path, config, None))

    if jobs > 1 and len(work) >= POOL_THRESHOLD:
        # Many small chunks keep every core busy to the end (file costs vary a hundredfold) while
        # still amortising the cost of sending work between processes.
        chunk_size = max(4, len(work) // (jobs * 48))
        chunks = [work[i : i + chunk_size] for i in range(0, len(work), chunk_size)]
        if pool is not None:
            outcomes = pool.check(chunks)
        else:
            with WorkerPool(jobs) as own:
                outcomes = own.check(chunks)
    else:
        outcomes = _check_chunk(work)

    configs = {path: config for path, config in files}
    for path, digest, signature, found, others in outcomes:
        config_digest = configs[path].digest()
        if found is None and cache is not None:
            entry = cache.entry(path, config_digest)
            found = decode(entry[3], path) if entry else []
            others = tuple(entry[4]) if entry else ()
        found = found or []
        if cache is not None and digest is not None:
            cache.store(path, config_digest, digest, signature, found, others)
        results.extend(found)
    return results


def _ranges(chunks: List[List[WorkItem]], count: int) -> List[List[List[WorkItem]]]:
    """``chunks`` cut into ``count`` runs of consecutive chunks holding about as many bytes of source each
    (a file's size is the best cheap guess at what checking it costs)."""
    sizes = [sum(_size(item[0]) for item in chunk) for chunk in chunks]
    total = sum(sizes) or 1
    ranges: List[List[List[WorkItem]]] = [[] for _ in range(count)]
    done = 0
    for chunk, size in zip(chunks, sizes):
        ranges[min(count - 1, done * count // total)].append(chunk)
        done += size
    return ranges


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)
