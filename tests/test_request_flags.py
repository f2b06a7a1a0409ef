"""OG608: a module-level event request code flips and other code tests.

``maintenance_mode.set()`` in an admin endpoint, ``if maintenance_mode.is_set(): return 503`` in a middleware:
the endpoint's request is served by one worker process of one replica, and only that process sees the flag.
Found whether the event is made in the module that flips it or imported from another; not for an event only
waited on (a signal to this process's own thread), nor for one set by start-up code.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

FLAGS = """\
    import threading

    maintenance_mode = threading.Event()
"""

MIDDLEWARE = """\
    from flask import Flask, abort

    from site_app.flags import maintenance_mode

    app = Flask(__name__)


    @app.before_request
    def refuse_during_maintenance():
        if maintenance_mode.{test}():
            abort(503)
"""

ADMIN = """\
    from flask import request

    from site_app.flags import maintenance_mode as switch
    from site_app.web import app


    @app.post("/admin/maintenance")
    def toggle():
        if request.json["enabled"]:
            switch.set()
        else:
            switch.clear()
        return {"ok": True}
"""


@pytest.mark.parametrize("test, expected", [("is_set", [(10, "OG608")]), ("wait", [])])
def test_an_event_an_endpoint_flips_and_a_hook_tests(tmp_path, test, expected):
    write(tmp_path, {"site_app/__init__.py": "", "site_app/flags.py": FLAGS,
                     "site_app/web.py": MIDDLEWARE.replace("{test}", test), "site_app/admin.py": ADMIN})
    assert findings(tmp_path, "site_app/admin.py", codes=("OG608",)) == expected


ONE_MODULE = """\
    import asyncio

    from fastapi import FastAPI, HTTPException

    app = FastAPI()
    paused = asyncio.Event()


    @app.post("/pause")
    async def pause():
        paused.set()


    @app.post("/orders")
    async def place_order():
        if paused.is_set():
            raise HTTPException(503)
        return {"ok": True}
"""


def test_an_event_made_flipped_and_tested_in_one_module(tmp_path):
    write(tmp_path, {"shop/__init__.py": "", "shop/api.py": ONE_MODULE})
    assert findings(tmp_path, "shop/api.py", codes=("OG608",)) == [(11, "OG608")]


def test_an_event_set_by_start_up_code_is_each_process_own(tmp_path):
    write(tmp_path, {"shop/__init__.py": "", "shop/api.py": ONE_MODULE.replace(
        '@app.post("/pause")', '@app.on_event("startup")')})
    assert findings(tmp_path, "shop/api.py", codes=("OG608",)) == []
