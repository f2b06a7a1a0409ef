"""Process memory that one request writes and another reads, spelled through small helpers.

- OG608: a per-key counter a helper increments and another helper answers as a comparison with a limit
  (``return _failures[key] >= LIMIT``), the route refusing on that answer.
- OG608: a registry a helper fills under a key its caller minted (``uuid4().hex`` in a route on ``""``, the
  router's own prefix) and another route reads.
- OG607: ``memo.cache_clear()`` in request code, ``memo`` an ``lru_cache`` of what the database holds.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

COUNTS = """\
    import collections

    _failures: collections.Counter = collections.Counter()
    LIMIT = 5


    def is_locked(user: str) -> bool:
        return _failures[user] >= LIMIT


    def failed(user: str) -> None:
        _failures[user] += 1
"""

COUNTS_IN_REDIS = """\
    import redis

    r = redis.Redis(host="redis")
    LIMIT = 5


    def is_locked(user: str) -> bool:
        return int(r.get(f"failures:{user}") or 0) >= LIMIT


    def failed(user: str) -> None:
        r.incr(f"failures:{user}")
"""

LOGIN = """\
    from fastapi import APIRouter, HTTPException

    from clinic import throttle

    router = APIRouter(prefix="/auth")


    @router.post("/login")
    def login(user: str, password: str) -> dict:
        if throttle.is_locked(user):
            raise HTTPException(423, "locked")
        if password != "secret":
            throttle.failed(user)
            raise HTTPException(401, "no")
        return {"ok": True}
"""


@pytest.mark.parametrize("counts, expected", [(COUNTS, ["OG608"]), (COUNTS_IN_REDIS, [])], ids=["memory", "redis"])
def test_a_counter_answered_by_a_helper_and_refused_on_by_a_route(tmp_path, counts, expected):
    write(tmp_path, {"clinic/__init__.py": "", "clinic/throttle.py": counts, "clinic/auth.py": LOGIN})
    assert [code for _, code in findings(tmp_path, "clinic/throttle.py", codes=("OG608",))] == expected


UPLOADS = """\
    from pathlib import Path

    _paths: dict = {}


    def begin(upload_id: str) -> Path:
        path = Path("/tmp") / f"{upload_id}.part"
        _paths[upload_id] = path
        return path


    def path_for(upload_id: str):
        return _paths.get(upload_id)
"""

ROUTES = """\
    import uuid

    from fastapi import APIRouter

    from scans import uploads

    router = APIRouter(prefix="/uploads")


    @router.post("")
    def start(chunk: bytes) -> dict:
        upload_id = {minted}
        uploads.begin(upload_id).write_bytes(chunk)
        return {{"id": upload_id}}


    @router.put("/{{upload_id}}")
    def append(upload_id: str, chunk: bytes) -> dict:
        path = uploads.path_for(upload_id)
        with open(path, "ab") as handle:
            handle.write(chunk)
        return {{"id": upload_id}}
"""


def test_a_registry_filled_under_a_key_the_route_minted_and_read_by_another_route(tmp_path):
    write(tmp_path, {"scans/__init__.py": "", "scans/uploads.py": UPLOADS,
                     "scans/routes.py": ROUTES.format(minted="uuid.uuid4().hex")})
    assert [code for _, code in findings(tmp_path, "scans/uploads.py", codes=("OG608",))] == ["OG608"]


MEMO = """\
    from functools import lru_cache

    from sqlalchemy import select

    from flags.db import Session, Flag


    @lru_cache(maxsize=1)
    def current_flags() -> dict:
        with Session() as session:
            return {row.name: row.on for row in session.scalars(select(Flag))}
"""

PURE_MEMO = """\
    from functools import lru_cache


    @lru_cache(maxsize=None)
    def current_flags() -> dict:
        return {"beta": False}
"""

ADMIN = """\
    from flask import Blueprint

    from flags import memo

    bp = Blueprint("admin", __name__)


    @bp.route("/admin/flags/<name>", methods=["POST"])
    def set_flag(name: str):
        memo.current_flags.cache_clear()
        return {"ok": True}
"""


@pytest.mark.parametrize("memo, expected", [(MEMO, ["OG607"]), (PURE_MEMO, [])], ids=["database-memo", "constant"])
def test_clearing_a_process_memo_of_shared_data_in_request_code(tmp_path, memo, expected):
    write(tmp_path, {"flags/__init__.py": "", "flags/db.py": "Session = None\nFlag = None\n", "flags/memo.py": memo,
                     "flags/admin.py": ADMIN})
    assert [code for _, code in findings(tmp_path, "flags/admin.py", codes=("OG607",))] == expected
