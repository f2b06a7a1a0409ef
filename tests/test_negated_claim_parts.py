"""OG201: a claim tested among other conditions, each negated (``if not got or not still_due(x): continue``).

That test is ``if not (got and still_due(x))``: the work after it runs only when the claim was won, as after
``if not got: continue``.  A loop whose skip tests only its own condition claims nothing.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LEASE = """\
    import contextlib
    import uuid

    import redis

    _RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"


    @contextlib.contextmanager
    def source_lease(client, name, ttl):
        key = f"pull:lease:{name}"
        token = uuid.uuid4().hex
        if not client.set(key, token, nx=True, ex=ttl):
            yield False
            return
        try:
            yield True
        finally:
            client.eval(_RELEASE, 1, key, token)
"""

PULLER = """\
    import time

    import httpx
    import redis

    from .lease import source_lease

    SOURCES = ["alpha", "beta"]


    def due(name):
        return True


    def pull(name):
        httpx.post(f"https://ingest.example.com/{name}")


    def main():
        client = redis.Redis()
        while True:
            for name in SOURCES:
                with source_lease(client, name, 300) as got:
                    if {test}:
                        continue
                    pull(name)
            time.sleep(60)


    if __name__ == "__main__":
        main()
"""


@pytest.mark.parametrize("test, reported", [
    ("not got or not due(name)", []),
    ("not due(name) or not got", []),
    ("not due(name)", [(15, "OG201")]),
])
def test_a_claim_tested_among_negated_conditions(tmp_path, test, reported):
    write(tmp_path, {"pull/__init__.py": "", "pull/lease.py": LEASE, "pull/__main__.py": PULLER.replace("{test}", test),
                     "docker-compose.yml": "services:\n  pull:\n    image: x\n    command: python -m pull\n"
                                           "    deploy:\n      replicas: 2\n"})
    assert findings(tmp_path, "pull/__main__.py") == reported
