"""OG302's single-use consumes, told apart from a resource a DELETE request removes.

``if entry.owner == caller: delete(entry); return {...}`` spends nothing when the handler serves HTTP DELETE
of that entry: a second DELETE of it is the same request again.  The same check around the delete of a one-time
code in a POST handler that then grants access is a code spent twice.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

HANDLER = """\
    from fastapi import APIRouter, HTTPException

    from .store import get_link, remove_link

    router = APIRouter()


    @router.{verb}("/links/{{code}}")
    async def drop_link(code: str, owner: str) -> dict:
        link = await get_link(code)
        if link.owner == owner:
            await remove_link(code)
            return {{"removed": True}}
        raise HTTPException(status_code=403)
"""

STORE = """\
    from .db import database


    async def get_link(code):
        return await database.fetch_one("SELECT * FROM links WHERE code = :code", {"code": code})


    async def remove_link(code):
        await database.execute("DELETE FROM links WHERE code = :code", {"code": code})
"""

DB = """\
    from databases import Database

    database = Database("postgresql://app@db/app")
"""


@pytest.mark.parametrize("verb, reported", [("delete", []), ("post", [(12, "OG302")])])
def test_a_delete_request_removes_the_resource_it_names(tmp_path, verb, reported):
    write(tmp_path, {"links/__init__.py": "", "links/db.py": DB, "links/store.py": STORE,
                     "links/routes.py": HANDLER.format(verb=verb)})
    assert findings(tmp_path, "links/routes.py", codes=("OG302",)) == reported


FLASK_HANDLER = """\
    from flask import Blueprint, abort

    from .store import get_link, remove_link

    bp = Blueprint("links", __name__)


    @bp.route("/links/<code>", methods={methods})
    def drop_link(code, owner):
        link = get_link(code)
        if link.owner == owner:
            remove_link(code)
            return {{"removed": True}}
        abort(403)
"""

SYNC_STORE = """\
    from .db import engine
    from sqlalchemy import text


    def get_link(code):
        with engine.connect() as conn:
            return conn.execute(text("SELECT * FROM links WHERE code = :c"), {"c": code}).one()


    def remove_link(code):
        with engine.begin() as conn:
            conn.execute(text("DELETE FROM links WHERE code = :c"), {"c": code})
"""


@pytest.mark.parametrize("methods, reported", [('["DELETE"]', []), ('["POST", "DELETE"]', [(12, "OG302")])])
def test_a_route_that_takes_only_delete(tmp_path, methods, reported):
    write(tmp_path, {"links/__init__.py": "",
                     "links/db.py": 'from sqlalchemy import create_engine\nengine = create_engine("postgresql://db/app")\n',
                     "links/store.py": SYNC_STORE, "links/routes.py": FLASK_HANDLER.format(methods=methods)})
    assert findings(tmp_path, "links/routes.py", codes=("OG302",)) == reported
