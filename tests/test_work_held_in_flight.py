"""OG608: a marker of work in flight kept in process memory, as a guard against a second run.

``if user in _running: return 409`` ... ``_running.add(user)`` ... ``finally: _running.discard(user)``: while the
work runs, this process turns a second request away.  A request on another replica finds no marker and starts
the same work again, which matters when the work acts outside the process (rows, uploads, mail).  A marker
around work that stays in the process (this process's own cache), or a test that waits for the running work
instead of turning the request away, is no such guard.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

ROUTES = """\
    from fastapi import BackgroundTasks, FastAPI, HTTPException

    from exports.work import {work}

    app = FastAPI()
    _running = set()


    def _run(user_id: int) -> None:
        try:
            {work}(user_id)
        finally:
            _running.discard(user_id)


    @app.post("/exports/{{user_id}}")
    def request_export(user_id: int, tasks: BackgroundTasks):
        if user_id in _running:
            {refusal}
        _running.add(user_id)
        tasks.add_task(_run, user_id)
        return {{"status": "preparing"}}
"""

WORK = """\
    import boto3

    from exports.db import engine

    _cache = {}


    def build_export(user_id: int) -> None:
        with engine.begin() as conn:
            conn.exec_driver_sql("INSERT INTO exports (user_id, state) VALUES (%s, 'ready')", (user_id,))
        boto3.client("s3").put_object(Bucket="exports", Key=str(user_id), Body=b"...")


    def warm_own_cache(user_id: int) -> None:
        _cache[user_id] = sum(range(1000))
"""


@pytest.mark.parametrize("work, refusal, expected", [
    ("build_export", 'raise HTTPException(409, "an export is already running")', [(6, "OG608")]),
    ("build_export", 'return {"status": "already preparing"}', [(6, "OG608")]),
    ("warm_own_cache", 'raise HTTPException(409, "already warming")', []),  # (the work stays in this process)
    ("build_export", "print(user_id)", []),  # (no second request is turned away)
])
def test_a_second_request_turned_away_while_work_runs(tmp_path, work, refusal, expected):
    write(tmp_path, {"exports/__init__.py": "", "exports/db.py": "from sqlalchemy import create_engine\n"
                     "engine = create_engine('postgresql://app@db/app')\n",
                     "exports/work.py": WORK,
                     "exports/api.py": ROUTES.replace("{work}", work).replace("{refusal}", refusal)})
    assert findings(tmp_path, "exports/api.py", codes=("OG608",)) == expected


DICT_IN_HANDLER = """\
    from flask import Flask

    from exports.work import build_export

    app = Flask(__name__)
    _in_progress = {}


    @app.post("/exports/<int:user_id>")
    def request_export(user_id):
        if user_id in _in_progress:
            return {"error": "already running"}, 409
        _in_progress[user_id] = "running"
        try:
            build_export(user_id)
        finally:
            _in_progress.pop(user_id, None)
        return {"status": "done"}
"""


def test_a_marker_taken_out_by_the_handler_itself(tmp_path):
    write(tmp_path, {"exports/__init__.py": "", "exports/db.py": "from sqlalchemy import create_engine\n"
                     "engine = create_engine('postgresql://app@db/app')\n",
                     "exports/work.py": WORK, "exports/api.py": DICT_IN_HANDLER})
    assert findings(tmp_path, "exports/api.py", codes=("OG608",)) == [(6, "OG608")]


FETCH_SLOTS = """\
    import asyncio
    from contextlib import asynccontextmanager

    import httpx
    from fastapi import FastAPI, Request

    app = FastAPI()
    _locks = {}
    _fetchers = {}


    @asynccontextmanager
    async def fetch_slot(key):
        _fetchers[key] = _fetchers.get(key, 0) + 1
        try:
            async with _locks.setdefault(key, asyncio.Lock()):
                yield
        finally:
            left = _fetchers.get(key, 0) - 1
            if left > 0:
                _fetchers[key] = left
            else:
                {removal}


    def idle(key):
        return key not in _fetchers


    @app.get("/metadata/{key}")
    async def metadata(key: str, request: Request):
        async with fetch_slot(key):
            return httpx.get(f"https://idp.example.org/{key}").json()


    @app.post("/metadata/prune")
    async def prune(request: Request):
        return [key for key in list(_locks) if idle(key)]
"""


@pytest.mark.parametrize("removal, expected", [
    ("_fetchers.pop(key, None)", []),  # (each entry is taken out by the function that put it in)
    ("_fetchers.pop(next(iter(_fetchers)), None)", [(9, "OG608")]),  # (an eviction of another key)
])
def test_an_entry_its_writer_takes_out_again_is_work_in_flight(tmp_path, removal, expected):
    write(tmp_path, {"idp/__init__.py": "", "idp/api.py": FETCH_SLOTS.replace("{removal}", removal)})
    assert findings(tmp_path, "idp/api.py", codes=("OG608",)) == expected
