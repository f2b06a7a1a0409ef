"""What start-up code keeps on the application's namespace (``app.ctx.board = Board()``, ``app.state.board =
Board()``) is an instance of that class wherever handlers read it back (``request.app.ctx.board.mark(...)``),
in any module: a per-key registry it keeps, written by one request and read by another, is kept per process
(OG608).  The same registry kept in Redis says nothing; a namespace attribute two classes are assigned to has
no one class."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

BOARD = """\
    import time


    class TypingBoard:
        def __init__(self, window: float = 8.0) -> None:
            self.window = window
            self._typing_since: dict[str, float] = {{}}

        async def mark(self, user: str) -> None:
            self._typing_since[user] = time.time()

        async def who(self) -> list[str]:
            limit = time.time() - self.window
            return sorted(user for user, since in self._typing_since.items() if since >= limit)
"""

SHARED_BOARD = """\
    import time


    class TypingBoard:
        def __init__(self, redis, window: float = 8.0) -> None:
            self.window = window
            self.redis = redis

        async def mark(self, user: str) -> None:
            await self.redis.zadd("typing", {{user: time.time()}})

        async def who(self) -> list[str]:
            return sorted(await self.redis.zrangebyscore("typing", time.time() - self.window, "+inf"))
"""

SERVER = """\
    from sanic import Sanic

    from {package}.board import TypingBoard as Board
    from {package}.views import chat


    def create_app() -> Sanic:
        app = Sanic("chat")
        app.blueprint(chat)

        @app.before_server_start
        async def setup(app: Sanic) -> None:
            {assignment}

        return app
"""

VIEWS = """\
    from sanic import Blueprint
    from sanic.response import json

    chat = Blueprint("chat")


    @chat.post("/typing")
    async def typing(request):
        await request.app.{namespace}.board.mark(request.json["user"])
        return json({{"ok": True}})


    @chat.get("/typing")
    async def typists(request):
        return json({{"typing": await request.app.{namespace}.board.who()}})
"""


def _project(tmp_path, board=BOARD, assignment="app.ctx.board = Board()", namespace="ctx", package="parley"):
    write(tmp_path, {"pyproject.toml": f"[project]\nname = '{package}'\n", f"{package}/__init__.py": "",
                     f"{package}/board.py": board.format(),
                     f"{package}/server.py": SERVER.format(package=package, assignment=assignment),
                     f"{package}/views.py": VIEWS.format(namespace=namespace)})
    return f"{package}/board.py"


@pytest.mark.parametrize("assignment, namespace, package", [
    ("app.ctx.board = Board()", "ctx", "parley"),
    ("app.state.board = Board(window=5.0)", "state", "parley"),
    ("app.ctx.board: Board = Board()", "ctx", "talk"),
])
def test_a_registry_kept_on_the_app_and_used_by_handlers_elsewhere(tmp_path, assignment, namespace, package):
    board = _project(tmp_path, assignment=assignment, namespace=namespace, package=package)
    assert findings(tmp_path, board, codes=("OG608",)) == [(7, "OG608")]


def test_the_same_registry_in_redis_says_nothing(tmp_path):
    board = _project(tmp_path, board=SHARED_BOARD, assignment="app.ctx.board = Board(app.ctx.redis)")
    assert findings(tmp_path, board, codes=("OG608",)) == []


@pytest.mark.parametrize("second_app, expected", [(False, "TypingBoard"), (True, None)])
def test_the_class_of_a_namespace_attribute_is_what_every_assignment_makes(tmp_path, second_app, expected):
    # Another application of the project keeping an ``Other`` under the same name: the handlers'
    # ``request.app.ctx.board`` may be either, so the attribute has no one class.
    from onceguard.config import config_for
    from onceguard.project import index, summaries

    _project(tmp_path)
    if second_app:
        write(tmp_path, {"parley/local.py": """\
            from sanic import Sanic


            class Other:
                pass


            def local_app() -> Sanic:
                app = Sanic("local")

                @app.before_server_start
                async def setup(app: Sanic) -> None:
                    app.ctx.board = Other()

                return app
        """})
    views = index.module_facts(str(tmp_path / "parley/views.py"), config_for(str(tmp_path)))
    call = views.calls_by_name["who"][0]
    found = summaries.instance_class(call.func.value, views, views.enclosing_function(call))
    assert (found[0].name if found is not None else None) == expected


def test_made_per_request_it_lives_for_that_request(tmp_path):
    # The object is made where it is used: each request has its own, empty, which no replica shares anyway.
    board = _project(tmp_path, assignment="pass")
    write(tmp_path, {"parley/views.py": VIEWS.format(namespace="ctx").replace(
        "        await request.app.ctx.board.mark", "        request.app.ctx.board = TypingBoard()\n"
        "        await request.app.ctx.board.mark").replace(
        "from sanic import Blueprint\n", "from sanic import Blueprint\n\nfrom parley.board import TypingBoard\n")})
    assert findings(tmp_path, board, codes=("OG608",)) == []


FLASK_FACTORY = """\
    from flask import Flask

    from parley.board import TypingBoard
    from parley.views import chat


    def create_app() -> Flask:
        app = Flask(__name__)
        app.extensions["parley"] = {"board": TypingBoard(), "greeting": "hi"}
        app.register_blueprint(chat)
        return app
"""

FLASK_VIEWS = """\
    from flask import Blueprint, current_app, request

    chat = Blueprint("chat", __name__)


    @chat.post("/typing")
    async def typing():
        parts = current_app.extensions["parley"]
        board = parts["board"]
        await board.mark(request.json["user"])
        return {"ok": True}


    @chat.get("/typing")
    async def typists():
        return {"typing": await current_app.extensions["parley"]["board"].who()}
"""


def test_a_registry_kept_in_a_dict_of_flask_extensions(tmp_path):
    # ``app.extensions["parley"] = {"board": TypingBoard()}`` in the app factory: read back as
    # ``current_app.extensions["parley"]["board"]`` (or through names bound to the parts), it is that instance.
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'parley'\n", "parley/__init__.py": "",
                     "parley/board.py": BOARD.format(), "parley/app.py": FLASK_FACTORY,
                     "parley/views.py": FLASK_VIEWS})
    assert findings(tmp_path, "parley/board.py", codes=("OG608",)) == [(7, "OG608")]


def test_the_names_a_class_is_kept_under_read_from_several_files(tmp_path):
    # One file keeps the board in a dict of extensions, a later one names the class beside a registry without
    # keeping it: each file is read for what it shows, and the first one's entry is the name found.
    from onceguard.config import config_for
    from onceguard.project import index
    from onceguard.project.app_namespaces import kept_names

    write(tmp_path, {"pyproject.toml": "[project]\nname = 'parley'\n", "parley/__init__.py": "",
                     "parley/board.py": BOARD.format(), "parley/app.py": FLASK_FACTORY,
                     "parley/views.py": "from flask import current_app\n\nfrom parley.board import TypingBoard\n\n\n"
                                        "def parts():\n    return current_app.extensions['parley'], TypingBoard\n"})
    board = index.module_facts(str(tmp_path / "parley/board.py"), config_for(str(tmp_path)))
    cls = next(node for node in board.tree.body if getattr(node, "name", "") == "TypingBoard")
    assert kept_names(cls, board) == ('"board"', "'board'")
