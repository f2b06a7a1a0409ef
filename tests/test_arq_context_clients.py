"""arq hands each function its worker runs a context whose ``"redis"`` entry is the worker's redis.asyncio client:
``ctx["redis"].lock(...)`` in such a function is a redis-py lock, which waits by default (OG103).  A function no
worker lists, whose ``ctx`` could be anything, is not read so."""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

TASKS = """\
    from shop.search import rebuild


    async def reindex(ctx: dict) -> None:
        async with ctx["redis"].lock("reindex", timeout=300{blocking}):
            await rebuild()
"""

SEARCH = """\
    async def rebuild() -> None:
        pass
"""

WORKER = """\
    from shop.tasks import reindex


    class WorkerSettings:
        functions = [{listed}]
"""


@pytest.mark.parametrize("listed, blocking, expected", [
    ("reindex", "", [(5, "OG103")]),
    ("reindex", ", blocking=False", []),
    ("", "", []),
])
def test_the_worker_client_of_an_arq_job(tmp_path, listed, blocking, expected):
    write(tmp_path, {"shop/__init__.py": "", "shop/tasks.py": TASKS.replace("{blocking}", blocking),
                     "shop/search.py": SEARCH, "shop/worker.py": WORKER.replace("{listed}", listed)})
    assert findings(tmp_path, "shop/tasks.py", codes=("OG103",)) == expected
