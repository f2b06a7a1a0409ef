"""A leader election a deployed program runs beside its work: the elector's loop only contests or keeps a claim
(``SET NX`` to win, a renewal only the holder's token passes), so it is no job of its own; and work the program
does only ``if elector.leading:`` (a flag the elector's class sets only to a claim's answer or to False) runs
on the winner alone.  The same work without that test runs in every replica (OG201)."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

ELECTOR = """
    import asyncio

    from redis.asyncio import Redis

    KEEP = (
        "if redis.call('get', KEYS[1]) == ARGV[1] then "
        "return redis.call('expire', KEYS[1], ARGV[2]) end return 0"
    )


    class Elector:
        def __init__(self, redis: Redis, me: str):
            self.redis = redis
            self.me = me
            self.keep_script = redis.register_script(KEEP)
            self.leading = False

        async def _win(self) -> bool:
            return bool(await self.redis.set("rates:leader", self.me, nx=True, ex=30))

        async def _keep(self) -> bool:
            return bool(await self.keep_script(keys=["rates:leader"], args=[self.me, 30]))

        async def campaign(self, stop: asyncio.Event) -> None:
            while not stop.is_set():
                self.leading = await (self._keep() if self.leading else self._win())
                try:
                    await asyncio.wait_for(stop.wait(), timeout=10)
                except TimeoutError:
                    pass
    """

MAIN = """
    import asyncio

    import httpx
    from redis.asyncio import Redis

    from rates.elector import Elector


    async def push_rates(client):
        await client.post("https://partners.example/rates", json={"eur": 1.1})


    async def main():
        stop = asyncio.Event()
        elector = Elector(Redis(host="cache"), "me")
        asyncio.create_task(elector.campaign(stop))
        async with httpx.AsyncClient() as client:
            while not stop.is_set():
                {gate}
                await asyncio.sleep(60)


    if __name__ == "__main__":
        asyncio.run(main())
    """

DOCKERFILE = """
    FROM python:3.11-slim
    COPY rates ./rates
    CMD ["python", "-m", "rates"]
    """

COMPOSE = """
    services:
      rates:
        build: .
        deploy:
          replicas: 3
    """

GATED = """if elector.leading:
                    await push_rates(client)"""
UNGATED = "await push_rates(client)"


@pytest.mark.parametrize("gate, expected", [(UNGATED, [(10, "OG201")]), (GATED, [])])
def test_work_behind_an_electors_flag(tmp_path, gate, expected):
    write(tmp_path, {"rates/__init__.py": "", "rates/elector.py": ELECTOR,
                     "rates/__main__.py": MAIN.replace("{gate}", gate), "Dockerfile": DOCKERFILE,
                     "docker-compose.yml": COMPOSE})
    assert findings(tmp_path, "rates/__main__.py", codes=("OG201",)) == expected
    assert findings(tmp_path, "rates/elector.py", codes=("OG201",)) == []


LEASE = """
    import asyncio

    from redis.asyncio import Redis


    class Lease:
        def __init__(self, redis: Redis):
            self.redis = redis
            self.gone = asyncio.Event()

        async def take(self) -> bool:
            return bool(await self.redis.set("sync:leader", "me", nx=True, ex=30))
    """

PROGRAM = """
    import asyncio

    import httpx
    from redis.asyncio import Redis

    from sync.lease import Lease


    async def pull(client):
        await client.post("https://supplier.example/pull")


    async def lead(lease, client):
        while not lease.gone.is_set():
            await pull(client)
            try:
                await asyncio.wait_for(lease.gone.wait(), timeout=60)
            except TimeoutError:
                pass


    async def main():
        lease = Lease(Redis(host="cache"))
        async with httpx.AsyncClient() as client:
            while True:
                {call}
                await asyncio.sleep(15)


    if __name__ == "__main__":
        asyncio.run(main())
    """

SYNC_DOCKERFILE = DOCKERFILE.replace("rates", "sync")
SYNC_COMPOSE = COMPOSE.replace("rates", "sync")


@pytest.mark.parametrize("call, expected", [
    ("await lead(lease, client)", [(10, "OG201"), (14, "OG201")]),
    ("if await lease.take():\n                    await lead(lease, client)", []),
])
def test_a_loop_only_the_lease_holder_enters(tmp_path, call, expected):
    write(tmp_path, {"sync/__init__.py": "", "sync/lease.py": LEASE,
                     "sync/__main__.py": PROGRAM.replace("{call}", call),
                     "Dockerfile": SYNC_DOCKERFILE, "docker-compose.yml": SYNC_COMPOSE})
    assert findings(tmp_path, "sync/__main__.py", codes=("OG201",)) == expected
