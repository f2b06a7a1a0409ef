"""OG501: a key set only if absent to hold who took it, whose value read back is compared with that owner
(``return r.get(key) == me``), is a lease: held by one replica and owed back, it needs an expiry in the same
command. A marker meant to stay (a constant, only tested) is not asked about."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LEADER = """\
    import redis


    class Chair:
        def __init__(self, client: redis.Redis, seat: str) -> None:
            self.client = client
            self.seat = seat

        def hold(self, me: str) -> bool:
            if self.client.set(self.seat, {stored}, nx=True{expiry}):
                return True
            return self.client.get(self.seat) == {compared}
"""


@pytest.mark.parametrize("stored, expiry, compared, expected", [
    ("me", "", "me", [(10, "OG501")]),
    ("me", ", px=15_000", "me", []),
    ('"1"', "", '"1"', []),
    ("me", "", "None", []),
])
def test_a_key_that_holds_its_owner(tmp_path, stored, expiry, compared, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'seats'\n", "seats/__init__.py": "",
                     "seats/chair.py": LEADER.format(stored=stored, expiry=expiry, compared=compared)})
    assert findings(tmp_path, "seats/chair.py", codes=("OG501",)) == expected
