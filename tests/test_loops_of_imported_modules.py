"""The loop a deployed program repeats, written in a module the program imports: ``python -m courier`` whose
``__main__.py`` runs ``main()`` of ``courier/pump.py``, which awaits a worker's loop that pauses between passes
with an Event's wait bounded by a timeout (``asyncio.wait_for(stop.wait(), timeout=...)``) or a sleep."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

PUMP = """
    import asyncio

    import httpx


    class Pump:
        def __init__(self, client):
            self.client = client
            self.stop = asyncio.Event()

        async def push_pending(self):
            await self.client.post("https://partner.example/parcels", json={"since": "last"})

        async def forever(self):
            while not self.stop.is_set():
                await self.push_pending()
                {pause}


    async def main():
        async with httpx.AsyncClient() as client:
            await Pump(client).forever()
    """

MAIN = """
    import asyncio

    from courier.pump import main

    asyncio.run(main())
    """

DOCKERFILE = """
    FROM python:3.11-slim
    COPY courier ./courier
    CMD ["python", "-m", "courier"]
    """

COMPOSE = """
    services:
      courier:
        build: .
        deploy:
          replicas: 3
    """

WAIT = "await asyncio.wait_for(self.stop.wait(), timeout=30)"
SLEEP = "await asyncio.sleep(30)"


@pytest.mark.parametrize("pause", [WAIT, SLEEP])
@pytest.mark.parametrize("deployed, expected", [(True, [(12, "OG201")]), (False, [])])
def test_a_deployed_programs_loop_in_a_module_it_imports(tmp_path, pause, deployed, expected):
    files = {"courier/__init__.py": "", "courier/pump.py": PUMP.replace("{pause}", pause),
             "courier/__main__.py": MAIN}
    if deployed:
        files.update({"Dockerfile": DOCKERFILE, "docker-compose.yml": COMPOSE})
    write(tmp_path, files)
    assert findings(tmp_path, "courier/pump.py", codes=("OG201",)) == expected
