"""A Redis client bound at module level to ``None`` and made by an ``init`` function that declares it ``global``
(``_r = None`` … ``global _r; _r = redis.Redis.from_url(url)``): the ``None`` is a placeholder until start-up
fills it, not another kind of receiver, so the calls on the name are calls on the client.  A lease taken with NX
there and released with a plain DELETE drops whichever replica's lease the key holds by then (OG502); one given
back through a compare-and-delete script is not."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LEASE = """
    import os
    {imports}

    _r = None


    def connect(url: str) -> None:
        global _r
        _r = {make}


    def take(job: str, seconds: int) -> bool:
        return bool(_r.set(f"{key}", os.getpid(), nx=True, ex=seconds))


    def {free}(job: str) -> None:
        _r.delete(f"{key}")
    """

OWNED = """
    import uuid

    import redis

    _r = None
    _give_back = None

    GIVE_BACK = \"\"\"
    if redis.call("get", KEYS[1]) == ARGV[1] then
        return redis.call("del", KEYS[1])
    end
    return 0
    \"\"\"


    def connect(url: str) -> None:
        global _r, _give_back
        _r = redis.Redis.from_url(url)
        _give_back = _r.register_script(GIVE_BACK)


    def take(job: str, seconds: int):
        token = uuid.uuid4().hex
        return token if _r.set(f"hold:{job}", token, nx=True, ex=seconds) else None


    def give_back(job: str, token: str) -> None:
        _give_back(keys=[f"hold:{job}"], args=[token])
    """


@pytest.mark.parametrize("imports, make, key, free", [
    ("import redis", "redis.Redis.from_url(url)", "jobs:{job}:lock", "give_back"),
    ("from redis import StrictRedis", "StrictRedis.from_url(url, socket_timeout=5)", "locks:{job}", "release"),
    ("import redis as redis_py", "redis_py.Redis(host=url)", "lease:{job}", "drop"),
])
def test_a_lease_on_a_client_filled_in_at_start_up_is_released_blindly(tmp_path, imports, make, key, free):
    source = LEASE.format(imports=imports, make=make, key=key, free=free)
    write(tmp_path, {"jobs/__init__.py": "", "jobs/hold.py": source})
    assert findings(tmp_path, "jobs/hold.py", codes=("OG502",)) == [(18, "OG502")]


def test_a_lease_given_back_by_compare_and_delete_is_left_alone(tmp_path):
    write(tmp_path, {"jobs/__init__.py": "", "jobs/hold.py": OWNED})
    assert findings(tmp_path, "jobs/hold.py", codes=("OG502",)) == []
