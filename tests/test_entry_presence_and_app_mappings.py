"""Process-local entries asked about by their presence, and found through the application mapping.

- ``entry = _holds.get(key)`` … ``if entry is None: _holds[key] = Hold(...)``: the function that asks whether
  the key is there before storing its entry marks the key, whatever the entry holds (OG608, like an added
  member).
- An entry stored under a field of the object the caller hands in (``_drafts[draft.draft_id] = draft``) whose
  caller builds that object with a minted id (``Draft(draft_id=uuid4().hex, ...)``) is there for a later request
  handed the id.
- aiohttp's application is a mapping of what start-up keeps (``app[drafts_key] = DraftStore()``): read back as
  ``request.app[drafts_key]`` it is an instance of that class, so its methods' callers are found.
"""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

HOLDS = """\
    import time
    from dataclasses import dataclass

    from fastapi import HTTPException


    @dataclass
    class Hold:
        body_hash: str
        answer: dict | None
        at: float


    _holds: dict[str, Hold] = {{}}


    class HoldBook:
        def reserve(self, key: str, body_hash: str):
            {lookup}
            if {test}:
                _holds[key] = Hold(body_hash, None, time.time())
                return None
            if current.body_hash != body_hash:
                raise HTTPException(422, "key reused")
            return current

        def finish(self, key: str, answer: dict) -> None:
            _holds[key].answer = answer
"""

ROUTES = """\
    from typing import Annotated

    import httpx
    from fastapi import APIRouter, Depends, Header

    from .holds import HoldBook

    router = APIRouter()


    def hold_book() -> HoldBook:
        return HoldBook()


    @router.post("/transfers")
    async def transfer(body: dict, key: Annotated[str, Header()], book: Annotated[HoldBook, Depends(hold_book)]):
        earlier = book.reserve(key, str(hash(str(body))))
        if earlier is not None:
            return earlier.answer
        answer = httpx.post("https://bank.example/transfers", json=body).json()
        book.finish(key, answer)
        return answer
"""


@pytest.mark.parametrize("lookup, test, expected", [
    ("current = _holds.get(key)", "current is None", [(14, "OG608")]),
    ("current = _holds.get(key)", "key not in _holds", [(14, "OG608")]),
])
def test_an_entry_stored_when_its_key_is_absent_marks_the_key(tmp_path, lookup, test, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'wire'\n", "wire/__init__.py": "",
                     "wire/holds.py": HOLDS.format(lookup=lookup, test=test), "wire/routes.py": ROUTES})
    assert findings(tmp_path, "wire/holds.py", codes=("OG608",)) == expected


DRAFTS = """\
    from dataclasses import dataclass, field

    _drafts: dict[str, "Draft"] = {}


    @dataclass
    class Draft:
        draft_id: str
        owner: str
        pages: list = field(default_factory=list)


    class DraftStore:
        async def open(self, draft: Draft) -> None:
            _drafts[draft.draft_id] = draft

        async def get(self, draft_id: str):
            return _drafts.get(draft_id)
"""

KEYS = """\
    from aiohttp import web

    from .drafts import DraftStore

    drafts_key = web.AppKey("drafts", DraftStore)
"""

APP = """\
    from aiohttp import web

    from .drafts import DraftStore
    from .handlers import routes
    from .keys import drafts_key


    def make_app() -> web.Application:
        app = web.Application()
        app[drafts_key] = {store}
        app.add_routes(routes)
        return app
"""

HANDLERS = """\
    import uuid

    from aiohttp import web

    from .drafts import Draft
    from .keys import drafts_key

    routes = web.RouteTableDef()


    @routes.post("/drafts")
    async def start(request: web.Request) -> web.Response:
        draft_id = uuid.uuid4().hex
        await request.app[drafts_key].open(Draft(draft_id=draft_id, owner=request.remote or ""))
        return web.json_response({"id": draft_id}, status=201)


    @routes.get("/drafts/{draft_id}")
    async def show(request: web.Request) -> web.Response:
        draft = await request.app[drafts_key].get(request.match_info["draft_id"])
        if draft is None:
            raise web.HTTPNotFound()
        return web.json_response({"pages": len(draft.pages)})
"""


@pytest.mark.parametrize("store, expected", [
    ("DraftStore()", [(3, "OG608")]),
    ("{}", []),  # not an instance of the class that reads the entries: its callers are not found through it
])
def test_an_entry_under_a_minted_field_read_through_the_app_mapping(tmp_path, store, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'pages'\n", "pages/__init__.py": "",
                     "pages/drafts.py": DRAFTS, "pages/keys.py": KEYS, "pages/app.py": APP.format(store=store),
                     "pages/handlers.py": HANDLERS})
    assert findings(tmp_path, "pages/drafts.py", codes=("OG608",)) == expected
