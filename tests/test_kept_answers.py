"""OG501: a lease whose answer is kept on the instance and handed back to the caller.

``self._owned = bool(await self._redis.setnx(self._key, token))`` then ``return self._owned``: the method answers
its caller whether it took the key, as ``return await r.setnx(...)`` would, so the key is a lock; taken with
SETNX it never expires, and a holder that dies leaves it for good.  With ``SET NX PX`` it expires.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LEASE = """\
    import secrets

    from redis.asyncio import Redis


    class ResourceLease:
        def __init__(self, redis: Redis, name: str, ttl_ms: int = 30_000) -> None:
            self._redis = redis
            self._key = f"app:lease:{name}"
            self._ttl_ms = ttl_ms
            self._token = secrets.token_hex(16)
            self._held = False

        async def acquire(self) -> bool:
            self._held = bool(await {take})
            return self._held
"""


@pytest.mark.parametrize("take, reported", [
    ("self._redis.setnx(self._key, self._token)", [(15, "OG501")]),
    ("self._redis.set(self._key, self._token, nx=True, px=self._ttl_ms)", []),
])
def test_a_take_whose_answer_the_instance_keeps_and_returns(tmp_path, take, reported):
    write(tmp_path, {"app/__init__.py": "", "app/lease.py": LEASE.replace("{take}", take)})
    assert findings(tmp_path, "app/lease.py", codes=("OG501",)) == reported


def test_a_value_kept_on_the_instance_and_never_read_back_is_no_answer(tmp_path):
    source = LEASE.replace("{take}", "self._redis.setnx(self._key, self._token)").replace(
        "            return self._held\n", "            return None\n")
    write(tmp_path, {"app/__init__.py": "", "app/lease.py": source})
    assert findings(tmp_path, "app/lease.py", codes=("OG501",)) == []
