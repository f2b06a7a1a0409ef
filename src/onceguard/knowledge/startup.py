"""Where code runs on every replica's start-up (reference/frameworks.md §0.3)."""
from __future__ import annotations

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
