"""OG605: the queues that server-sent-event streams read their clients' messages from, kept in a module-level
container, are connections of this process as WebSockets are: a request that puts a message into each of them
reaches only the clients of its own replica.  The queue counts as a connection when a streaming generator takes
from it (made there, or handed back to it by the function that registers it)."""
from __future__ import annotations

import textwrap

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LISTENERS = """\
    import asyncio

    listeners: list = []


    def listen() -> asyncio.Queue:
        inbox = asyncio.Queue(maxsize=50)
        listeners.append(inbox)
        return inbox
"""

STREAM = """\
    from fastapi import APIRouter
    from fastapi.responses import StreamingResponse

    from gauge import fanout

    router = APIRouter()


    async def _events():
        inbox = fanout.listen()
        while True:
            reading = await inbox.get()
            yield f"data: {reading}\\n\\n"


    @router.get("/readings/stream")
    async def stream() -> StreamingResponse:
        return StreamingResponse(_events(), media_type="text/event-stream")
"""

INGEST = """\
    from fastapi import APIRouter

    from gauge import fanout as hub

    router = APIRouter()


    @router.post("/readings")
    async def ingest(reading: dict) -> dict:
        for inbox in list(hub.listeners):
            inbox.put_nowait(reading)
        return {"ok": True}
"""

# A work queue each request hands a job to, drained by a worker task: no stream reads it.
WORK_STREAM = STREAM.replace("reading = await inbox.get()", "reading = inbox.qsize()")


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(text).splitlines(), 1) if needle in line)


def test_a_message_put_into_every_stream_queue_of_the_process_is_reported(tmp_path):
    write(tmp_path, {"gauge/__init__.py": "", "gauge/fanout.py": LISTENERS, "gauge/stream.py": STREAM,
                     "gauge/ingest.py": INGEST})
    assert findings(tmp_path, "gauge/ingest.py", codes=("OG605",)) == [(_line(INGEST, "for inbox in"), "OG605")]


def test_queues_no_stream_takes_from_are_no_connections(tmp_path):
    assert WORK_STREAM != STREAM
    write(tmp_path, {"gauge/__init__.py": "", "gauge/fanout.py": LISTENERS, "gauge/stream.py": WORK_STREAM,
                     "gauge/ingest.py": INGEST})
    assert findings(tmp_path, "gauge/ingest.py", codes=("OG605",)) == []
