"""OG201: a job that only asks other services (HTTP GET: a safe method, which changes nothing on the server)
and keeps the answers in its own process is per-replica work every replica must do. Its callee may be
re-exported by a package's star import (``from .catalogue import *``), and may build its objects through
``cls(...)`` in a classmethod."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

APP = """\
    from apscheduler.schedulers.asyncio import AsyncIOScheduler

    scheduler = AsyncIOScheduler()


    async def refresh():
        from shelf.services import reload_catalogue

        await reload_catalogue()


    def start():
        scheduler.add_job(refresh, "interval", minutes=1)
        scheduler.start()
"""

SERVICES_INIT = """\
    from .catalogue import *
"""

CATALOGUE = """\
    import requests

    from shelf.models import Title

    _titles = {{}}


    async def reload_catalogue():
        rows = requests.{verb}("https://catalogue.internal/titles", timeout=5).json()
        _titles.clear()
        for row in rows:
            title = Title.from_row(row)
            _titles[title.key] = title
"""

MODELS = """\
    from dataclasses import dataclass


    @dataclass
    class Title:
        key: str
        name: str

        @classmethod
        def from_row(cls, row):
            return cls(key=row["key"], name=row["name"])
"""


@pytest.mark.parametrize("verb, expected", [("get", []), ("post", [(6, "OG201")])])
def test_a_job_that_only_reads_other_services_into_its_process(tmp_path, verb, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'shelf'\n", "shelf/__init__.py": "",
                     "shelf/app.py": APP, "shelf/services/__init__.py": SERVICES_INIT,
                     "shelf/services/catalogue.py": CATALOGUE.format(verb=verb), "shelf/models.py": MODELS})
    assert findings(tmp_path, "shelf/app.py") == expected


TICKER = """\
    import asyncio

    import aiohttp

    _rates = {{}}


    async def rates_loop():
        async with aiohttp.ClientSession() as http:
            while True:
                async with http.{verb}("https://rates.internal/v1/latest", {extra}) as answer:
                    answer.raise_for_status()
                    _rates.update(await answer.json())
                await asyncio.sleep(60)


    def start(app):
        app["rates"] = asyncio.create_task(rates_loop())
"""

AIOHTTP_APP = """\
    from aiohttp import web

    from shelf.ticker import start


    def make_app():
        app = web.Application()
        app.on_startup.append(lambda app: start(app))
        return app
"""


@pytest.mark.parametrize("verb, extra, expected", [("get", "timeout=5", []),
                                                   ("post", 'json={"ask": "rates"}', [(8, "OG201")])])
def test_a_request_sent_as_a_with_item(tmp_path, verb, extra, expected):
    """``async with http.post(...)`` sends the request: an action, not a scope; ``http.get`` only asks."""
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'shelf'\n", "shelf/__init__.py": "",
                     "shelf/ticker.py": TICKER.format(verb=verb, extra=extra), "shelf/app.py": AIOHTTP_APP})
    assert findings(tmp_path, "shelf/ticker.py") == expected
