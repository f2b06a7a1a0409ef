"""OG608: a "seen" marker whose only removals are the expiry of the oldest ids (taken off a queue of arrivals)
and an undo that failure runs (``except: ledger.forget(key); raise``) still remembers what was handled in this
process; one removed when the work is done (``finally:``) marks work in flight, not work handled."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LEDGER = """\
    import time
    from collections import deque


    class Ledger:
        def __init__(self, keep_seconds: int) -> None:
            self.keep_seconds = keep_seconds
            self._seen: set[str] = set()
            self._arrivals: deque = deque()

        def first_time(self, key: str) -> bool:
            now = time.monotonic()
            while self._arrivals and now - self._arrivals[0][0] > self.keep_seconds:
                _, old = self._arrivals.popleft()
                self._seen.discard(old)
            if key in self._seen:
                return False
            self._seen.add(key)
            self._arrivals.append((now, key))
            return True

        def forget(self, key: str) -> None:
            self._seen.discard(key)


    ledger = Ledger(3600)
"""

ROUTES = """\
    import httpx
    from flask import Flask, request

    from relay.ledger import ledger

    app = Flask(__name__)


    @app.post("/hooks/parcel")
    def parcel():
        key = request.headers["X-Delivery"]
        if not ledger.first_time(key):
            return {{"status": "duplicate"}}
        try:
            httpx.post("https://notify.example.org/parcel", json=request.get_json())
        {ending}
        return {{"status": "accepted"}}
"""


@pytest.mark.parametrize("ending, expected", [
    ("except Exception:\n            ledger.forget(key)\n            raise", [(8, "OG608")]),
    ("finally:\n            ledger.forget(key)", []),
])
def test_a_marker_undone_only_on_failure(tmp_path, ending, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'relay'\n", "relay/__init__.py": "",
                     "relay/ledger.py": LEDGER, "relay/routes.py": ROUTES.format(ending=ending)})
    assert findings(tmp_path, "relay/ledger.py", codes=("OG608",)) == expected
