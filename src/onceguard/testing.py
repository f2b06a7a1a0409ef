"""Run a rule-doc example the way a user's file would be checked (used by the test suite)."""
from __future__ import annotations

import os
import tempfile
from typing import List, Set, Tuple

from .config import from_mapping
from .docs import Example
from .engine.check import check_source


def findings_for_example(example: Example, directory: str = "") -> Set[Tuple[int, str]]:
    own_directory = None
    if not directory:
        own_directory = tempfile.TemporaryDirectory()
        directory = own_directory.name
    try:
        path = os.path.join(directory, example.path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(example.source)
        config = from_mapping(dict(example.config), root=directory, where=f"{example.code_id}.md example")
        found = check_source(example.source.encode("utf-8"), path, config)
        return {(d.line, d.code) for d in found}
    finally:
        if own_directory is not None:
            own_directory.cleanup()


def write_source(directory, path: str, source: str) -> str:
    """Write ``source`` (dedented) at ``directory/path``, creating its folders; return the full path."""
    import os
    import textwrap

    full = os.path.join(str(directory), path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as handle:
        handle.write(textwrap.dedent(source))
    return full


def findings_in_written_file(directory, path: str, source: str, code: str, cross_file: bool = False):
    """Write ``source`` at ``directory/path``, check it with the project rooted at ``directory`` and return
    the findings of ``code``."""
    from .config import from_mapping
    from .engine.check import check_source

    full = write_source(directory, path, source)
    with open(full, "rb") as handle:
        data = handle.read()
    found = check_source(data, full, from_mapping({}, root=str(directory)), cross_file=cross_file)
    return [d for d in found if d.code == code]


# A large module for the bounded-memory reading of large files (tests and bench/large_file.py).

_HEAD = '''\
import asyncpg
from apscheduler.schedulers.background import BackgroundScheduler

from billing import send_invoices

scheduler = BackgroundScheduler()


def nightly_invoices():  # expect: OG201
    send_invoices()


scheduler.add_job(nightly_invoices, "interval", hours=24)
'''

_METHOD = '''\
    async def exclusive(self, pool: asyncpg.Pool, job_name: str) -> bool:
        async with pool.acquire() as conn:
            async with conn.transaction():
                return await conn.fetchval(
                    f"SELECT pg_try_advisory_xact_lock({hash(job_name)})"  # expect: OG104
                )
'''

_TAIL = '''\


def hourly_digest():  # expect: OG201
    send_invoices()


scheduler.add_job(hourly_digest, "interval", hours=1)
scheduler.start()
'''


def generated_module(size: int) -> str:
    """About ``size`` bytes of dense generated code around three hazards, each marked ``# expect:``: handlers, a class larger than a window with a hazard in
    one of its methods, a table of literals."""
    parts = [_HEAD, "\n\n"]
    handlers = size * 2 // 5
    written = 0
    n = 0
    while written < handlers:
        part = (f"def handler_{n}(request, value=None):\n"
                f"    data = {{'id': {n}, 'name': 'h{n}', 'tags': ['a', 'b', 'c']}}\n"
                f"    return request.send(data, value)\n\n\n")
        parts.append(part)
        written += len(part)
        n += 1
    parts.append("class Client:\n    base = 'https://example.invalid'\n\n")
    methods = size * 7 // 20
    m = 0
    while written < handlers + methods:
        part = f"    def call_{m}(self, payload):\n        return self.post('/v1/{m}', payload)\n\n"
        if m == 1000:
            part += _METHOD + "\n"
        parts.append(part)
        written += len(part)
        m += 1
    parts.append("\n\nROWS = [\n")
    r = 0
    while written < size:
        part = f"    ({r}, 'row-{r}', {r * 0.5}, None),\n"
        parts.append(part)
        written += len(part)
        r += 1
    parts.append("]\n")
    parts.append(_TAIL)
    return "".join(parts)


def expected_findings(text: str) -> List[Tuple[int, str]]:
    """The (line, code) pairs the ``# expect:`` comments of ``text`` announce."""
    return sorted((number, line.rsplit("# expect: ", 1)[1].strip())
                  for number, line in enumerate(text.splitlines(), 1) if "# expect: " in line)
