"""A web app's own way to start a background task in each serving process: Quart's
``app.add_background_task(fn, *args)`` (handed the callable and its arguments, not a coroutine).  A loop it starts
from a serving hook runs in every replica; a task it starts for one request is that request's work."""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

FACTORY = """
    import asyncio

    import httpx
    {quart_import}


    def build():
        app = {quart_class}(__name__)

        async def nudge_forever(every: float) -> None:
            while True:
                await httpx.AsyncClient().post("https://pager.example/nudge", json={{"kind": "stale"}})
                await asyncio.sleep(every)

        @app.before_serving
        async def begin() -> None:
            app.add_background_task(nudge_forever, 300)

        return app
    """


def test_a_loop_a_quart_app_starts_at_serving(tmp_path):
    source = FACTORY.format(quart_import="from quart import Quart", quart_class="Quart")
    write(tmp_path, {"pager/__init__.py": "", "pager/app.py": source})
    assert findings(tmp_path, "pager/app.py") == [(11, "OG201")]


def test_module_import_style(tmp_path):
    source = FACTORY.format(quart_import="import quart", quart_class="quart.Quart")
    write(tmp_path, {"pager/__init__.py": "", "pager/app.py": source})
    assert findings(tmp_path, "pager/app.py") == [(11, "OG201")]


HELPER = """
    import asyncio

    import httpx


    async def nudge_forever(every: float) -> None:
        while True:
            await httpx.AsyncClient().post("https://pager.example/nudge", json={"kind": "stale"})
            await asyncio.sleep(every)
    """

APP = """
    from quart import Quart

    from .nudges import nudge_forever

    app = Quart(__name__)


    @app.before_serving
    async def begin() -> None:
        app.add_background_task(nudge_forever, 300)
    """


def test_the_loop_defined_in_another_module(tmp_path):
    write(tmp_path, {"pager/__init__.py": "", "pager/nudges.py": HELPER, "pager/app.py": APP})
    assert findings(tmp_path, "pager/app.py") == [(11, "OG201")]


ONE_SHOT = """
    import httpx
    from quart import Quart

    app = Quart(__name__)


    async def send_receipt(order: int) -> None:
        await httpx.AsyncClient().post("https://mail.example/receipt", json={"order": order})


    @app.post("/orders/<int:order>/paid")
    async def paid(order: int):
        app.add_background_task(send_receipt, order)
        return {"ok": True}
    """


def test_a_one_shot_task_a_request_starts_is_not_a_ticker(tmp_path):
    write(tmp_path, {"pager/__init__.py": "", "pager/app.py": ONE_SHOT})
    assert findings(tmp_path, "pager/app.py") == []


NOT_AN_APP = """
    import asyncio

    import httpx


    class Jobs:
        def add_background_task(self, fn, *args) -> None:
            self.pending = (fn, args)


    jobs = Jobs()


    async def nudge_forever(every: float) -> None:
        while True:
            await httpx.AsyncClient().post("https://pager.example/nudge", json={"kind": "stale"})
            await asyncio.sleep(every)


    def setup() -> None:
        jobs.add_background_task(nudge_forever, 300)
    """


def test_a_method_of_the_same_name_on_something_else(tmp_path):
    write(tmp_path, {"pager/__init__.py": "", "pager/app.py": NOT_AN_APP})
    assert findings(tmp_path, "pager/app.py") == []
