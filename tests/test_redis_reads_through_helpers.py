"""OG301 on Redis: a value read by a helper of the project and written back by its caller is the same read-modify-
write as ``hget`` then ``hset`` in one function.  The helper's key and field are its parameters read as what the
call hands in (``self.points(member)`` reads ``self._key``/``member``); a helper reading another field, or a
change made inside Redis, is none."""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

POINTS = """\
    from redis.asyncio import Redis


    class Points:
        def __init__(self, redis: Redis) -> None:
            self._redis = redis
            self._key = "loyalty:points"

        async def points(self, member: str) -> int:
            raw = await self._redis.hget(self._key, member)
            return int(raw or 0)

        async def add(self, member: str, earned: int) -> int:
            current = await self.points({read})
            total = current + earned
            await self._redis.hset(self._key, member, total)
            return total
"""


@pytest.mark.parametrize("read, expected", [
    ("member", [(16, "OG301")]),
    ('"house"', []),  # the house account's points, not this member's: no field is read back
])
def test_a_field_read_by_a_method_and_written_back_by_its_caller(tmp_path, read, expected):
    write(tmp_path, {"loyalty/__init__.py": "", "loyalty/points.py": POINTS.replace("{read}", read)})
    assert findings(tmp_path, "loyalty/points.py", codes=("OG301",)) == expected


STORE = """\
    import redis

    client = redis.Redis()


    def balance(account: str) -> int:
        return int(client.get(f"balance:{account}") or 0)
"""

TRANSFER = """\
    from bank.store import balance, client


    def deposit(account: str, amount: int) -> None:
        {change}
"""


@pytest.mark.parametrize("change, expected", [
    ('client.set(f"balance:{account}", balance(account) + amount)', [(5, "OG301")]),
    ('client.incrby(f"balance:{account}", amount)', []),
])
def test_a_value_read_by_a_helper_of_another_module(tmp_path, change, expected):
    write(tmp_path, {"bank/__init__.py": "", "bank/store.py": STORE,
                     "bank/transfer.py": TRANSFER.replace("{change}", change)})
    assert findings(tmp_path, "bank/transfer.py", codes=("OG301",)) == expected
