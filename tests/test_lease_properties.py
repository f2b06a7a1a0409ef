"""Work a ticker does only while a lease object says it holds the lease, asked through a property
(``if steward.in_charge:``) that reads state the class sets only from a claim's answer (``SET NX`` won, or a
renewal only the holder's token passes) or resets to a false value: only the holder runs it.  The same property
over state set whatever happened claims nothing (OG201)."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

STEWARD = """
    import asyncio
    import time

    from redis.asyncio import Redis

    EXTEND = (
        "if redis.call('get', KEYS[1]) == ARGV[1] then "
        "return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"
    )


    class Steward:
        def __init__(self, redis: Redis, me: str) -> None:
            self.redis = redis
            self.me = me
            self.extend = redis.register_script(EXTEND)
            self._good_until = 0.0

        @property
        def in_charge(self) -> bool:
            return time.monotonic() < self._good_until

        async def _refresh(self) -> None:
            began = time.monotonic()
            won = await self.redis.set("feeds:steward", self.me, nx=True, px=20000)
            if not won:
                won = bool(await self.extend(keys=["feeds:steward"], args=[self.me, 20000]))
            self._good_until = {until}

        async def keep(self) -> None:
            try:
                while True:
                    await self._refresh()
                    await asyncio.sleep(5)
            finally:
                self._good_until = 0.0
    """

HELD = "began + 15 if won else 0.0"
ALWAYS = "began + 15"

TICKER = """
    import asyncio

    import httpx

    from feeds.steward import Steward


    async def publish(client: httpx.AsyncClient) -> None:
        await client.post("https://partners.example/feed")


    async def tick(steward: Steward, client: httpx.AsyncClient) -> None:
        while True:
            if steward.in_charge:
                await publish(client)
            await asyncio.sleep(30)
    """

MAIN = """
    import asyncio

    import httpx
    from redis.asyncio import Redis

    from feeds.steward import Steward
    from feeds.ticker import tick


    async def main() -> None:
        steward = Steward(Redis(host="cache"), "me")
        async with httpx.AsyncClient() as client:
            async with asyncio.TaskGroup() as group:
                group.create_task(steward.keep())
                group.create_task(tick(steward, client))


    if __name__ == "__main__":
        asyncio.run(main())
    """

DOCKERFILE = """
    FROM python:3.12-slim
    COPY feeds ./feeds
    CMD ["python", "-m", "feeds"]
    """

COMPOSE = """
    services:
      feeds:
        build: .
        deploy:
          replicas: 3
    """


def _project(tmp_path, until, ticker=TICKER, main=MAIN):
    write(tmp_path, {"feeds/__init__.py": "", "feeds/steward.py": STEWARD.format(until=until),
                     "feeds/ticker.py": ticker, "feeds/__main__.py": main, "Dockerfile": DOCKERFILE,
                     "docker-compose.yml": COMPOSE})
    return findings(tmp_path, "feeds/__main__.py", codes=("OG201",))


def test_a_ticker_gated_on_a_lease_property(tmp_path):
    assert _project(tmp_path, HELD) == []


def test_a_property_over_state_set_whatever_happened(tmp_path):
    assert _project(tmp_path, ALWAYS) == [(16, "OG201")]


@pytest.mark.parametrize("until, flagged", [(HELD, False), (ALWAYS, True)])
def test_the_ticker_beside_the_program(tmp_path, until, flagged):
    """The ticker defined in the program's own module, the steward imported as a module."""
    ticker = TICKER.replace("from feeds.steward import Steward", "from feeds import steward as leases") \
        .replace("steward: Steward", "steward: leases.Steward")
    body = ticker + MAIN.split("\n", 1)[1].replace("from feeds.ticker import tick\n", "") \
        .replace("from feeds.steward import Steward", "from feeds.steward import Steward  # noqa")
    assert bool(_project(tmp_path, until, main=body)) == flagged
