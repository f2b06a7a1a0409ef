"""A job that enters a Redis lock only through a project helper that makes it (``with named_lock("sync"):`` with
``def named_lock(name): return client.lock(...)`` in another module) spells no word of the lock library: the
helper's name admits it, and the lock blocks by default as if it were written there."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

CLIENT = """
    import redis

    client = redis.Redis.from_url("redis://cache:6379/0")
    """

HELPERS = {
    "returned": """
        from .client import client


        def named_lock(name, timeout):
            return client.lock(f"sync:lock:{name}", timeout=timeout)
        """,
    "bound": """
        from .client import client


        def named_lock(name, timeout):
            made = client.lock(f"sync:lock:{name}", timeout=timeout{extra})
            return made
        """,
}

TASKS = """
    from huey import RedisHuey, crontab

    from .helpers import named_lock
    from .prices import push_prices

    huey = RedisHuey("sync")


    @huey.periodic_task(crontab(minute="*/15"))
    def sync_prices():
        with named_lock("prices", 600):
            push_prices()
    """

PRICES = """
    import httpx


    def push_prices():
        httpx.post("https://market.example.com/prices", json={})
    """


@pytest.mark.parametrize("helper, extra, expected", [
    ("returned", "", [(12, "OG103")]),
    ("bound", "", [(12, "OG103")]),
    # told not to wait long: a lock that gives up at once is a try-lock, not a queue
    ("bound", ", blocking=False", []),
])
def test_a_lock_a_project_helper_makes(tmp_path, helper, extra, expected):
    write(tmp_path, {"sync/__init__.py": "", "sync/client.py": CLIENT, "sync/prices.py": PRICES,
                     "sync/helpers.py": HELPERS[helper].replace("{extra}", extra), "sync/tasks.py": TASKS})
    assert findings(tmp_path, "sync/tasks.py", codes=("OG103",)) == expected
