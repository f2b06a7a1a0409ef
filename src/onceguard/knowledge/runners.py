"""Calls that run a callable they are handed, as data.

``await asyncio.to_thread(upgrade)``, ``loop.run_in_executor(None, upgrade)``, ``run_in_threadpool(upgrade)``,
``threading.Thread(target=upgrade).start()``: the callable runs in the process that makes the call, when it
makes it (or soon after, on a thread, a pool or the event loop of that process). For the question of where code
runs, handing a function to one of these is calling it there; for what a job does, the job's work is the
callable's.  ``analysis.handed`` reads these tables.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

#: Where the callable sits in the call: its position, or its keyword (None when it has no such way in).
Slot = Tuple[Optional[int], Optional[str]]

#: Functions (qualified) that run a callable they are handed.
RUNNER_FUNCTIONS: Dict[str, Slot] = {
    "asyncio.to_thread": (0, None),
    "threading.Thread": (None, "target"),
    "threading.Timer": (1, "function"),
    "anyio.to_thread.run_sync": (0, None),
    "anyio.from_thread.run_sync": (0, None),
    "starlette.concurrency.run_in_threadpool": (0, None),
    "fastapi.concurrency.run_in_threadpool": (0, None),
    "twisted.internet.threads.deferToThread": (0, None),
    "twisted.internet.threads.deferToThreadPool": (2, None),
}

#: Methods that do the same on their receiver (an executor, an event loop, a task group, a future).
RUNNER_METHODS: Dict[str, Slot] = {
    "submit": (0, None), "run_in_executor": (1, None), "start_soon": (0, None), "call_soon": (0, None),
    "call_later": (1, None), "add_done_callback": (0, None),
    # Starlette's and FastAPI's ``BackgroundTasks.add_task(fn, *args)``: run in this process after the response
    "add_task": (0, None),
}

#: Functions (qualified) that wrap a callable into another one that runs it when called: ``partial(fn, x)``
#: handed to a runner, or called at once (``await sync_to_async(fn)()``), runs ``fn``. The position of the
#: wrapped callable.
WRAPPERS: Dict[str, int] = {
    "functools.partial": 0,
    "asgiref.sync.sync_to_async": 0,
    "asgiref.sync.async_to_sync": 0,
}
