"""Scheduler APIs as data (reference/frameworks.md §1): how a function becomes periodic.

Each entry says which constructor makes a scheduler object, which method or
decorator registers a function on it, where the function and the trigger
sit among the arguments, and where a timezone may be given.  Adding a
scheduler is adding rows here; the rule code in ``rules/scheduled_jobs/``
only reads these tables.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, FrozenSet, Optional, Tuple

# -- scheduler families ------------------------------------------------------------------------
APS3 = "APScheduler 3"
APS4 = "APScheduler 4"
FLASK_APS = "Flask-APScheduler"
SCHEDULE = "schedule"
HUEY = "huey"
ARQ = "arq"
REPEAT_EVERY = "repeat_every"
AIOCRON = "aiocron"
ROCKETRY = "Rocketry"
#: Dramatiq's periodic actors (``@dramatiq.actor(periodic=cron(...))``), enqueued by each ``periodiq`` process.
PERIODIQ = "periodiq"
ASYNCIO_TICKER = "asyncio ticker"
THREAD_TICKER = "thread ticker"
TIMER = "threading.Timer"
#: A long-running program's own ``while True:`` loop with a sleep, run from its ``__main__`` block.
WORKER_LOOP = "worker loop"
#: A never-ending loop that calls every function a project's own decorator or register call put in a container.
REGISTRY_LOOP = "registry loop"
CELERY_BEAT = "Celery beat"
RQ_SCHEDULER = "rq-scheduler"
DJANGO_CELERY_BEAT = "django-celery-beat"
TWISTED_LOOPING_CALL = "Twisted LoopingCall"
TORNADO_PERIODIC = "Tornado PeriodicCallback"
#: A crontab line run by a cron daemon each replica's container starts (a management command on a schedule).
CRON = "cron"

#: Families that run ONE scheduler by design (Celery beat, rq-scheduler's daemon lock,
#: django-celery-beat's beat): reported only with ``single-scheduler = false``.
SINGLE_SCHEDULER_FAMILIES: FrozenSet[str] = frozenset({CELERY_BEAT, RQ_SCHEDULER, DJANGO_CELERY_BEAT})
#: A web app's method that starts a background task in each server process, and the app classes that have it:
#: Sanic's ``app.add_task(coro)``, Quart's ``app.add_background_task(fn, *args)`` (a callable and its arguments).
APP_TASK_METHODS: Dict[str, FrozenSet[str]] = {
    "add_task": frozenset({"sanic.Sanic", "sanic.app.Sanic"}),
    "add_background_task": frozenset({"quart.Quart", "quart.app.Quart"}),
}
#: Of those, the ones handed a callable and the arguments to call it with, as anyio's ``start_soon`` is.
CALLABLE_AND_ARGS_STARTS: FrozenSet[str] = frozenset({"start_soon", "add_background_task"})
#: Schedulers that keep registrations in a shared store under an id each call makes up unless given one
#: (rq-scheduler's ``cron``/``schedule``): family -> the keyword that fixes the id.
ID_KEYED_STORES: Dict[str, str] = {RQ_SCHEDULER: "id"}
#: Schedulers a Celery worker runs inside itself when started with ``-B``/``--beat``.
BEAT_FAMILIES: FrozenSet[str] = frozenset({CELERY_BEAT, DJANGO_CELERY_BEAT})


@dataclass(frozen=True)
class Registration:
    """A method of a scheduler object (or a module function) that makes a function periodic."""

    family: str
    method: str
    decorator: bool  # True: ``@recv.method(...)`` decorates the job; False: the job is an argument
    func_position: Optional[int] = None
    func_keyword: Optional[str] = None
    trigger_position: Optional[int] = None
    trigger_keyword: Optional[str] = None
    #: keyword that must be present for the registration to be periodic (rq-scheduler ``schedule``)
    requires_keyword: Optional[str] = None


# -- constructors: qualified name -> family ------------------------------------------------------
_APS3_MODULES = ("asyncio", "background", "blocking", "gevent", "qt", "tornado", "twisted")
_APS3_CLASSES = {
    "asyncio": "AsyncIOScheduler", "background": "BackgroundScheduler", "blocking": "BlockingScheduler",
    "gevent": "GeventScheduler", "qt": "QtScheduler", "tornado": "TornadoScheduler", "twisted": "TwistedScheduler",
}

CONSTRUCTORS: Dict[str, str] = {
    **{f"apscheduler.schedulers.{m}.{_APS3_CLASSES[m]}": APS3 for m in _APS3_MODULES},
    "apscheduler.Scheduler": APS4,
    "apscheduler.AsyncScheduler": APS4,
    "apscheduler._schedulers.sync.Scheduler": APS4,
    "apscheduler._schedulers.async_.AsyncScheduler": APS4,
    "flask_apscheduler.APScheduler": FLASK_APS,
    "flask_apscheduler.scheduler.APScheduler": FLASK_APS,
    "schedule.Scheduler": SCHEDULE,
    "huey.RedisHuey": HUEY,
    "huey.Huey": HUEY,
    "huey.PriorityRedisHuey": HUEY,
    "huey.RedisExpireHuey": HUEY,
    "huey.PriorityRedisExpireHuey": HUEY,
    "huey.SqliteHuey": HUEY,
    "huey.MemoryHuey": HUEY,
    "huey.FileHuey": HUEY,
    "huey.api.RedisHuey": HUEY,
    "huey.api.Huey": HUEY,
    "huey.api.SqliteHuey": HUEY,
    "huey.api.MemoryHuey": HUEY,
    "rocketry.Rocketry": ROCKETRY,
    "rocketry.application.Rocketry": ROCKETRY,
    "celery.Celery": CELERY_BEAT,
    "rq_scheduler.Scheduler": RQ_SCHEDULER,
    "rq_scheduler.scheduler.Scheduler": RQ_SCHEDULER,
}

#: Methods per family.  APScheduler 4's ``add_job`` is a one-off run and is deliberately absent.
METHODS: Dict[str, Tuple[Registration, ...]] = {
    APS3: (
        Registration(APS3, "add_job", False, 0, "func", 1, "trigger"),
        Registration(APS3, "scheduled_job", True, None, None, 0, "trigger"),
    ),
    APS4: (
        Registration(APS4, "add_schedule", False, 0, "func_or_task_id", 1, "trigger"),
    ),
    # Flask-APScheduler: ``add_job(id, func, **kw)`` -- id first, func second; ``task`` is 3.x scheduled_job.
    FLASK_APS: (
        Registration(FLASK_APS, "add_job", False, 1, "func", None, "trigger"),
        Registration(FLASK_APS, "task", True, None, None, 0, "trigger"),
    ),
    HUEY: (
        Registration(HUEY, "periodic_task", True, None, None, 0, "validate_datetime"),
        Registration(HUEY, "db_periodic_task", True, None, None, 0, "validate_datetime"),
    ),
    ROCKETRY: (
        Registration(ROCKETRY, "task", True, None, None, 0, "start_cond"),
    ),
    CELERY_BEAT: (
        Registration(CELERY_BEAT, "add_periodic_task", False, 1, "sig", 0, "schedule"),
    ),
    RQ_SCHEDULER: (
        Registration(RQ_SCHEDULER, "cron", False, 1, "func", 0, "cron_string"),
        Registration(RQ_SCHEDULER, "schedule", False, 1, "func", None, "interval", requires_keyword="interval"),
    ),
}

#: Decorators that are module functions (qualified name -> registration).
DECORATORS: Dict[str, Registration] = {
    "huey.contrib.djhuey.periodic_task": Registration(HUEY, "periodic_task", True, None, None, 0, "validate_datetime"),
    "huey.contrib.djhuey.db_periodic_task": Registration(HUEY, "db_periodic_task", True, None, None, 0, "validate_datetime"),
    "fastapi_utils.tasks.repeat_every": Registration(REPEAT_EVERY, "repeat_every", True),
    "fastapi_restful.tasks.repeat_every": Registration(REPEAT_EVERY, "repeat_every", True),
    "fastapi_utilities.repeat_every": Registration(REPEAT_EVERY, "repeat_every", True),
    "fastapi_utilities.repeat_at": Registration(REPEAT_EVERY, "repeat_at", True, None, None, None, "cron"),
    "fastapi_utilities.repeat.repeat_every": Registration(REPEAT_EVERY, "repeat_every", True),
    "fastapi_utilities.repeat.repeat_at": Registration(REPEAT_EVERY, "repeat_at", True, None, None, None, "cron"),
    "aiocron.crontab": Registration(AIOCRON, "crontab", True, None, None, 0, "spec"),
    "dramatiq.actor": Registration(PERIODIQ, "actor", True, None, None, None, "periodic",
                                   requires_keyword="periodic"),
    # Celery <= 4 legacy decorator (gone in Celery 5).
    "celery.task.periodic_task": Registration(CELERY_BEAT, "periodic_task", True, None, None, None, "run_every"),
    "celery.decorators.periodic_task": Registration(CELERY_BEAT, "periodic_task", True, None, None, None, "run_every"),
}

#: Module functions that register the function passed to them (qualified name -> registration).
FUNCTIONS: Dict[str, Registration] = {
    "aiocron.crontab": Registration(AIOCRON, "crontab", False, 1, "func", 0, "spec"),
    "arq.cron": Registration(ARQ, "cron", False, 0, "coroutine"),
    "arq.cron.cron": Registration(ARQ, "cron", False, 0, "coroutine"),
    "arq.worker.cron": Registration(ARQ, "cron", False, 0, "coroutine"),
    # A callable made repeatable, then started (``LoopingCall(f).start(300)``, ``PeriodicCallback(f, ms).start()``).
    "twisted.internet.task.LoopingCall": Registration(TWISTED_LOOPING_CALL, "LoopingCall", False, 0, "f"),
    "tornado.ioloop.PeriodicCallback": Registration(TORNADO_PERIODIC, "PeriodicCallback", False, 0, "callback", 1,
                                                    "callback_time"),
}

#: ``schedule`` fluent API: ``schedule.every(...)....do(job)``.
SCHEDULE_MODULE = "schedule"
SCHEDULE_ENTRY = "every"
SCHEDULE_DO = "do"
SCHEDULE_AT = "at"
#: ``@schedule.repeat(schedule.every(10).minutes)``
SCHEDULE_REPEAT = "repeat"
SCHEDULE_AT_TZ_POSITION = 1
SCHEDULE_AT_TZ_KEYWORD = "tz"

# -- coordination ------------------------------------------------------------------------------
#: arq: ``cron(..., unique=True)`` (the default) enqueues each run once per Redis: only ``unique=False`` is flagged.
ARQ_UNIQUE_KEYWORD = "unique"
#: arq: each run of a cron job may last until its ``timeout`` (else the worker's ``job_timeout``, 300 s by default);
#: a run that lasts longer than the period overlaps the next tick's run, on another worker.
ARQ_TIMEOUT_KEYWORD = "timeout"
ARQ_DEFAULT_JOB_TIMEOUT = 300
#: arq cron fields from the finest up, with the seconds one of each spans; ``second`` defaults to 0 (a tick a
#: minute), the others to every value.
ARQ_CRON_FIELDS = (("second", 60), ("minute", 3600), ("hour", 86_400))

#: APScheduler 4 with a shared persistent data store leases its jobs: replicas cooperate.
APS4_DATA_STORE_POSITION = 0
APS4_DATA_STORE_KEYWORD = "data_store"
APS4_MEMORY_STORES: FrozenSet[str] = frozenset({
    "apscheduler.datastores.memory.MemoryDataStore", "apscheduler.datastores.MemoryDataStore",
})

# -- triggers and timezones (OG202) -----------------------------------------------------------
#: APScheduler 3 trigger aliases that are not periodic (a one-off run).
APS3_ONE_OFF_TRIGGERS: FrozenSet[str] = frozenset({"date"})
APS_CRON_CLASSES: FrozenSet[str] = frozenset({
    "apscheduler.triggers.cron.CronTrigger",
    "apscheduler.triggers.calendarinterval.CalendarIntervalTrigger",
    "apscheduler.triggers.date.DateTrigger",
})
APS_CRON_FACTORIES: FrozenSet[str] = frozenset({"apscheduler.triggers.cron.CronTrigger.from_crontab"})
APS_DATE_CLASSES: FrozenSet[str] = frozenset({"apscheduler.triggers.date.DateTrigger"})
#: Cron fields at hour granularity or coarser: with any of them the zone moves the firing time.
CRON_WALL_CLOCK_FIELDS: FrozenSet[str] = frozenset({
    "hour", "day", "day_of_week", "week", "month", "year", "weekday",
})
TIMEZONE_KEYWORD = "timezone"
#: Trigger arguments whose tzinfo becomes the trigger's zone when ``timezone`` is not given (APScheduler 3).
TRIGGER_ZONE_CARRIERS: FrozenSet[str] = frozenset({"start_date", "end_date", "start_time", "end_time"})
APS_CONFIGURE_METHOD = "configure"
#: ``gconfig`` dict keys that set the zone: ``BackgroundScheduler({"apscheduler.timezone": "UTC"})``.
APS_GCONFIG_TIMEZONE_KEYS: FrozenSet[str] = frozenset({"apscheduler.timezone", "timezone"})
AIOCRON_TZ_KEYWORD = "tz"
AIOCRON_TZ_POSITION = 6
#: arq: the WorkerSettings class attribute that sets the cron zone.
ARQ_SETTINGS_TIMEZONE = "timezone"
ARQ_CRON_JOBS_ATTRIBUTE = "cron_jobs"
#: crontab macros whose firing time is wall-clock.
CRONTAB_WALL_CLOCK_MACROS: FrozenSet[str] = frozenset({
    "@daily", "@midnight", "@weekly", "@monthly", "@yearly", "@annually",
})

#: Registration keywords that show the author expects a run may outlast its interval.
LONG_RUNNING_HINTS: FrozenSet[str] = frozenset({"max_instances", "coalesce", "misfire_grace_time"})

# -- hand-rolled loops (§1.15) ---------------------------------------------------------------
TASK_STARTERS: FrozenSet[str] = frozenset({
    "asyncio.create_task", "asyncio.ensure_future",
    "asyncio.get_event_loop.create_task", "asyncio.get_running_loop.create_task",
    "asyncio.get_event_loop.ensure_future",
})
LOOP_FACTORIES: FrozenSet[str] = frozenset({
    "asyncio.get_event_loop", "asyncio.get_running_loop", "asyncio.new_event_loop",
})
#: ``async with asyncio.TaskGroup() as tg: tg.create_task(...)``; anyio ``tg.start_soon(fn)``.
TASK_GROUPS: FrozenSet[str] = frozenset({"asyncio.TaskGroup", "anyio.create_task_group"})
TASK_GROUP_METHODS: FrozenSet[str] = frozenset({"create_task", "start_soon"})
LOOP_CREATE_TASK = "create_task"
THREAD_CLASSES: FrozenSet[str] = frozenset({"threading.Thread"})
#: Green threads: the function each starts, by position (``gevent.spawn(poll, app)``, ``spawn_later(5, poll)``).
GREENLET_SPAWNERS: Dict[str, int] = {
    "gevent.spawn": 0, "gevent.spawn_later": 1, "gevent.Greenlet.spawn": 0, "eventlet.spawn": 0,
    "eventlet.spawn_n": 0, "eventlet.spawn_after": 1, "eventlet.greenthread.spawn": 0,
}
TIMER_CLASSES: FrozenSet[str] = frozenset({"threading.Timer"})
#: Methods of an event loop that run a callable once, later: where the callable sits (asyncio's
#: ``loop.call_later(delay, fn)`` and ``call_at(when, fn)``, Tornado's ``IOLoop.call_later`` and
#: ``add_timeout(deadline, fn)``, Twisted's ``reactor.callLater(delay, fn)``).  A callable that arms the same
#: call again when it runs is a timer that re-arms itself, as a ``threading.Timer`` that does.
DELAYED_CALL_METHODS: Dict[str, int] = {"call_later": 1, "call_at": 1, "add_timeout": 1, "callLater": 1}
SLEEPS: FrozenSet[str] = frozenset({
    "asyncio.sleep", "time.sleep", "anyio.sleep", "trio.sleep", "gevent.sleep", "eventlet.sleep",
})
#: A loop that blocks on one of these is a consumer (a worker), not a ticker.
CONSUMER_METHODS: FrozenSet[str] = frozenset({
    "get", "get_nowait", "xread", "xreadgroup", "blpop", "brpop", "brpoplpush", "blmove", "bzpopmin",
    "bzpopmax", "listen", "get_message", "subscribe", "psubscribe", "receive", "recv", "next_msg",
    "fetch_message", "getmany", "consume", "poll", "add_listener", "notifies",
})

# -- Celery beat / django-celery-beat (single-scheduler = false) ----------------------------
CELERY_BEAT_SCHEDULE_NAMES: FrozenSet[str] = frozenset({
    "beat_schedule", "CELERY_BEAT_SCHEDULE", "CELERYBEAT_SCHEDULE",
})
CELERY_SIGNATURE_METHODS: FrozenSet[str] = frozenset({"s", "si", "signature"})
#: A task queue's enqueue method handed to a scheduler (``add_job(publish.send, ...)``): the task's function is
#: what each tick runs, in a worker (Dramatiq ``send``, Celery ``delay``/``apply_async``, Taskiq ``kiq``, huey's
#: task call is the function itself).
TASK_ENQUEUE_METHODS: FrozenSet[str] = frozenset({"send", "send_with_options", "delay", "apply_async", "kiq"})
#: RQ: a queue's methods that put a function (or its dotted name) on it, and the keywords that bound a run.
RQ_ENQUEUE_METHODS: FrozenSet[str] = frozenset({"enqueue", "enqueue_call", "enqueue_at", "enqueue_in"})
RQ_TIMEOUT_KEYWORDS: FrozenSet[str] = frozenset({"job_timeout", "timeout"})
CELERY_TASK_DECORATORS: FrozenSet[str] = frozenset({"task", "shared_task"})
#: A Celery task declared with ``bind=True`` is handed the task object as its first parameter: these of its fields
#: are the same in every worker and on every run (``self.name``, the name the task is registered by), unlike
#: ``self.request`` (the run's own id, arguments and retries).
BOUND_TASK_FIXED_FIELDS: FrozenSet[str] = frozenset({"name"})
DJANGO_CELERY_BEAT_MODELS: FrozenSet[str] = frozenset({
    "django_celery_beat.models.PeriodicTask",
})
DJANGO_ROW_METHODS: FrozenSet[str] = frozenset({"create", "get_or_create", "update_or_create"})

# -- daemon objects: a class that runs one of its methods again and again --------------------------
#: Calls that start a daemon object (``monitor.start()``, ``await monitor.start()``, ``thread.start()``).
DAEMON_START_METHODS: FrozenSet[str] = frozenset({"start", "start_background", "run_forever_in_background"})
#: Calls that enter an object as a context manager whose entry starts it (``AsyncExitStack``).
CONTEXT_ENTERS: FrozenSet[str] = frozenset({"enter_async_context", "enter_context"})
#: The method a ``threading.Thread`` subclass runs once started.
THREAD_RUN_METHOD = "run"
#: A scheduler's pump: a loop that calls it runs the jobs registered on that scheduler, each judged where it is
#: registered (``schedule.run_pending()`` on the module or on a ``schedule.Scheduler``).
SCHEDULER_PUMP_METHODS: FrozenSet[str] = frozenset({"run_pending"})
