"""``schedule``'s ``.at(...)`` names a time of day whether it is written in place or read from settings: every
replica fires at that moment, so a lease taken and given back around the work leads it (OG201), as it does for
``.at("02:00")``; an interval's runs drift apart between replicas and the same lease does not. A configured
time says nothing of its zone (OG202 reads only a time written in place)."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LEASE = """\
    import uuid


    class Lease:
        def __init__(self, client, name, ttl_ms):
            self.client = client
            self.key = "lease:" + name
            self.ttl_ms = ttl_ms
            self.token = uuid.uuid4().hex
            self._release = client.register_script(
                "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0")

        def take(self):
            return bool(self.client.set(self.key, self.token, nx=True, px=self.ttl_ms))

        def give_back(self):
            self._release(keys=[self.key], args=[self.token])
"""

MAIN = """\
    import os
    import time

    import redis
    import schedule

    from sweep.lease import Lease
    from sweep.work import compact


    class Compactor:
        def __init__(self, client):
            self.client = client

        def run(self):
            lease = Lease(self.client, "compact", 600_000)
            if not lease.take():
                return
            try:
                compact()
            finally:
                lease.give_back()


    def main():
        compactor = Compactor(redis.Redis.from_url(os.environ["REDIS_URL"]))
        schedule.{when}.do(compactor.run)
        while True:
            schedule.run_pending()
            time.sleep(5)
"""


@pytest.mark.parametrize("when, expected", [
    ('every().day.at(os.environ.get("COMPACT_AT", "03:30"))', []),
    ('every().day.at("03:30")', [(27, "OG202")]),
    ("every(6).hours", [(15, "OG201")]),
])
def test_a_lease_given_back_around_a_job_at_a_time_of_day(tmp_path, when, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'sweep'\n", "sweep/__init__.py": "",
                     "sweep/lease.py": LEASE, "sweep/work.py": "import requests\n\n\ndef compact():\n"
                                                              "    requests.post('http://store/compact')\n",
                     "sweep/main.py": MAIN.format(when=when)})
    assert findings(tmp_path, "sweep/main.py", codes=("OG201", "OG202")) == expected
