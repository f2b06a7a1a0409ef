"""OG608: an object start-up code makes and keeps on the application (``app.state.guard = LoginGuard()`` in a
lifespan) lives as long as the process, as a module-level one does: a per-key counter it keeps and compares
with a limit is counted per process. One made in a request handler lives for that request only."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

GUARD = """\
    class LoginGuard:
        def __init__(self, limit: int) -> None:
            self.limit = limit
            self._failures = {}

        def failed(self, user: str) -> None:
            self._failures[user] = self._failures.get(user, 0) + 1

        def blocked(self, user: str) -> bool:
            return self._failures.get(user, 0) >= self.limit
"""

APP = """\
    from contextlib import asynccontextmanager

    from fastapi import FastAPI, HTTPException, Request

    from gate.guard import LoginGuard


    @asynccontextmanager
    async def lifespan(app: FastAPI):
        {made_at_startup}
        yield


    app = FastAPI(lifespan=lifespan)


    @app.post("/login")
    async def login(request: Request, user: str, password: str):
        {made_in_request}
        guard = request.app.state.guard
        if guard.blocked(user):
            raise HTTPException(status_code=403)
        if password != "secret":
            guard.failed(user)
            raise HTTPException(status_code=401)
        return {{"ok": True}}
"""


@pytest.mark.parametrize("startup, request_made, expected", [
    ("app.state.guard = LoginGuard(5)", "pass", [(4, "OG608")]),
    ("pass", "request.app.state.guard = LoginGuard(5)", []),
])
def test_an_object_start_up_keeps_on_the_app(tmp_path, startup, request_made, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'gate'\n", "gate/__init__.py": "",
                     "gate/guard.py": GUARD,
                     "gate/app.py": APP.format(made_at_startup=startup, made_in_request=request_made)})
    assert findings(tmp_path, "gate/guard.py", codes=("OG608",)) == expected
