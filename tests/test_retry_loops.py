"""A loop that leaves on its own once its work is done or a deadline passes (``while True: if await
attempt() == "ready": return ...; await asyncio.sleep(5)``) retries a start-up step; it is no ticker whose
every pass every replica repeats forever (OG201 silent).  An endless loop with the same pause is one, also
when it waits on a stop event (``while not stop.wait(60):``).  ``os.kill(pid, 0)`` asks whether a process is
there and signals nothing."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SETUP = """\
    import asyncio
    import time
    from contextlib import asynccontextmanager

    import httpx
    from fastapi import FastAPI


    async def _attempt():
        response = await httpx.AsyncClient().post("https://search.example.com/indexes", json={"name": "docs"})
        return "ready" if response.status_code in (200, 201, 409) else "retry"


    async def ensure_index(deadline_seconds=120):
        deadline = time.monotonic() + deadline_seconds
        {loop}


    @asynccontextmanager
    async def lifespan(app):
        task = asyncio.create_task(ensure_index())
        yield
        task.cancel()


    app = FastAPI(lifespan=lifespan)
"""

RETRY = """while True:
            if await _attempt() == "ready":
                return
            if time.monotonic() >= deadline:
                return
            await asyncio.sleep(5)"""

FOREVER = """while True:
            await _attempt()
            await asyncio.sleep(5)"""


@pytest.mark.parametrize("loop, reported", [(RETRY, []), (FOREVER, [(14, "OG201")])])
def test_a_loop_that_retries_until_done(tmp_path, loop, reported):
    write(tmp_path, {"svc/__init__.py": "", "svc/main.py": SETUP.replace("{loop}", loop)})
    assert findings(tmp_path, "svc/main.py") == reported


STOPPABLE = """\
    import threading

    import httpx

    stop = threading.Event()


    def _publish():
        while not stop.wait(60):
            httpx.post("https://status.example.com/beat", json={"up": True})


    threading.Thread(target=_publish, daemon=True).start()
"""


def test_an_endless_loop_waiting_on_its_stop_event(tmp_path):
    write(tmp_path, {"svc/__init__.py": "", "svc/beat.py": STOPPABLE})
    assert findings(tmp_path, "svc/beat.py") == [(8, "OG201")]


WATCHDOG = """\
    import asyncio
    import os
    from contextlib import asynccontextmanager

    from fastapi import FastAPI

    ENGINE = {"pid": 0, "alive": True}


    async def _watch():
        while True:
            await asyncio.sleep(30)
            try:
                os.kill(ENGINE["pid"], 0)
            except ProcessLookupError:
                ENGINE["alive"] = False


    @asynccontextmanager
    async def lifespan(app):
        asyncio.create_task(_watch())
        yield


    app = FastAPI(lifespan=lifespan)
"""


def test_a_watchdog_that_only_asks_whether_a_process_is_there(tmp_path):
    write(tmp_path, {"svc/__init__.py": "", "svc/watch.py": WATCHDOG})
    assert findings(tmp_path, "svc/watch.py") == []


GIVES_UP = """while True:
            try:
                await _attempt()
            except asyncio.CancelledError:
                break
            except Exception:
                break
            await asyncio.sleep(5)"""


def test_a_loop_that_only_leaves_when_it_fails_is_a_ticker(tmp_path):
    # Leaving from an ``except`` handler (the pass failed, the task was cancelled) is giving up, not being done.
    write(tmp_path, {"svc/__init__.py": "", "svc/main.py": SETUP.replace("{loop}", GIVES_UP)})
    assert findings(tmp_path, "svc/main.py") == [(14, "OG201")]
