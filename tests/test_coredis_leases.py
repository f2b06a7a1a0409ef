"""coredis: the same Redis commands spelled its own way.

``await client.set(key, token, condition=PureToken.NX, ex=ttl)`` takes a lease (a claim when its answer is
tested); ``await client.delete([key])`` takes its keys as a list, and after a separate awaited GET it can delete
the lease another replica took in between (OG502).  A compare-and-delete script releases only one's own.
"""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LEASE = """\
    import secrets

    import coredis
    from coredis.tokens import PureToken


    class Lease:
        def __init__(self, client: coredis.Redis, key: str, ttl_s: int) -> None:
            self.client = client
            self.key = key
            self.ttl_s = ttl_s
            self.token = ""

        async def acquire(self) -> bool:
            self.token = secrets.token_hex(16)
            return bool(await self.client.set(self.key, self.token, condition=PureToken.NX, ex=self.ttl_s))

        async def release(self) -> None:
            if await self.client.get(self.key) == self.token:
                await self.client.delete([self.key])
"""

LOOP = """\
    import asyncio

    import coredis
    import httpx

    from gates.lease import Lease


    async def leader_loop(client: coredis.Redis) -> None:
        lease = Lease(client, "gates:leader", 60)
        while True:
            if await lease.acquire():  # (left to expire: the period's claim)
                await httpx.AsyncClient().post("https://scada.example.org/setpoints", json={})
            await asyncio.sleep(30)


    async def hand_over(lease: Lease) -> None:
        await lease.release()


    async def main() -> None:
        asyncio.create_task(leader_loop(coredis.Redis.from_url("redis://redis")))
"""

APP = """\
    import asyncio
    from contextlib import asynccontextmanager

    import coredis
    from fastapi import FastAPI

    from gates.loop import leader_loop


    @asynccontextmanager
    async def lifespan(app: FastAPI):
        task = asyncio.create_task(leader_loop(coredis.Redis.from_url("redis://redis")))
        yield
        task.cancel()


    app = FastAPI(lifespan=lifespan)
"""


def _project(tmp_path, lease: str = LEASE) -> None:
    write(tmp_path, {"gates/__init__.py": "", "gates/lease.py": lease, "gates/loop.py": LOOP, "gates/app.py": APP})


def test_a_coredis_nx_set_is_a_claim_and_a_get_then_delete_release_is_unsafe(tmp_path):
    _project(tmp_path)
    assert findings(tmp_path, "gates/app.py", codes=("OG201",)) == []
    assert findings(tmp_path, "gates/lease.py", codes=("OG502",)) == [(20, "OG502")]


def test_a_compare_and_delete_script_is_a_safe_release(tmp_path):
    lua = LEASE.replace("""            if await self.client.get(self.key) == self.token:
                await self.client.delete([self.key])""", """            await self.client.eval(
                "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0",
                keys=[self.key], args=[self.token])""")
    _project(tmp_path, lua)
    assert findings(tmp_path, "gates/lease.py", codes=("OG502",)) == []


def test_without_the_nx_condition_the_set_claims_nothing(tmp_path):
    _project(tmp_path, LEASE.replace("condition=PureToken.NX, ", ""))
    assert [code for _, code in findings(tmp_path, "gates/app.py", codes=("OG201",))] == ["OG201"]
