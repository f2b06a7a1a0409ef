"""OG604 in-memory-rate-limit and OG605 in-memory-broadcast: shapes beyond the rule docs, across modules, and
the rewrites that must not change the answer."""
from __future__ import annotations

import pytest

from onceguard.testing import findings_in_written_file, write_source as write


def line_of(source: str, text: str) -> int:
    """The line of the dedented ``source`` that holds ``text``, as the checked file numbers it."""
    import textwrap

    return next(n for n, line in enumerate(textwrap.dedent(source).splitlines(), 1) if text in line)


def og(tmp_path, code: str, path: str, source: str, cross_file: bool = False):
    return findings_in_written_file(tmp_path, path, source, code, cross_file)


# -- OG604 ------------------------------------------------------------------------------------------------------
LIMITER_CLASS = """
    import time


    class Window:
        def __init__(self, limit):
            self.limit = limit
            self.hits = {}

        def allow(self, key):
            now = time.time()
            stamps = [t for t in self.hits.get(key, []) if now - t < 60] + [now]
            self.hits[key] = stamps
            return len(stamps) <= self.limit
"""

HANDLERS = """
    from fastapi import APIRouter, HTTPException

    from {module} import Window

    router = APIRouter()
    signups = Window(limit=3)


    @router.post("/signup")
    async def signup(email: str):
        if not signups.allow(email):
            raise HTTPException(status_code=429)
        return {{"ok": True}}
"""


def test_limiter_class_in_another_module_is_followed_by_the_command_line(tmp_path):
    write(tmp_path, "shop/__init__.py", "")
    write(tmp_path, "shop/limits_local.py", LIMITER_CLASS)
    source = HANDLERS.format(module="shop.limits_local")
    found = og(tmp_path, "OG604", "shop/routes.py", source, cross_file=True)
    assert [d.line for d in found] == [7]
    assert "`signups`" in found[0].message and "429" in found[0].message
    assert found[0].related and found[0].related[0].path.endswith("routes.py")
    # one file alone does not show what `Window` keeps
    assert og(tmp_path, "OG604", "shop/routes.py", source) == []


def test_a_limiter_class_that_keeps_no_per_key_state_is_left_alone(tmp_path):
    write(tmp_path, "shop/__init__.py", "")
    write(tmp_path, "shop/limits_shared.py", """
        import time


        class Window:
            def __init__(self, limit):
                self.limit = limit
                self.client = make_redis_client()

            def allow(self, key):
                bucket = f"{key}:{int(time.time() // 60)}"
                return self.client.incr(bucket) <= self.limit
    """)
    assert og(tmp_path, "OG604", "shop/routes.py", HANDLERS.format(module="shop.limits_shared"), cross_file=True) == []


def test_the_refusal_in_the_function_the_limiter_is_handed_to(tmp_path):
    write(tmp_path, "svc/__init__.py", "")
    write(tmp_path, "svc/guards.py", """
        from fastapi import HTTPException


        def enforce(limiter, key):
            if not limiter.allow(key):
                raise HTTPException(429, "slow down")
    """)
    source = LIMITER_CLASS + """

    from svc.guards import enforce

    exports = Window(limit=2)


    def export(user_id):
        enforce(exports, user_id)
    """
    found = og(tmp_path, "OG604", "svc/exports.py", source, cross_file=True)
    assert [d.line for d in found] == [line_of(source, "exports = Window")]
    assert found[0].related[0].path.endswith("guards.py")


def test_storage_setting_anywhere_in_the_project_counts(tmp_path):
    write(tmp_path, "desk/__init__.py", "")
    write(tmp_path, "desk/config.py", """
        import os

        RATELIMIT_STORAGE_URI = os.environ.get("LIMITS_URL", "redis://cache:6379")
    """)
    source = """
        from flask_limiter import Limiter
        from flask_limiter.util import get_remote_address

        limiter = Limiter(key_func=get_remote_address)
    """
    assert og(tmp_path, "OG604", "desk/extensions.py", source, cross_file=True) == []
    # flake8 sees this file only, which sets no storage: the default is what it proves
    assert [d.line for d in og(tmp_path, "OG604", "desk/extensions.py", source)] == [5]


def test_import_styles_and_explicit_memory_storage(tmp_path):
    source = """
        import flask_limiter as fl
        from limits.aio.storage import MemoryStorage as LocalCounts

        limiter = fl.Limiter(lambda: fl.util.get_remote_address(), storage_uri="memory://")
        counts = LocalCounts()
    """
    assert [d.line for d in og(tmp_path, "OG604", "app/limits.py", source)] == [5, 6]


def test_a_limiter_keyed_by_no_client_counts_the_process_own_load(tmp_path):
    # One constant key: the limit sheds this process's load, a capacity that grows with the replicas; any
    # route given a client's key makes it an allowance N replicas multiply again.
    source = """
        from slowapi import Limiter


        def whole_server():
            return "all"


        shed = Limiter(key_func=lambda: "everyone")
        guard = Limiter(whole_server, storage_uri="memory://")


        @shed.limit("50/second")
        def status(request):
            return {}
    """
    assert og(tmp_path, "OG604", "app/load.py", source) == []
    per_client = source.replace('@shed.limit("50/second")', '@shed.limit("50/second", key_func=lambda: peer())')
    assert [d.line for d in og(tmp_path, "OG604", "app/load.py", per_client)] == [line_of(per_client, "shed = ")]
    by_address = source.replace('return "all"', 'return request_address()')
    assert [d.line for d in og(tmp_path, "OG604", "app/load.py", by_address)] == [line_of(by_address, "guard = ")]


def test_limiter_with_a_storage_from_the_environment_or_forwarded_options_is_left_alone(tmp_path):
    source = """
        import os

        from slowapi import Limiter
        from slowapi.util import get_remote_address

        options = {"storage_uri": os.environ["LIMITS_URL"]}
        a = Limiter(key_func=get_remote_address, storage_uri=os.environ["LIMITS_URL"])
        b = Limiter(key_func=get_remote_address, **options)
    """
    assert og(tmp_path, "OG604", "app/limits.py", source) == []


def test_django_settings_with_a_locmem_cache_and_split_settings(tmp_path):
    flagged = """
        INSTALLED_APPS = ["rest_framework"]
        CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
        REST_FRAMEWORK = {"DEFAULT_THROTTLE_CLASSES": ("rest_framework.throttling.ScopedRateThrottle",)}
    """
    found = og(tmp_path, "OG604", "site/settings.py", flagged)
    assert [d.line for d in found] == [4] and "LocMemCache" in found[0].message
    split = """
        from .base import *

        INSTALLED_APPS = ["rest_framework"]
        REST_FRAMEWORK = {"DEFAULT_THROTTLE_CLASSES": ["rest_framework.throttling.AnonRateThrottle"]}
    """
    assert og(tmp_path, "OG604", "site/settings/production.py", split) == []


QUOTA = """
    import time
    from collections import defaultdict, deque

    PER_MINUTE = 30
    _recent = defaultdict(deque)


    def permitted(caller):
        now = time.monotonic()
        window = _recent[caller]
        while window and now - window[0] > 60:
            window.popleft()
        if len(window) >= PER_MINUTE:
            return False
        window.append(now)
        return True
"""


@pytest.mark.parametrize("spelled", [
    ("from svc import quota as gate", "gate.permitted"),
    ("from svc.quota import permitted", "permitted"),
])
def test_a_verdict_whose_callers_in_another_module_refuse(tmp_path, spelled):
    """The counting module says nothing of 429 and never says "limit": the function answers yes or no, and a
    caller elsewhere turns the no into a 429. The state is still one replica's count."""
    imported, called = spelled
    write(tmp_path, "svc/__init__.py", "")
    write(tmp_path, "svc/deps.py", f"""
        from fastapi import HTTPException, Request

        {imported}


        def enforce(request: Request) -> None:
            if not {called}(request.client.host):
                raise HTTPException(status_code=429, detail="slow down")
    """)
    found = og(tmp_path, "OG604", "svc/quota.py", QUOTA, cross_file=True)
    assert [d.line for d in found] == [line_of(QUOTA, "_recent = defaultdict")]
    assert found[0].related[0].path.endswith("deps.py")


def test_a_verdict_nobody_refuses_on_is_left_alone(tmp_path):
    write(tmp_path, "svc/__init__.py", "")
    write(tmp_path, "svc/deps.py", """
        from svc.quota import permitted


        def note(host):
            if not permitted(host):
                print("busy")
    """)
    assert og(tmp_path, "OG604", "svc/quota.py", QUOTA, cross_file=True) == []


def test_a_container_of_timestamps_without_a_refusal_is_left_alone(tmp_path):
    source = """
        import time

        seen = {}


        def record(ip):
            seen[ip] = time.time()
            return len(seen)
    """
    assert og(tmp_path, "OG604", "app/stats.py", source) == []


# -- OG605 ------------------------------------------------------------------------------------------------------
MANAGER = """
    from starlette.websockets import WebSocket


    class Sockets:
        def __init__(self):
            self.open_sockets = []

        async def add(self, ws: WebSocket):
            await ws.accept()
            self.open_sockets.append(ws)
"""


def test_a_socket_picked_from_a_registry_defined_in_another_module(tmp_path):
    write(tmp_path, "live/__init__.py", "")
    write(tmp_path, "live/registry.py", MANAGER)
    source = """
        async def run_report(manager, topic):
            ws = manager.open_sockets[0] if manager.open_sockets else None
            if ws is None:
                return None
            return await stream_report(topic, ws)


        async def stream_report(topic, ws):
            await ws.send_text(topic)
    """
    found = og(tmp_path, "OG605", "live/service.py", source, cross_file=True)
    assert [d.line for d in found] == [3]
    assert found[0].related[0].path.endswith("registry.py")
    assert og(tmp_path, "OG605", "live/service.py", source) == []


def test_broadcast_loop_variants_in_one_module(tmp_path):
    loop_over_values = """
        from fastapi import FastAPI, WebSocket

        app = FastAPI()
        rooms = {}


        @app.websocket("/rooms/{room}")
        async def room(websocket: WebSocket, room: str):
            await websocket.accept()
            rooms.setdefault(room, set()).add(websocket)


        async def shout(text):
            for members in rooms.values():
                for member in members:
                    await member.send_text(text)
    """
    found = og(tmp_path, "OG605", "app/rooms.py", loop_over_values)
    assert [d.line for d in found] == [line_of(loop_over_values, "for member in members")]


def test_socketio_queue_given_in_init_app_elsewhere_or_in_settings(tmp_path):
    write(tmp_path, "desk/__init__.py", "")
    server = """
        from flask_socketio import SocketIO

        bus = SocketIO()


        def notify(agent_room):
            bus.emit("ping", {}, to=agent_room)
    """
    write(tmp_path, "desk/factory.py", """
        from flask import Flask

        from desk.realtime import bus


        def create_app():
            app = Flask(__name__)
            bus.init_app(app, message_queue="redis://cache:6379/3")
            return app
    """)
    assert og(tmp_path, "OG605", "desk/realtime.py", server, cross_file=True) == []
    # flake8 sees only this file, where the server has no queue and emits to a room
    assert [d.line for d in og(tmp_path, "OG605", "desk/realtime.py", server)] == [4]
    with_setting = server + '\nSOCKETIO_MESSAGE_QUEUE = "redis://cache:6379/3"\n'
    assert og(tmp_path, "OG605", "desk/realtime2.py", with_setting) == []


def test_socketio_emits_found_in_the_modules_that_import_the_server(tmp_path):
    write(tmp_path, "desk/__init__.py", "")
    write(tmp_path, "desk/routes.py", """
        import flask_socketio as fsio

        from desk.realtime import bus


        @bus.on("typing")
        def typing(data):
            fsio.emit("typing", data, broadcast=True)
    """)
    server = """
        from flask_socketio import SocketIO

        bus = SocketIO()
    """
    found = og(tmp_path, "OG605", "desk/realtime.py", server, cross_file=True)
    assert [d.line for d in found] == [4]
    assert found[0].related[0].path.endswith("routes.py") and found[0].related[0].line == 9
    assert og(tmp_path, "OG605", "desk/realtime.py", server) == []


def test_answers_to_the_own_connection_are_left_alone(tmp_path):
    source = """
        from flask import request
        from flask_socketio import SocketIO, emit

        sock = SocketIO()


        @sock.on("hello")
        def hello(data):
            emit("hi", data)
            sock.emit("hi", data, to=request.sid)
    """
    assert og(tmp_path, "OG605", "app/sock.py", source) == []


def test_in_memory_layer_in_development_settings_is_left_alone(tmp_path):
    source = 'CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}\n'
    assert og(tmp_path, "OG605", "config/settings/dev.py", source) == []
    assert [d.line for d in og(tmp_path, "OG605", "config/settings/production.py", source)] == [1]


def test_an_in_memory_layer_nothing_sends_through_is_left_alone_by_the_command_line(tmp_path):
    # The project reads the setting but no code joins a group or sends through the layer: each process's
    # own layer carries nothing.  A consumer in another module that broadcasts to a group makes it a finding.
    settings = 'CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}\n'
    write(tmp_path, "board/views.py", """
        from django.http import JsonResponse

        def status(request):
            return JsonResponse({"ok": True})
    """)
    assert og(tmp_path, "OG605", "config/settings.py", settings, cross_file=True) == []
    tmp_path = tmp_path / "with_consumer"  # another project (a run reads each project's files once)
    write(tmp_path, "board/consumers.py", """
        from asgiref.sync import async_to_sync
        from channels.generic.websocket import WebsocketConsumer

        class BoardConsumer(WebsocketConsumer):
            def connect(self):
                async_to_sync(self.channel_layer.group_add)("board", self.channel_name)
                self.accept()
    """)
    assert [d.line for d in og(tmp_path, "OG605", "config/settings.py", settings, cross_file=True)] == [1]


# -- OG602 -------------------------------------------------------------------------------------------------------
def test_optional_client_and_exclusive_consumer_in_other_module(tmp_path):
    write(tmp_path, "bots/__init__.py", "")
    write(tmp_path, "bots/consumer.py", """
        async def drain_refunds(channel):
            queue = await channel.declare_queue("refunds", durable=True)
            await queue.consume(print, exclusive=True)
    """)
    source = """
        import asyncio
        from contextlib import asynccontextmanager

        from fastapi import FastAPI

        from bots.consumer import drain_refunds


        @asynccontextmanager
        async def lifespan(app: FastAPI):
            task = asyncio.create_task(drain_refunds(app.state.channel))
            yield
            task.cancel()


        app = FastAPI(lifespan=lifespan)
    """
    found = findings_in_written_file(tmp_path, "bots/main.py", source, "OG602", cross_file=True)
    assert [d.line for d in found] == [12]
    assert "exclusive" in found[0].message and found[0].related[0].path.endswith("consumer.py")
    assert findings_in_written_file(tmp_path, "bots/main.py", source, "OG602") == []


def test_a_name_bound_to_none_twice_is_no_client(tmp_path):
    source = """
        import threading

        from fastapi import FastAPI

        app = FastAPI()
        bot = None
        bot = None


        @app.on_event("startup")
        def start():
            threading.Thread(target=bot.infinity_polling).start()
    """
    assert findings_in_written_file(tmp_path, "app/bot.py", source, "OG602") == []


def test_a_limiter_that_counts_in_redis_and_keeps_memory_only_as_a_fallback_is_left_alone(tmp_path):
    source = """
        import time

        from fastapi import HTTPException


        class Gate:
            def __init__(self, limit):
                self.limit = limit
                self.fallback = {}

            async def hit(self, redis, key):
                bucket = f"{key}:{int(time.time()) // 60}"
                if redis is not None:
                    return await redis.incr(bucket) > self.limit
                self.fallback[bucket] = self.fallback.get(bucket, 0) + 1
                return self.fallback[bucket] > self.limit


        gate = Gate(10)


        async def login(request, email):
            if await gate.hit(request.app.state.redis, email):
                raise HTTPException(status_code=429)
    """
    assert og(tmp_path, "OG604", "app/auth.py", source) == []
    # the same class without the shared counter is a per-process limiter
    per_process = source.replace("                if redis is not None:\n"
                                 "                    return await redis.incr(bucket) > self.limit\n", "")
    assert [d.line for d in og(tmp_path, "OG604", "app/auth.py", per_process)] == [line_of(per_process, "gate = Gate")]


def test_a_start_up_ticker_that_tells_this_replicas_clients_is_per_replica_by_design(tmp_path):
    source = """
        import asyncio
        from contextlib import asynccontextmanager

        import socketio
        from fastapi import FastAPI

        sio = socketio.AsyncServer(async_mode="asgi")


        @asynccontextmanager
        async def lifespan(app: FastAPI):
            async def heartbeat():
                while True:
                    await sio.emit("tick", {})
                    await asyncio.sleep(5)

            task = asyncio.create_task(heartbeat())
            yield
            task.cancel()


        app = FastAPI(lifespan=lifespan)
    """
    assert og(tmp_path, "OG605", "app/live.py", source) == []
    relayed = source + """

        @sio.event
        async def chat(sid, data):
            await sio.emit("chat", data, skip_sid=sid)
    """
    assert [d.line for d in og(tmp_path, "OG605", "app/live.py", relayed)] == [line_of(relayed, "sio = socketio")]


def test_a_helper_defined_in_the_connect_handler_answers_its_own_client(tmp_path):
    source = """
        import socketio

        sio = socketio.AsyncServer()


        @sio.event
        async def connect(sid, environ):
            def reply(event, data):
                return sio.emit(event, data, to=sid)

            await reply("welcome", {})
    """
    assert og(tmp_path, "OG605", "app/live.py", source) == []


# A registry whose delivery runs for the messages of a shared channel: every replica receives each message and
# delivers it to its own sockets.
RELAY_HUB = """
    import json

    import redis.asyncio as aioredis
    from starlette.websockets import WebSocket

    redis = aioredis.from_url("redis://cache:6379/0")


    class Scoreboard:
        def __init__(self):
            self._fans = {}

        async def join(self, match: str, ws: WebSocket):
            await ws.accept()
            self._fans.setdefault(match, set()).add(ws)

        async def publish(self, match: str, score: dict):
            await redis.publish(f"score:{match}", json.dumps(score))

        async def relay(self):
            pubsub = redis.pubsub()
            await pubsub.psubscribe("score:*")
            async for event in pubsub.listen():
                if event["type"] == "pmessage":
                    await self._forward(event["channel"][6:], json.loads(event["data"]))

        async def _forward(self, match, score):
            await self._deliver_here(match, score)

        async def _deliver_here(self, match, score):
            for ws in list(self._fans.get(match, ())):
                await ws.send_json(score)


    board = Scoreboard()
"""


def test_a_delivery_reached_only_from_a_pubsub_listen_loop_is_per_replica(tmp_path):
    assert og(tmp_path, "OG605", "live/board.py", RELAY_HUB) == []
    assert og(tmp_path, "OG605", "live/board.py", RELAY_HUB, cross_file=True) == []
    # the same loop also called by a job of this module: what the job sends reaches this replica's fans only
    called_directly = RELAY_HUB + """

    async def final_whistle(match):
        await board._deliver_here(match, {"final": True})
"""
    loop = line_of(called_directly, "for ws in list(self._fans")
    assert [d.line for d in og(tmp_path, "OG605", "live/board.py", called_directly)] == [loop]


def test_a_delivery_also_called_from_a_handler_in_another_module_is_reported_by_the_command_line(tmp_path):
    write(tmp_path, "live/__init__.py", "")
    write(tmp_path, "live/routes.py", """
        from fastapi import APIRouter

        from live.board import board

        router = APIRouter()


        @router.post("/matches/{match}/final")
        async def final(match: str):
            await board._deliver_here(match, {"final": True})
    """)
    found = og(tmp_path, "OG605", "live/board.py", RELAY_HUB, cross_file=True)
    assert [d.line for d in found] == [line_of(RELAY_HUB, "for ws in list(self._fans")]


def test_other_subscriptions_to_a_shared_channel_feed_a_per_replica_delivery(tmp_path):
    get_message_loop = """
        import redis
        from fastapi import FastAPI, WebSocket

        app = FastAPI()
        client = redis.Redis()
        watchers = []


        @app.websocket("/ws")
        async def feed(websocket: WebSocket):
            await websocket.accept()
            watchers.append(websocket)


        def deliver(text):
            for ws in watchers:
                ws.send_text(text)


        def pump():
            pubsub = client.pubsub()
            pubsub.subscribe("alerts")
            while True:
                message = pubsub.get_message(timeout=1.0)
                if message:
                    deliver(message["data"])
    """
    assert og(tmp_path, "OG605", "app/alerts.py", get_message_loop) == []
    listener = """
        import asyncpg
        from fastapi import FastAPI, WebSocket

        app = FastAPI()
        watchers = []


        @app.websocket("/ws")
        async def feed(websocket: WebSocket):
            await websocket.accept()
            watchers.append(websocket)


        async def on_notify(connection, pid, channel, payload):
            for ws in watchers:
                await ws.send_text(payload)


        async def listen(dsn):
            connection = await asyncpg.connect(dsn)
            await connection.add_listener("alerts", on_notify)
    """
    assert og(tmp_path, "OG605", "app/alerts.py", listener) == []
    broadcaster = """
        from broadcaster import Broadcast
        from fastapi import FastAPI, WebSocket

        app = FastAPI()
        bus = Broadcast("redis://cache:6379")
        watchers = []


        @app.websocket("/ws")
        async def feed(websocket: WebSocket):
            await websocket.accept()
            watchers.append(websocket)


        async def relay():
            async with bus.subscribe(channel="alerts") as subscriber:
                async for event in subscriber:
                    for ws in watchers:
                        await ws.send_text(event.message)
    """
    assert og(tmp_path, "OG605", "app/alerts.py", broadcaster) == []


def test_a_subscription_that_is_not_every_replicas_copy_does_not_excuse_the_delivery(tmp_path):
    # a callback registered with a scheduler, not a channel (APScheduler's add_listener(callback, mask))
    scheduler_listener = """
        from apscheduler.schedulers.asyncio import AsyncIOScheduler
        from fastapi import FastAPI, WebSocket
        import asyncpg

        app = FastAPI()
        scheduler = AsyncIOScheduler()
        watchers = []


        @app.websocket("/ws")
        async def feed(websocket: WebSocket):
            await websocket.accept()
            watchers.append(websocket)


        def on_job_event(event):
            for ws in watchers:
                ws.send_text(str(event))


        scheduler.add_listener(on_job_event)
    """
    assert [d.line for d in og(tmp_path, "OG605", "app/jobs.py", scheduler_listener)] == [
        line_of(scheduler_listener, "for ws in watchers")]
    # a NATS queue group hands each message to one subscriber only
    queue_group = """
        import nats
        from fastapi import FastAPI, WebSocket

        app = FastAPI()
        watchers = []


        @app.websocket("/ws")
        async def feed(websocket: WebSocket):
            await websocket.accept()
            watchers.append(websocket)


        async def on_message(msg):
            for ws in watchers:
                await ws.send_bytes(msg.data)


        async def consume():
            nc = await nats.connect("nats://bus:4222")
            await nc.subscribe("alerts", queue="web", cb=on_message)
    """
    assert [d.line for d in og(tmp_path, "OG605", "app/alerts.py", queue_group)] == [
        line_of(queue_group, "for ws in watchers")]
    assert og(tmp_path, "OG605", "app/alerts.py", queue_group.replace('queue="web", ', "")) == []
    # the module's own in-process bus: what one replica publishes there stays in it
    own_bus = """
        import asyncio

        import redis
        from fastapi import FastAPI, WebSocket

        app = FastAPI()
        watchers = []


        class Bus:
            def __init__(self):
                self.queue = asyncio.Queue()

            async def listen(self):
                while True:
                    yield await self.queue.get()


        bus = Bus()


        @app.websocket("/ws")
        async def feed(websocket: WebSocket):
            await websocket.accept()
            watchers.append(websocket)


        async def relay():
            async for text in bus.listen():
                for ws in watchers:
                    await ws.send_text(text)
    """
    assert [d.line for d in og(tmp_path, "OG605", "app/alerts.py", own_bus)] == [
        line_of(own_bus, "for ws in watchers")]


def test_a_delivery_in_another_module_fed_by_a_relay_here_is_per_replica(tmp_path):
    write(tmp_path, "live/__init__.py", "")
    write(tmp_path, "live/relay.py", """
        import json

        import redis.asyncio as aioredis

        from live.board import board


        async def relay():
            pubsub = aioredis.from_url("redis://cache").pubsub()
            await pubsub.subscribe("scores")
            async for event in pubsub.listen():
                if event["type"] == "message":
                    await board.deliver_here(json.loads(event["data"]))
    """)
    source = """
        from starlette.websockets import WebSocket


        class Board:
            def __init__(self):
                self.fans = []

            async def join(self, ws: WebSocket):
                await ws.accept()
                self.fans.append(ws)

            async def deliver_here(self, score):
                for ws in self.fans:
                    await ws.send_json(score)


        board = Board()
    """
    assert og(tmp_path, "OG605", "live/board.py", source, cross_file=True) == []
    # read alone, nothing in the module calls the delivery: a send to the registry, reported
    assert [d.line for d in og(tmp_path, "OG605", "live/board.py", source)] == [line_of(source, "for ws in self.fans")]


def test_socketio_sends_of_what_a_shared_channel_brought_and_start_up_code_also_called_by_a_handler(tmp_path):
    relay = """
        import redis.asyncio as aioredis
        import socketio

        sio = socketio.AsyncServer(async_mode="asgi")


        async def relay():
            pubsub = aioredis.from_url("redis://cache").pubsub()
            await pubsub.subscribe("alerts")
            async for event in pubsub.listen():
                await sio.emit("alert", event["data"])
    """
    assert og(tmp_path, "OG605", "app/live.py", relay) == []
    ticker = """
        import asyncio
        from contextlib import asynccontextmanager

        import socketio
        from fastapi import FastAPI

        sio = socketio.AsyncServer(async_mode="asgi")


        async def tick():
            await sio.emit("tick", {})


        @asynccontextmanager
        async def lifespan(app: FastAPI):
            async def heartbeat():
                while True:
                    await tick()
                    await asyncio.sleep(5)

            task = asyncio.create_task(heartbeat())
            yield
            task.cancel()


        app = FastAPI(lifespan=lifespan)
    """
    assert og(tmp_path, "OG605", "app/live.py", ticker) == []
    # a handler that also runs the start-up code's send: what it sends reaches this replica's clients only
    also_from_handler = ticker + """

        @app.post("/tick")
        async def tick_now():
            await tick()
    """
    assert [d.line for d in og(tmp_path, "OG605", "app/live.py", also_from_handler)] == [
        line_of(also_from_handler, "sio = socketio")]
