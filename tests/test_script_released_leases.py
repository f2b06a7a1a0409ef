"""OG501: a key taken with SET NX and given back by a compare-and-delete Lua script is a lease, whatever its key is
called: the script deletes it only while it holds the caller's token, which only an owner's lock needs.  Taken
without an expiry, a holder that dies keeps it forever.  The script may be sent with ``eval`` or registered on the
client and called with ``keys=[...]``."""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

EVAL_LEASE = """
    import secrets
    from contextlib import contextmanager

    from redis import Redis

    GIVE_BACK = '''
    if redis.call("get", KEYS[1]) == ARGV[1] then
        return redis.call("del", KEYS[1])
    end
    return 0
    '''


    @contextmanager
    def exporting(store: Redis, tenant: str):
        slot = f"export:{{tenant}}"
        mine = secrets.token_hex(8)
        got = store.set(slot, mine, nx=True{expiry})
        try:
            yield bool(got)
        finally:
            if got:
                store.eval(GIVE_BACK, 1, slot, mine)
    """

REGISTERED_LEASE = """
    import uuid

    import redis.asyncio as aioredis

    DROP_IF_MINE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('UNLINK', KEYS[1]) end return 0"


    class ReindexSlot:
        def __init__(self, client: aioredis.Redis, index: str) -> None:
            self.client = client
            self.slot = f"reindex:{{index}}"
            self.owner = uuid.uuid4().hex
            self._drop = client.register_script(DROP_IF_MINE)

        async def take(self) -> bool:
            return bool(await self.client.set(self.slot, self.owner, nx=True{expiry}))

        async def give_back(self) -> None:
            await self._drop(keys=[self.slot], args=[self.owner])
    """

# a script that rewrites the key whatever it holds: no owner's give-back, and a key only tested is a marker
NOT_A_RELEASE = EVAL_LEASE.replace('if redis.call("get", KEYS[1]) == ARGV[1] then', "if true then")


@pytest.mark.parametrize("source, expiry, expected", [
    (EVAL_LEASE, "", [(19, "OG501")]),
    (EVAL_LEASE, ", px=60_000", []),
    (NOT_A_RELEASE, "", []),
])
def test_a_lease_given_back_by_eval(tmp_path, source, expiry, expected):
    write(tmp_path, {"jobs/__init__.py": "", "jobs/slots.py": source.format(expiry=expiry)})
    assert findings(tmp_path, "jobs/slots.py", codes=("OG501",)) == expected


@pytest.mark.parametrize("expiry, expected", [("", [(17, "OG501")]), (", ex=120", [])])
def test_a_lease_given_back_by_a_registered_script(tmp_path, expiry, expected):
    write(tmp_path, {"jobs/__init__.py": "", "jobs/slots.py": REGISTERED_LEASE.format(expiry=expiry)})
    assert findings(tmp_path, "jobs/slots.py", codes=("OG501",)) == expected
