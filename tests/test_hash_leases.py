"""A lease kept in a Redis hash (who holds it and until when, for operators to read): read with HGETALL, found
free, written with HSET -- which has no NX -- so two replicas that read it free together both take it. A hash
filled on a miss and handed back is a cache, not a lease."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LEASE = """
    import time

    import redis

    client = redis.Redis()


    class FeedLease:
        def __init__(self, supplier: int, token: str) -> None:
            self.key = f"feed:{{supplier}}"
            self.token = token

        def take(self) -> bool:
            holder = client.{read}(self.key{field})
            if holder and float(holder.get("until", 0)) > time.time():
                return False
            client.hset(self.key, mapping={{"owner": self.token, "until": str(time.time() + 300)}})
            client.expire(self.key, 300)
            return True

        def release(self) -> None:
            client.delete(self.key)
    """

CACHE = """
    import redis

    client = redis.Redis()


    def supplier_profile(supplier: int, load) -> dict:
        key = f"profile:{supplier}"
        cached = client.hgetall(key)
        if cached:
            return cached
        profile = load(supplier)
        client.hset(key, mapping=profile)
        client.expire(key, 600)
        return profile
    """


@pytest.mark.parametrize("read, field", [("hgetall", ""), ("hget", ', "until"')])
def test_a_lease_kept_in_a_hash(tmp_path, read, field):
    source = LEASE.format(read=read, field=field)
    if read == "hget":
        source = source.replace('float(holder.get("until", 0))', "float(holder)")
    write(tmp_path, {"feeds/__init__.py": "", "feeds/lease.py": source})
    assert findings(tmp_path, "feeds/lease.py", codes=("OG501",)) == [(18, "OG501")]


def test_a_hash_filled_on_a_miss_is_a_cache(tmp_path):
    write(tmp_path, {"feeds/__init__.py": "", "feeds/profiles.py": CACHE})
    assert findings(tmp_path, "feeds/profiles.py", codes=("OG501", "OG502")) == []
