"""OG608: a memo whose entries carry the time they expire is still a memo.

``cache[key] = (validation, time.monotonic() + TTL)`` written by the request that missed: each process computes
the entry again when it lacks it, whatever another helper also stores there (a negative entry).  A record one
request writes for another request to read, with no fill on a miss, stays a registry.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

AUTH = """\
    import time

    from fastapi import FastAPI, HTTPException, Request

    from keys.backend import lookup

    app = FastAPI()
    _validations = {}


    def remember_invalid(key):
        _validations[key] = (None, time.monotonic() + 5)


    @app.get("/whoami")
    async def whoami(request: Request):
        key = request.headers["x-api-key"]
        cached = _validations.get(key)
        if cached is not None and cached[1] > time.monotonic():
            if cached[0] is None:
                raise HTTPException(401)
            return cached[0]
        found = await lookup(key)
        if found is None:
            remember_invalid(key)
            raise HTTPException(401)
        {fill}
        return found
"""


@pytest.mark.parametrize("fill, expected", [
    ("_validations[key] = (found, time.monotonic() + 300)", []),
    ("pass", [(8, "OG608")]),  # (only a helper writes, the request reads: the helper's records decide)
])
def test_a_cache_of_validations_filled_on_a_miss(tmp_path, fill, expected):
    write(tmp_path, {"keys/__init__.py": "", "keys/api.py": AUTH.replace("{fill}", fill)})
    assert findings(tmp_path, "keys/api.py", codes=("OG608",)) == expected
