"""Process-local state read by request hooks, memo invalidations handed on as callbacks, and a subscription's
callback taken off again.

- OG608: a module-level set one request fills (``revoke(jti)`` from the logout route) and a Flask
  ``@app.before_request`` hook asks (``if is_revoked(jti): return _unauthorized(...)``): another replica never
  saw the revocation.  A hook is request code; the answer decides what the client is told.
- OG607: ``transaction.on_commit(get_permissions.cache_clear)``: the memo is cleared when the callback runs,
  in this process only.
- OG605 (clean): a relay of Postgres notifications to this process's sockets whose callback is also handed to
  ``remove_listener`` when it stops: naming it there runs nothing.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

REVOCATION = """\
    _revoked: set = set()


    def revoke(jti: str) -> None:
        _revoked.add(jti)


    def is_revoked(jti: str) -> bool:
        return jti in _revoked
"""

HOOKS = """\
    from flask import Flask, jsonify, request

    from tokens.revocation import is_revoked


    def install(app: Flask) -> None:
        @app.before_request
        def check_token():
            jti = request.headers.get("X-Token-Id", "")
            if {test}:
                return jsonify(error="revoked"), 401
            return None
"""

ROUTES = """\
    from flask import Blueprint, request

    from tokens.revocation import revoke

    bp = Blueprint("auth", __name__)


    @bp.post("/logout")
    def logout():
        revoke(request.headers["X-Token-Id"])
        return {"ok": True}
"""


@pytest.mark.parametrize("test, expected", [("is_revoked(jti)", [(1, "OG608")]), ("not jti", [])])
def test_a_revocation_set_asked_by_a_request_hook(tmp_path, test, expected):
    write(tmp_path, {"tokens/__init__.py": "", "tokens/revocation.py": REVOCATION,
                     "tokens/hooks.py": HOOKS.replace("{test}", test), "tokens/routes.py": ROUTES})
    assert findings(tmp_path, "tokens/revocation.py", codes=("OG608",)) == expected


PERMISSIONS = """\
    from functools import lru_cache

    from django.db import transaction
    from django.http import JsonResponse

    from staff.models import Grant


    @lru_cache(maxsize=1024)
    def get_permissions(user_id: int) -> frozenset:
        return frozenset(Grant.objects.filter(user_id=user_id).values_list("code", flat=True))


    def set_grants(request, user_id: int):
        with transaction.atomic():
            Grant.objects.filter(user_id=user_id).delete()
            transaction.on_commit({clear})
        return JsonResponse({"ok": True})
"""


@pytest.mark.parametrize("clear, expected", [("get_permissions.cache_clear", [(17, "OG607")]),
                                             ("lambda: None", [])])
def test_a_memo_cleared_by_a_commit_callback(tmp_path, clear, expected):
    write(tmp_path, {"staff/__init__.py": "", "staff/permissions.py": PERMISSIONS.replace("{clear}", clear)})
    assert findings(tmp_path, "staff/permissions.py", codes=("OG607",)) == expected


RELAY = """\
    import asyncio
    import json
    from contextlib import asynccontextmanager

    import asyncpg
    from fastapi import FastAPI, WebSocket

    _sockets: set = set()


    class Relay:
        async def start(self) -> None:
            self._conn = await asyncpg.connect("postgresql://app@db/app")
            await self._conn.add_listener("order_status", self._on_notify)

        async def stop(self) -> None:
            {stop}

        def _on_notify(self, connection, pid, channel, payload) -> None:
            asyncio.get_running_loop().create_task(self._send(json.loads(payload)))

        async def _send(self, event: dict) -> None:
            for socket in list(_sockets):
                await socket.send_json(event)


    relay = Relay()


    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await relay.start()
        yield
        await relay.stop()


    app = FastAPI(lifespan=lifespan)


    @app.websocket("/ws")
    async def ws(websocket: WebSocket):
        await websocket.accept()
        _sockets.add(websocket)
"""


@pytest.mark.parametrize("stop", ['await self._conn.remove_listener("order_status", self._on_notify)', "pass"])
def test_a_notification_relay_whose_callback_is_also_removed(tmp_path, stop):
    write(tmp_path, {"shop/__init__.py": "", "shop/relay.py": RELAY.replace("{stop}", stop)})
    assert findings(tmp_path, "shop/relay.py", codes=("OG605",)) == []
