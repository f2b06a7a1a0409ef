"""OG201: a ticker that flushes what this process buffered, taking the buffer with a swap (``taken, self._pending =
dict(self._pending), Counter()``) rather than in two statements, is per-process work: each replica holds its own
share and must write it.  A swap that empties some other attribute than the one it read takes nothing."""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

TALLY = """\
    from collections import Counter


    class ClickTally:
        def __init__(self) -> None:
            self._pending = Counter()
            self._spare = Counter()

        def count(self, link_id: int) -> None:
            self._pending[link_id] += 1

        def take(self) -> dict:
            taken, self.{emptied} = dict(self._pending), Counter()
            return taken
"""

APP = """\
    import asyncio
    from contextlib import asynccontextmanager

    import asyncpg
    from fastapi import FastAPI

    from links.tally import ClickTally

    tally = ClickTally()


    async def flush_clicks(pool: asyncpg.Pool, counts: ClickTally) -> None:
        while True:
            await asyncio.sleep(10)
            for link_id, delta in counts.take().items():
                await pool.execute("UPDATE links SET clicks = clicks + $1 WHERE id = $2", delta, link_id)


    @asynccontextmanager
    async def lifespan(app: FastAPI):
        pool = await asyncpg.create_pool("postgresql://db/links")
        task = asyncio.create_task(flush_clicks(pool, tally))
        yield
        task.cancel()


    app = FastAPI(lifespan=lifespan)


    @app.post("/links/{link_id}/click")
    async def click(link_id: int) -> dict:
        tally.count(link_id)
        return {"ok": True}
"""


@pytest.mark.parametrize("emptied, expected", [("_pending", []), ("_spare", [(12, "OG201")])])
def test_a_buffer_taken_with_a_swap(tmp_path, emptied, expected):
    write(tmp_path, {"links/__init__.py": "", "links/tally.py": TALLY.format(emptied=emptied), "links/app.py": APP})
    assert findings(tmp_path, "links/app.py") == expected


GLOBAL = """\
    import threading
    import time

    import psycopg

    _PENDING = []


    def record(event: dict) -> None:
        _PENDING.append(event)


    def ship_events() -> None:
        global _PENDING
        while True:
            time.sleep(5)
            batch, _PENDING = _PENDING, []
            with psycopg.connect("postgresql://db/audit") as conn:
                conn.cursor().executemany("INSERT INTO audit_events (body) VALUES (%s)", [(e,) for e in batch])


    threading.Thread(target=ship_events, daemon=True).start()
"""


@pytest.mark.parametrize("cross_file", [True, False])
def test_a_module_buffer_taken_with_a_swap(tmp_path, cross_file):
    write(tmp_path, {"audit/__init__.py": "", "audit/shipper.py": GLOBAL})
    assert findings(tmp_path, "audit/shipper.py", cross_file=cross_file) == []
