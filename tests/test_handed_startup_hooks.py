"""Start-up reach: a function handed by name to another module's start-up hook runs at every replica's start.

``Litestar(on_startup=[init_db])`` (or ``app.add_event_handler("startup", init_db)``, ``app.on_startup.append``)
with ``init_db`` imported from ``db.py``: ``init_db`` is never called by name anywhere, yet every replica runs it
when it boots, and the schema it generates is written by all of them at once (OG401).
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

DB = """\
    from tortoise import Tortoise


    async def init_db() -> None:
        await Tortoise.init(db_url="postgres://db/kennels", modules={"models": ["kennels.models"]})
        await Tortoise.generate_schemas(safe=True)
"""

LITESTAR = """\
    from litestar import Litestar, get

    from kennels.db import init_db


    @get("/healthz")
    async def healthz() -> dict:
        return {"ok": True}


    app = Litestar(route_handlers=[healthz], on_startup=[init_db])
"""

STARLETTE = """\
    from starlette.applications import Starlette

    from kennels import db

    app = Starlette()
    app.add_event_handler("startup", db.init_db)
"""

AIOHTTP = """\
    from aiohttp import web

    from kennels.db import init_db as prepare


    async def _on_startup(app):
        await prepare()


    def make_app() -> web.Application:
        app = web.Application()
        app.on_startup.append(_on_startup)
        return app
"""


@pytest.mark.parametrize("app", [LITESTAR, STARLETTE, AIOHTTP], ids=["on_startup-list", "add_event_handler", "called-by-a-hook"])
def test_a_function_handed_to_another_module_start_up_hook_runs_at_start_up(tmp_path, app):
    write(tmp_path, {"kennels/__init__.py": "", "kennels/db.py": DB, "kennels/app.py": app})
    assert findings(tmp_path, "kennels/db.py", codes=("OG401",)) == [(6, "OG401")]


def test_a_function_only_a_command_runs_is_left_alone(tmp_path):
    command = """\
    import asyncio

    from kennels.db import init_db

    if __name__ == "__main__":
        asyncio.run(init_db())
"""
    write(tmp_path, {"kennels/__init__.py": "", "kennels/db.py": DB, "kennels/migrate.py": command})
    assert findings(tmp_path, "kennels/db.py", codes=("OG401",)) == []
