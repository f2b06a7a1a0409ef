"""A Redis client known by the annotation of the local it is kept in.

``r: redis.asyncio.Redis = ctx["redis"]`` (arq hands its jobs the pool in ``ctx``): what the value is the code
does not show, its annotation does.  A lease taken on it with ``SET NX EX`` and given back with a plain ``DEL``
can drop the next holder's lease (OG502); an annotation of no client type says nothing.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

JOB = """\
    from redis.asyncio import Redis


    async def sweep(ctx):
        client: {annotation} = ctx["redis"]
        if not await client.set("lock:sweep", "1", ex=60, nx=True):
            return
        try:
            await ctx["service"].sweep()
        finally:
            await client.delete("lock:sweep")
"""


@pytest.mark.parametrize("annotation, reported", [("Redis", [(11, "OG502")]), ("object", [])])
def test_the_annotation_of_the_local_says_what_it_holds(tmp_path, annotation, reported):
    write(tmp_path, {"worker/__init__.py": "", "worker/jobs.py": JOB.replace("{annotation}", annotation)})
    assert findings(tmp_path, "worker/jobs.py", codes=("OG502",)) == reported


DISPATCH = """\
    from redis import Redis


    class CacheSteps:
        def __init__(self, client: Redis) -> None:
            self._client = client

        def answer(self, op, key, value):
            match op:
                case "get":
                    return self._client.get(key)
                case "set":
                    self._client.set(key, value)
                    return None
                case "delete":
                    self._client.delete(key)
                    return None
"""


def test_cases_of_one_dispatch_are_no_lease(tmp_path):
    """A GET, a SET and a DEL of the same key in different cases of one ``match`` never run in one call: no
    check-then-set lock taken and given back."""
    write(tmp_path, {"steps/__init__.py": "", "steps/cache.py": DISPATCH})
    assert findings(tmp_path, "steps/cache.py", codes=("OG501", "OG502")) == []
