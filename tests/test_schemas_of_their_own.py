"""Schema a request makes for one thing it names -- a customer's own schema at sign-up, ``CREATE SCHEMA`` with the
name built from the request's values and the customer's tables made there through ``schema_translate_map`` -- is
made once, by the replica asked, not the application's schema that every replica ensures.  The same statements
with a fixed name, or run at start-up, still race."""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

ONBOARD = """
    from sqlalchemy import MetaData, text

    workspace_tables = MetaData(schema="workspace")


    async def open_workspace(engine, handle: str) -> None:
        {name_line}
        async with engine.begin() as conn:
            await conn.execute(text(f'CREATE SCHEMA "{{schema}}"'))
            scoped = await conn.execution_options(schema_translate_map={{"workspace": schema}})
            await scoped.run_sync(workspace_tables.create_all)
    """

PER_CALL = 'schema = f"ws_{handle}"'
FIXED = 'schema = "ws_shared"'

ROUTES = """
    from fastapi import FastAPI

    from .onboarding import open_workspace

    app = FastAPI()


    @app.post("/workspaces/{handle}")
    async def create_workspace(handle: str):
        await open_workspace(app.state.engine, handle)
        return {"ok": True}
    """

STARTUP = """
    from fastapi import FastAPI

    from .onboarding import open_workspace

    app = FastAPI()


    @app.on_event("startup")
    async def boot() -> None:
        await open_workspace(app.state.engine, "default")
    """


def _project(tmp_path, name_line: str, entry: str) -> None:
    write(tmp_path, {"ws/__init__.py": "", "ws/onboarding.py": ONBOARD.format(name_line=name_line),
                     "ws/main.py": entry})


def test_a_schema_a_request_names(tmp_path):
    _project(tmp_path, PER_CALL, ROUTES)
    assert findings(tmp_path, "ws/onboarding.py", codes=("OG401",)) == []


def test_a_fixed_schema_every_request_makes(tmp_path):
    _project(tmp_path, FIXED, ROUTES)
    assert [code for _, code in findings(tmp_path, "ws/onboarding.py", codes=("OG401",))] == ["OG401"]


def test_a_named_schema_made_at_start_up(tmp_path):
    _project(tmp_path, PER_CALL, STARTUP)
    assert [code for _, code in findings(tmp_path, "ws/onboarding.py", codes=("OG401",))] == ["OG401"]
