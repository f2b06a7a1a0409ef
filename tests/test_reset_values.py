"""OG610: a value of the run written by a reset (``finished_at = now()``) does not narrow which rows it picks;
one in the row selection does (``WHERE heartbeat_at < now() - interval '1 minute'``: a lease that expired)."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

APP = """\
    from quart import Quart
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    app = Quart(__name__)
    engine = create_async_engine("postgresql+asyncpg://exports@db/exports")


    @app.before_serving
    async def close_out_interrupted():
        async with engine.begin() as conn:
            await conn.execute(text(
                "UPDATE export_jobs SET status = 'failed', finished_at = now() WHERE {where}"))
"""


@pytest.mark.parametrize("where, reported", [
    ("status = 'running'", [(12, "OG610")]),
    ("status = 'running' AND heartbeat_at < now() - interval '1 minute'", []),
])
def test_a_time_written_is_not_a_time_selected(tmp_path, where, reported):
    write(tmp_path, {"exports/__init__.py": "", "exports/app.py": APP.replace("{where}", where)})
    assert findings(tmp_path, "exports/app.py", codes=("OG610",)) == reported
