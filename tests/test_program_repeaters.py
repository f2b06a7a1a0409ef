"""OG201: a program a deployment file runs in every replica hands its work to a repeater of the project.

``await run_every(pusher.push, 60)`` in the program's ``main()`` (run by its ``__main__`` block), where
``run_every`` -- in another module -- calls the function it was handed on every pass of a loop that pauses
and never ends: the handed function is a job of that loop on every replica.  The program's own text spells no
loop and no scheduler, so it is read because the deployment runs it.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

CLOCK = """\
    import asyncio


    async def run_every(work, seconds: float) -> None:
        while True:
            try:
                await work()
            except Exception:
                pass
            await asyncio.sleep(seconds)
"""

PUSHER = """\
    import httpx


    class StockPusher:
        def __init__(self, url: str) -> None:
            self.url = url

        async def push(self) -> None:
            async with httpx.AsyncClient() as client:
                await client.post(self.url, json={"levels": []})
"""

WORKER = """\
    import asyncio

    from depot.clock import run_every
    from depot.pusher import StockPusher


    async def main() -> None:
        pusher = StockPusher("https://marketplace.example.com/stock")
        await run_every(pusher.push, 60)


    if __name__ == "__main__":
        asyncio.run(main())
"""

DOCKERFILE = """\
FROM python:3.12-slim
COPY . /srv
CMD ["python", "-m", "depot.worker"]
"""


def _project(tmp_path, worker: str = WORKER, clock: str = CLOCK, pusher: str = PUSHER, deployed: bool = True):
    files = {"depot/__init__.py": "", "depot/clock.py": clock, "depot/pusher.py": pusher, "depot/worker.py": worker}
    write(tmp_path, files)
    if deployed:
        (tmp_path / "Dockerfile").write_text(DOCKERFILE)


@pytest.mark.parametrize("worker", [
    WORKER,
    WORKER.replace("await run_every(pusher.push, 60)", "await run_every(work=pusher.push, seconds=60)"),
    WORKER.replace("from depot.clock import run_every", "from depot import clock").replace(
        "await run_every(", "await clock.run_every("),
], ids=["positional", "keywords", "module-attribute"])
def test_work_handed_to_a_repeater_of_another_module_is_a_job(tmp_path, worker):
    _project(tmp_path, worker=worker)
    assert findings(tmp_path, "depot/worker.py") == [(9, "OG201")]


def test_a_thread_program_handing_a_function_is_read_the_same(tmp_path):
    clock = CLOCK.replace("import asyncio", "import time").replace("async def", "def").replace(
        "await work()", "work()").replace("await asyncio.sleep(seconds)", "time.sleep(seconds)")
    pusher = """\
    import httpx


    def push_stock() -> None:
        httpx.post("https://marketplace.example.com/stock", json={"levels": []})
"""
    worker = """\
    from depot.clock import run_every
    from depot.pusher import push_stock


    def main() -> None:
        run_every(push_stock, 60)


    if __name__ == "__main__":
        main()
"""
    _project(tmp_path, worker=worker, clock=clock, pusher=pusher)
    # (``main`` only forwards to ``run_every``: the hand-off is read where the program makes it)
    assert findings(tmp_path, "depot/worker.py") == [(10, "OG201")]


def test_a_program_no_deployment_runs_is_left_alone(tmp_path):
    _project(tmp_path, deployed=False)
    assert findings(tmp_path, "depot/worker.py") == []


def test_work_that_claims_its_run_is_left_alone(tmp_path):
    claimed = PUSHER.replace("""        async def push(self) -> None:
""", """        async def push(self) -> None:
            if not await self.redis.set("stock-push", "1", nx=True, ex=50):
                return
""")
    _project(tmp_path, pusher=claimed)
    assert findings(tmp_path, "depot/worker.py") == []


def test_a_loop_that_ends_is_no_repeater(tmp_path):
    _project(tmp_path, clock=CLOCK.replace("    while True:", "    for _ in range(3):"))
    assert findings(tmp_path, "depot/worker.py") == []
