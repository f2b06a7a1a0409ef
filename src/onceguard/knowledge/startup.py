"""Where code runs: on every replica's start-up, in request or job code, or only when an operator runs a
command or a script (reference/frameworks.md §0.3).  ``project.startup`` and ``project.reach`` read these."""
from __future__ import annotations

import re
from typing import FrozenSet, Tuple

#: Decorators (qualified, or method names on an app object) that register a start-up hook.
STARTUP_EVENT_DECORATORS = frozenset({"on_event"})  # @app.on_event("startup")
STARTUP_EVENT_NAMES = frozenset({"startup"})
#: ``app.add_event_handler("startup", fn)``
ADD_EVENT_HANDLER = "add_event_handler"
#: Keyword arguments of app constructors that take start-up callables.
LIFESPAN_KEYWORDS = frozenset({"lifespan"})
ON_STARTUP_KEYWORDS = frozenset({"on_startup"})
#: ``app.on_startup.append(fn)`` (aiohttp, Starlette router), ``app.cleanup_ctx.append(gen)`` (aiohttp)
STARTUP_LISTS = frozenset({"on_startup", "cleanup_ctx"})
#: Flask: decorators whose function runs before the first request.
BEFORE_FIRST_REQUEST = frozenset({"before_first_request"})
#: Decorators (method names on an app object) whose function runs as each server process starts: Quart's
#: ``@app.before_serving`` / ``@app.while_serving``, Sanic's ``@app.before_server_start`` / ``@app.after_server_start``
#: / ``@app.main_process_start``.
SERVING_HOOK_DECORATORS = frozenset({
    "before_serving", "while_serving", "before_server_start", "after_server_start", "main_process_start",
    "main_process_ready",
})
#: Sanic's ``@app.listener("after_server_start")``: the event names that mean a server process starts.
LISTENER_DECORATORS = frozenset({"listener"})
SERVING_EVENTS = frozenset({"before_server_start", "after_server_start", "main_process_start",
                            "main_process_ready"})
#: Sanic's ``app.register_listener(fn, "before_server_start")`` and ``app.listener(fn, "after_server_start")``: a
#: listener registered by a call, the event its second argument.
LISTENER_REGISTRATIONS = frozenset({"register_listener", "listener"})
#: App factories by convention.
APP_FACTORY_NAMES = frozenset({"create_app", "make_app", "build_app", "get_application", "create_application"})
#: Django: ``AppConfig.ready`` runs in every process that loads the app registry.
APPCONFIG_BASES = frozenset({"django.apps.AppConfig", "AppConfig"})
#: Celery worker signals connected with ``@<signal>.connect``.
CELERY_STARTUP_SIGNALS = frozenset({
    "celery.signals.worker_ready", "celery.signals.worker_process_init", "celery.signals.worker_init",
    "celery.signals.celeryd_init",
})
#: gunicorn server hooks, in gunicorn config files.
GUNICORN_HOOKS = frozenset({"on_starting", "when_ready", "post_fork", "post_worker_init"})
#: Where a module is a script a person runs, not a module the server imports: its module level is not
#: start-up code.
SCRIPT_COMMAND_PARTS = ("management", "commands")
SCRIPT_DIRECTORIES = frozenset({"scripts", "bin", "tools"})
SCRIPT_FILENAMES = frozenset({"manage.py", "setup.py", "conftest.py", "noxfile.py", "fabfile.py"})

# -- where code runs ---------------------------------------------------------------------------------
#: ``if __name__ == "__main__":`` blocks that start a server are start-up code: qualified names ...
SERVER_RUNNERS: FrozenSet[str] = frozenset({
    "uvicorn.run", "uvicorn.Server.run", "uvicorn.Server.serve", "hypercorn.asyncio.serve",
    "hypercorn.trio.serve", "aiohttp.web.run_app", "waitress.serve", "bjoern.run", "gevent.pywsgi.WSGIServer",
    "gevent.pywsgi.WSGIServer.serve_forever", "werkzeug.serving.run_simple", "granian.Granian",
    "granian.Granian.serve", "daphne.server.Server.run", "cheroot.wsgi.Server.start",
    "tornado.ioloop.IOLoop.current.start", "tornado.ioloop.IOLoop.instance.start",
    "twisted.internet.reactor.run",
})
#: ... and ``app.run(...)`` / ``socketio.run(app)`` on an object built by one of these (or by the
#: module's app factory), or on a receiver conventionally named for the app.
SERVER_RUN_METHODS: FrozenSet[str] = frozenset({"run", "run_server", "serve", "serve_forever"})
WEB_APP_CONSTRUCTORS: FrozenSet[str] = frozenset({
    "flask.Flask", "quart.Quart", "sanic.Sanic", "fastapi.FastAPI", "starlette.applications.Starlette",
    "flask_socketio.SocketIO", "dash.Dash", "connexion.App", "connexion.FlaskApp", "aiohttp.web.Application",
})
SERVER_RECEIVER_NAMES: FrozenSet[str] = frozenset({"app", "application", "socketio", "server"})

#: Task decorators of task runners a person invokes (``invoke``/``fabric`` ``@task``) are commands too.
COMMAND_DECORATOR_PREFIXES: Tuple[str, ...] = ("invoke.", "fabric.", "click.", "typer.")
#: Decorators (last attribute or name) that make a function a one-off command a person runs:
#: click/typer ``@cli.command()``, Flask ``@app.cli.command("init-db")``, Flask-Script ``@manager.command``.
COMMAND_DECORATORS: FrozenSet[str] = frozenset({"command", "group", "with_appcontext"})
COMMAND_DECORATOR_QUALIFIED: FrozenSet[str] = frozenset({
    "click.command", "click.group", "typer.Typer.command", "flask.cli.with_appcontext",
    "flask.cli.AppGroup.command",
})
#: Django management commands: ``class Command(BaseCommand)`` (their files: ``SCRIPT_COMMAND_PARTS``).
MANAGEMENT_COMMAND_BASES: FrozenSet[str] = frozenset({
    "django.core.management.base.BaseCommand", "django.core.management.BaseCommand", "BaseCommand",
})

#: Request handlers: ``@app.get("/path")``, ``@router.post("/path")``, ``@bp.route("/path")``.
ROUTE_DECORATORS: FrozenSet[str] = frozenset({
    "get", "post", "put", "patch", "delete", "head", "options", "route", "api_route", "websocket",
})
#: Hooks every request runs through: Flask's ``@app.before_request`` (and its blueprint and teardown forms),
#: Starlette's and FastAPI's ``@app.middleware("http")``, Quart's and Sanic's request middleware.
REQUEST_HOOK_DECORATORS: FrozenSet[str] = frozenset({
    "before_request", "before_app_request", "after_request", "after_app_request", "teardown_request",
    "middleware", "on_request", "on_response",
})
#: Calls that register a handler for requests, which a request runs later (not the code that registers it).
ROUTE_REGISTRATIONS: FrozenSet[str] = frozenset({
    "add_api_route", "add_route", "add_url_rule", "add_api_websocket_route", "add_websocket_route", "api_route",
    "add_view", "add_resource", "register_route", "include_router", "route",
})
#: The route decorator (``@router.delete(...)``) and the ``methods=`` value of one that takes a list
#: (``@app.route(..., methods=["DELETE"])``) of a handler of HTTP DELETE requests.
DELETE_ROUTE_DECORATOR = "delete"
DELETE_METHOD = "DELETE"
ROUTE_METHODS_KEYWORD = "methods"
#: Job code: Celery/huey/dramatiq tasks and scheduled jobs (decorator last name or qualified name).
JOB_DECORATORS: FrozenSet[str] = frozenset({
    "task", "shared_task", "actor", "periodic_task", "db_periodic_task", "db_task", "scheduled_job",
})
#: Of those, the decorators of a task a queue hands to one worker per enqueue (not a scheduler's tick in each
#: replica): the task runs when something asks for it.
QUEUED_TASK_DECORATORS: FrozenSet[str] = frozenset({"task", "shared_task", "actor", "db_task"})
#: ``scheduler.add_job(fn, ...)`` and ``schedule.every(5).minutes.do(fn)`` make ``fn`` job code.
JOB_REGISTRATION_METHODS: FrozenSet[str] = frozenset({"add_job", "add_schedule", "do"})
#: Django function views: first parameter named ``request`` in a module that imports Django.
REQUEST_PARAMETER = "request"
#: The request (or connection) objects web frameworks hand their handlers: a function taking one as a parameter
#: runs while a request is served (a route a table registers in another module, a helper handed the request).
REQUEST_TYPES: FrozenSet[str] = frozenset({
    "starlette.requests.Request", "starlette.requests.HTTPConnection", "fastapi.Request", "fastapi.requests.Request",
    "starlette.websockets.WebSocket", "fastapi.WebSocket", "fastapi.websockets.WebSocket",
    "aiohttp.web.Request", "aiohttp.web.BaseRequest", "aiohttp.web_request.Request",
    "aiohttp.web_request.BaseRequest", "sanic.Request", "sanic.request.Request", "litestar.Request",
    "litestar.connection.Request", "falcon.Request", "falcon.asgi.Request", "django.http.HttpRequest",
    "rest_framework.request.Request", "tornado.httputil.HTTPServerRequest",
    # an ASGI middleware's ``scope``: each request (or connection) runs it
    "starlette.types.Scope", "litestar.types.Scope", "litestar.types.asgi_types.Scope",
})
#: Falcon resources: a method ``on_get``/``on_post``/... (also with a suffix, ``on_get_item``) taking the
#: request and the response, in a module that imports Falcon, is a responder the app routes requests to.
RESPONDER_MODULES: Tuple[str, ...] = ("falcon",)
RESPONDER_METHOD = re.compile(r"on_(get|post|put|patch|delete|head|options)(_\w+)?")

# -- OG610: start-up writes to rows every replica shares ---------------------------------------------------
#: Where a query chain names its model: ``Model.objects`` (Django), ``Model.query`` (Flask-SQLAlchemy).
MODEL_MANAGERS: FrozenSet[str] = frozenset({"objects", "query"})
#: Calls whose first argument is the model a statement reads or writes (``session.query(Model)``,
#: ``select(Model)``, ``update(Model)``, ``delete(Model)``).
MODEL_QUERY_BUILDERS: FrozenSet[str] = frozenset({"query", "select", "update", "delete"})
#: Calls that narrow the rows of a query chain.
ROW_FILTERS: FrozenSet[str] = frozenset({"filter", "filter_by", "where", "exclude"})
#: Calls that fetch the rows a chain selects.
ROWS_FETCHES: FrozenSet[str] = frozenset({
    "all", "scalars", "execute", "fetchall", "iterator", "aiterator", "yield_per", "unique",
})
#: Calls of a chain that change neither which rows it selects nor what it does to them.
QUERY_MODIFIERS: FrozenSet[str] = frozenset({"order_by", "options", "select_related", "only", "defer",
                                             "execution_options", "returning", "values", "synchronize_session"})
#: Set-based writes at the end of a chain (``.update(...)``, ``.delete()``, ``update(Model)...values(...)``).
SET_WRITES: FrozenSet[str] = frozenset({"update", "aupdate", "delete", "adelete", "values"})
SET_DELETES: FrozenSet[str] = frozenset({"delete", "adelete"})
#: Calls of a write chain whose arguments are the values written.
WRITE_VALUES: FrozenSet[str] = frozenset({"update", "aupdate", "values"})
#: ``.values(...)`` writes only after an ``update(Model)`` statement (a Django ``.values()`` reads).
STATEMENT_ONLY_WRITES: FrozenSet[str] = frozenset({"values"})
#: SQLAlchemy statements whose first argument is the model they write.
STATEMENT_BUILDERS: FrozenSet[str] = frozenset({"update", "delete"})
#: Column methods that compare with their arguments (``Model.col.is_(None)``).
COLUMN_TESTS: FrozenSet[str] = frozenset({"is_", "isnot", "is_not", "in_", "not_in", "notin_", "isnull"})
#: ``and_(...)``, ``or_(...)``, ``not_(...)``
BOOLEAN_COMBINATORS: FrozenSet[str] = frozenset({"and_", "or_", "not_"})
#: Calls that persist changed ORM rows.
PERSIST_CALLS: FrozenSet[str] = frozenset({"commit", "flush", "save", "bulk_update", "abulk_update", "asave"})
#: Names in a filter that make it an age or heartbeat threshold (a lease that expired, not a reset).
TIME_WORDS: FrozenSet[str] = frozenset({
    "now", "utcnow", "today", "timedelta", "time", "monotonic", "timezone", "datetime", "func",
})
#: Words of SQL text that make an UPDATE/DELETE depend on run time (an age threshold) or on this process.
SQL_RUNTIME_WORDS: Tuple[str, ...] = ("now()", "interval", "current_timestamp", "clock_timestamp", "pg_backend_pid",
                                      "inet_client_addr", "datetime(", "julianday(")
#: Prefilter: a file with a set-based write, or a loop that persists what it changes.
OG610_TRIGGERS: Tuple[Tuple[bytes, ...], ...] = (
    (b"update(",), (b"delete(",), (b"UPDATE",), (b"DELETE",), (b"update ",), (b"delete from",),
    (b"for ", b"commit("), (b"for ", b"save("), (b"for ", b"flush("),
    # a loop over a model's rows persisted through a helper (``for a in Agent.query.filter(...): a.sid = None``);
    # a loop over the rows a project function returns is admitted by that function's name (``prefilter_words``)
    (b"for ", b".objects"), (b"for ", b".query"), (b"for ", b"select("),
)

#: Calls that run a whole program to completion: at a module's top level (no ``__main__`` guard) they make
#: the module a script, whose import would not return until the program ends.
PROGRAM_RUNNERS: FrozenSet[str] = frozenset({"asyncio.run", "anyio.run", "trio.run", "uvloop.run"})
#: ``loop.run_until_complete(main())`` on any event loop.
PROGRAM_RUNNER_METHODS: FrozenSet[str] = frozenset({"run_until_complete"})
#: Methods that end a connection or client: called at module level on one opened there, the module's own
#: work is over (a script), not kept for an importer.
CLOSE_METHODS: FrozenSet[str] = frozenset({"close", "aclose", "dispose", "disconnect", "quit"})

#: The namespace an application object offers for what its code keeps for every request: Sanic's ``app.ctx``,
#: Starlette's, FastAPI's and Litestar's ``app.state`` (read back as ``request.app.ctx.x``, ``request.app.state.x``).
APP_NAMESPACES: FrozenSet[str] = frozenset({"ctx", "state"})
#: Flask's registry of what extensions keep on the application (``app.extensions["redis"] = client``), read back
#: as ``current_app.extensions["redis"]``.
APP_REGISTRIES: FrozenSet[str] = frozenset({"extensions"})
#: An application object that is itself a mapping of what start-up keeps: aiohttp's ``app[sessions_key] =
#: SessionStore()`` (a ``web.AppKey`` or a string), read back as ``request.app[sessions_key]``.
APP_MAPPINGS: FrozenSet[str] = frozenset({"app"})
#: Calls that hand a middleware class to the framework, which makes one instance of it as the application is
#: built (Starlette's and FastAPI's ``Middleware(Cls, ...)`` list entries and ``app.add_middleware(Cls, ...)``).
MIDDLEWARE_REGISTRATIONS: FrozenSet[str] = frozenset({"Middleware", "add_middleware"})
#: Settings that list middleware classes by dotted path (Django): one instance of each per process.
MIDDLEWARE_SETTINGS: FrozenSet[str] = frozenset({"MIDDLEWARE", "MIDDLEWARE_CLASSES"})
#: Methods a middleware class is called through for each request (ASGI and Django ``__call__``, Starlette's
#: ``BaseHTTPMiddleware.dispatch``, Django's ``process_request``/``process_view``).
MIDDLEWARE_METHODS: FrozenSet[str] = frozenset({"__call__", "dispatch", "process_request", "process_view"})
