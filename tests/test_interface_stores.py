"""OG301 on a store known only by its interface: a counter read and written back through ``get``/``set`` of an
abstract class is a round trip of the store each implementation is.  The project's implementations decide:
one that keeps records in its object's own memory (a dict, an in-memory cache) is this process's memory, so no
other replica's change can be lost; one that sends them elsewhere keeps shared records; with none in the
project, the store is not one the project is shown to write."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

BASE = """\
    from abc import ABC, abstractmethod


    class KeyValues(ABC):
        @abstractmethod
        async def get(self, key):
            ...

        @abstractmethod
        async def set(self, key, value, ttl=None):
            ...
"""

IN_MEMORY = """\
    from cachetools import TTLCache

    from .base import KeyValues


    class MemoryValues(KeyValues):
        def __init__(self):
            self.entries: TTLCache = TTLCache(maxsize=1000, ttl=600)

        async def get(self, key):
            return self.entries.get(key)

        async def set(self, key, value, ttl=None):
            self.entries[key] = value
"""

REMOTE = """\
    import httpx

    from .base import KeyValues


    class RemoteValues(KeyValues):
        def __init__(self, url):
            self.client = httpx.AsyncClient(base_url=url)

        async def get(self, key):
            reply = await self.client.get(f"/values/{key}")
            return reply.json().get("value")

        async def set(self, key, value, ttl=None):
            await self.client.put(f"/values/{key}", json={"value": value, "ttl": ttl})
"""

HOLDER = """\
    from .base import KeyValues
    from .{module} import {cls}


    class Holder:
        current: KeyValues = {made}

        @staticmethod
        def values() -> KeyValues:
            return Holder.current
"""

COUNTER = """\
    from .holder import Holder


    async def count_attempt(account):
        values = Holder.values()
        seen = await values.get(f"attempts:{account}")
        total = (int(seen) + 1) if seen is not None else 1
        await values.set(f"attempts:{account}", str(total), ttl=3600)
        return total
"""


def _project(tmp_path, module, cls, made):
    holder = HOLDER.replace("{module}", module).replace("{cls}", cls).replace("{made}", made)
    write(tmp_path, {"kv/__init__.py": "", "kv/base.py": BASE, "kv/memory.py": IN_MEMORY, "kv/remote.py": REMOTE,
                     "kv/holder.py": holder, "kv/counter.py": COUNTER})


def test_an_interface_whose_implementation_sends_records_elsewhere_is_a_shared_store(tmp_path):
    _project(tmp_path, "remote", "RemoteValues", 'RemoteValues("http://values:8080")')
    assert findings(tmp_path, "kv/counter.py", codes=("OG301",)) == [(8, "OG301")]


@pytest.mark.parametrize("made", ["MemoryValues()", "None"])
def test_an_interface_only_kept_in_memory_here_is_this_process_memory(tmp_path, made):
    # The only implementations keep records in the object's own cache (the remote one is not in the project).
    _project(tmp_path, "memory", "MemoryValues", made)
    write(tmp_path, {"kv/remote.py": "VALUES_URL = 'http://values:8080'\n"})
    assert findings(tmp_path, "kv/counter.py", codes=("OG301",)) == []


def test_an_interface_with_no_implementation_in_the_project_is_not_a_store_it_writes(tmp_path):
    _project(tmp_path, "memory", "MemoryValues", "None")
    write(tmp_path, {"kv/remote.py": "VALUES_URL = 'http://values:8080'\n", "kv/memory.py": "SIZE = 1000\n",
                     "kv/holder.py": HOLDER.replace("from .{module} import {cls}\n", "").replace("{made}", "None")})
    assert findings(tmp_path, "kv/counter.py", codes=("OG301",)) == []
