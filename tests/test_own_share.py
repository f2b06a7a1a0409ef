"""A repeated job that works only on this replica's own share: items of a registry the process fills as it
serves, rows picked by the replica's own identity. Every replica must do its own; OG201 stays silent. The
same job over what start-up or the loop itself put there is the same work in every replica, and reported."""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)


ROOMS = """\
    import asyncio
    import time

    import httpx

    broker = httpx.AsyncClient(base_url="https://rooms.example.org")


    class RoomKeeper:
        def __init__(self) -> None:
            self._open = {{}}
            self._task = None

        async def start(self) -> None:
            self._task = asyncio.create_task(self._loop())

        def join(self, room_id: str) -> None:
            self._remember(room_id)

        def _remember(self, room_id: str) -> None:
            self._open[room_id] = time.monotonic()

        async def _loop(self) -> None:
            while True:
                await asyncio.sleep(30)
                {body}
"""
SWEEP_OWN = """\
idle = [room for room, seen in self._open.items() if time.monotonic() - seen > 600]
                for room in idle:
                    self._open.pop(room, None)
                    await broker.post(f"/rooms/{room}/close")"""
SWEEP_ALL = """\
await broker.post("/rooms/close-idle")"""

APP = """\
    from contextlib import asynccontextmanager

    from fastapi import FastAPI

    from svc.rooms import RoomKeeper

    keeper = RoomKeeper()


    @asynccontextmanager
    async def lifespan(app):
        await keeper.start()
        yield


    api = FastAPI(lifespan=lifespan)


    @api.post("/rooms/{room_id}/join")
    async def join(room_id: str):
        keeper.join(room_id)
"""


@pytest.mark.parametrize("body, flagged", [
    (SWEEP_OWN, False),  # closes the rooms this replica's requests opened: its own share
    (SWEEP_ALL, True),  # one shared call, the same from every replica
])
def test_a_sweep_of_what_this_replica_served(tmp_path, body, flagged):
    write(tmp_path, {"svc/__init__.py": "", "svc/rooms.py": ROOMS.format(body=body), "svc/app.py": APP})
    assert findings(tmp_path, "svc/app.py") == ([(12, "OG201")] if flagged else [])


def test_a_registry_start_up_fills_is_the_same_in_every_replica(tmp_path):
    """Rooms joined at start-up (module level here) are joined by every replica: closing them repeats."""
    registered = APP.replace("keeper = RoomKeeper()\n", "keeper = RoomKeeper()\n    keeper.join(\"lobby\")\n")
    write(tmp_path, {"svc/__init__.py": "", "svc/rooms.py": ROOMS.format(body=SWEEP_OWN), "svc/app.py": registered})
    assert findings(tmp_path, "svc/app.py") == [(13, "OG201")]


def test_a_registry_the_loop_fills_itself_is_the_same_in_every_replica(tmp_path):
    """The loop loads every open room from the shared service into its own dict: each replica loads the same
    rooms, and each closes them. (An awaited ``get`` of a URL is a fetch, not a queue's next item.)"""
    loads = SWEEP_OWN.replace("idle = [", "for room in (await broker.get('/rooms')).json():\n"
                                          "                    self._open[room] = 0.0\n                idle = [")
    write(tmp_path, {"svc/__init__.py": "", "svc/rooms.py": ROOMS.format(body=loads),
                     "svc/app.py": APP.split("\n\n\n    @api.post")[0] + "\n"})
    assert "join" not in (tmp_path / "svc/app.py").read_text()
    assert findings(tmp_path, "svc/app.py") == [(12, "OG201")]


SOCKETS = """\
    import asyncio
    from contextlib import asynccontextmanager

    from fastapi import FastAPI, WebSocket

    listeners = set()


    async def notify_all(count):
        await api.state.bus.publish("listeners", count)


    async def ping_listeners():
        while True:
            await asyncio.sleep(20)
            for socket in list(listeners):
                {send}


    @asynccontextmanager
    async def lifespan(app):
        task = asyncio.create_task(ping_listeners())
        yield
        task.cancel()


    api = FastAPI(lifespan=lifespan)


    @api.websocket("/events")
    async def events(socket: WebSocket):
        await socket.accept()
        listeners.add(socket)
"""


@pytest.mark.parametrize("send, flagged", [
    ("await socket.send_json({'type': 'ping'})", False),  # the sockets connected to this replica
    ("await notify_all('ping')", True),  # the same call from every replica
])
def test_a_module_registry_of_connections(tmp_path, send, flagged):
    write(tmp_path, {"app.py": SOCKETS.format(send=send)})
    assert bool(findings(tmp_path, "app.py")) is flagged


HEARTBEAT = """\
    import asyncio
    import uuid
    from contextlib import asynccontextmanager

    from fastapi import FastAPI
    from sqlalchemy import update

    from svc.db import Job, Session


    class Leases:
        def __init__(self) -> None:
            self.holder = uuid.uuid4().hex

        async def beat(self) -> None:
            while True:
                async with Session() as session:
                    statement = update(Job).where({picked}).values(beats=Job.beats + 1, holder=self.holder)
                    await session.execute(statement)
                    await session.commit()
                await asyncio.sleep(15)


    leases = Leases()


    @asynccontextmanager
    async def lifespan(app):
        task = asyncio.create_task(leases.beat())
        yield
        task.cancel()


    api = FastAPI(lifespan=lifespan)
"""
DB = """\
    from sqlalchemy import Column, Integer, String
    from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine
    from sqlalchemy.orm import declarative_base

    Base = declarative_base()
    Session = async_sessionmaker(create_async_engine("postgresql+asyncpg://db/app"))


    class Job(Base):
        __tablename__ = "jobs"
        id = Column(Integer, primary_key=True)
        holder = Column(String)
        status = Column(String)
        beats = Column(Integer)
"""


@pytest.mark.parametrize("picked, flagged", [
    ("Job.holder == self.holder", False),  # the rows this replica holds: its own heartbeat
    ("Job.status == 'running'", True),  # every running row, counted once by each replica
])
def test_rows_picked_by_the_replicas_own_identity(tmp_path, picked, flagged):
    write(tmp_path, {"svc/__init__.py": "", "svc/db.py": DB, "svc/main.py": HEARTBEAT.format(picked=picked)})
    assert bool(findings(tmp_path, "svc/main.py")) is flagged


# -- a generic ticker repeats the work it is handed ----------------------------------------------------------
REPEAT = """\
    import asyncio
    import logging

    log = logging.getLogger(__name__)


    async def keep_running(job, pause):
        while True:
            try:
                await job()
            except Exception:
                log.exception("pass failed")
            await asyncio.sleep(pause)
"""
REMINDERS = """\
    import httpx

    from svc.db import claim_slot


    async def remind_owners():
        {claim}
        async with httpx.AsyncClient() as client:
            await client.post("https://push.example.org/remind")
"""
CLAIM_SLOT = """\
from redis.asyncio import Redis

client = Redis(host="redis")


async def claim_slot(name, seconds):
    return await client.set(f"slot:{name}", 1, nx=True, ex=seconds)
"""
STARTS = {
    "create_task": "asyncio.create_task(repeat.keep_running(reminders.remind_owners, 60))",
    "keyword": "asyncio.create_task(repeat.keep_running(pause=60, job=reminders.remind_owners))",
}
REPEAT_APP = """\
    import asyncio
    from contextlib import asynccontextmanager

    from fastapi import FastAPI

    from svc import reminders, repeat


    @asynccontextmanager
    async def lifespan(app):
        task = {start}
        yield
        task.cancel()


    api = FastAPI(lifespan=lifespan)
"""


@pytest.mark.parametrize("start", sorted(STARTS))
@pytest.mark.parametrize("claim, flagged", [
    ("pass", True),
    ("if not await claim_slot('remind_owners', 60):\n            return", False),
])
def test_the_work_a_generic_ticker_is_handed_is_the_job(tmp_path, start, claim, flagged):
    """``keep_running(job, pause)`` calls what it is handed on every pass: the handed function is the job, and
    its own leading claim is what guards it (the ticker, which knows nothing of it, has none)."""
    write(tmp_path, {"svc/__init__.py": "", "svc/repeat.py": REPEAT,
                     "svc/db.py": CLAIM_SLOT,
                     "svc/reminders.py": REMINDERS.format(claim=claim),
                     "svc/app.py": REPEAT_APP.format(start=STARTS[start])})
    assert findings(tmp_path, "svc/app.py") == ([(11, "OG201")] if flagged else [])


def test_a_generic_ticker_in_the_same_module_offers_the_claim_in_the_work(tmp_path):
    """Reported at the work's def, with the claim that belongs there: a ``return`` at the top of the work,
    not a ``continue`` in a loop it does not have."""
    from onceguard.config import from_mapping
    from onceguard.engine.check import check_source

    body = REMINDERS.format(claim="pass").replace("    from svc.db import claim_slot\n", "")
    start = REPEAT_APP.format(start="asyncio.create_task(keep_running(remind_owners, 60))")
    text = REPEAT + body + start.replace("    from svc import reminders, repeat\n", "")
    write(tmp_path, {"svc/__init__.py": "", "svc/one.py": text})
    path = tmp_path / "svc/one.py"
    found = [d for d in check_source(path.read_bytes(), str(path), from_mapping({}, root=str(tmp_path)),
                                     cross_file=True) if d.code == "OG201"]
    assert len(found) == 1
    assert path.read_text().splitlines()[found[0].line - 1].startswith("async def remind_owners")
    assert found[0].fix is not None and ": return" in found[0].fix.description


def test_a_thread_handed_its_work(tmp_path):
    ticker = """\
        import threading
        import time

        import requests


        def every(work, seconds):
            while True:
                work()
                time.sleep(seconds)


        def export_orders():
            requests.post("https://erp.example.org/orders/export")


    """
    app = """\
        import threading

        from django.apps import AppConfig


        class OrdersConfig(AppConfig):
            name = "orders"

            def ready(self):
                from orders.ticker import every, export_orders

                threading.Thread(target=every, args=(export_orders, 300), daemon=True).start()
    """
    write(tmp_path, {"orders/__init__.py": "", "orders/ticker.py": ticker, "orders/apps.py": app})
    assert findings(tmp_path, "orders/apps.py") == [(12, "OG201")]


KEEPALIVE = """\
    import asyncio
    import socket
    from contextlib import asynccontextmanager

    from fastapi import FastAPI

    from svc.bus import bus

    NODE = f"{{socket.gethostname()}}-api"


    async def announce():
        while True:
            await bus.publish("nodes", {message})
            await asyncio.sleep(10)


    @asynccontextmanager
    async def lifespan(app):
        task = asyncio.create_task(announce())
        yield
        task.cancel()


    api = FastAPI(lifespan=lifespan)
"""


@pytest.mark.parametrize("message, flagged", [
    ('{{"alive": NODE}}', False),  # the replica saying it is alive: each must say it for itself
    ('{{"alive": "api"}}', True),  # the same message from every replica
])
def test_what_a_replica_says_of_itself(tmp_path, message, flagged):
    write(tmp_path, {"svc/__init__.py": "", "svc/bus.py": "bus = None\n",
                     "svc/main.py": KEEPALIVE.format(message=message)})
    assert bool(findings(tmp_path, "svc/main.py")) is flagged


CLEANUP = """\
    import asyncio
    import shutil
    import tempfile
    import time
    from contextlib import asynccontextmanager
    from pathlib import Path

    from fastapi import FastAPI

    SCRATCH = Path(tempfile.gettempdir()) / "renders"


    async def sweep_scratch():
        while True:
            cutoff = time.time() - 3600
            for entry in SCRATCH.iterdir():
                if entry.stat().st_mtime < cutoff:
                    {remove}
            await asyncio.sleep(600)


    @asynccontextmanager
    async def lifespan(app):
        task = asyncio.create_task(sweep_scratch())
        yield
        task.cancel()


    api = FastAPI(lifespan=lifespan)
"""


@pytest.mark.parametrize("remove", [
    "shutil.rmtree(entry, ignore_errors=True)",
    "entry.unlink(missing_ok=True)",
])
def test_deleting_files_repeats_to_the_same_end(tmp_path, remove):
    """Each replica sweeping a scratch directory deletes what is there; a second sweep finds it gone. At most
    duplicate work (OG204, off by default), never a duplicated effect."""
    write(tmp_path, {"app.py": CLEANUP.format(remove=remove)})
    assert findings(tmp_path, "app.py", codes=("OG201", "OG204"), select=["OG", "OG204"]) == [(13, "OG204")]


PUSHER = """\
    import threading
    import time

    import httpx
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client import multiprocess

    PUSH_URL = "https://metrics.example.org/push"


    def _samples():
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        for metric in registry.collect():
            for sample in metric.samples:
                yield (sample.name, sample.value)


    def push_forever(stop):
        with httpx.Client() as client:
            while not stop.is_set():
                {body}
                stop.wait(15)

"""
PUSH_BODIES = {
    "own metrics, through a generator": (
        "lines = [f'{name} {value}' for name, value in _samples()]\n"
        "                client.post(PUSH_URL, content='\\n'.join(lines))", False),
    "own metrics, the exposition": ("client.post(PUSH_URL, content=generate_latest())", False),
    "a shared counter": ("client.post(PUSH_URL, content='tick')", True),
}


@pytest.mark.parametrize("case", sorted(PUSH_BODIES))
def test_pushing_this_process_metrics(tmp_path, case):
    """Flushing the process's own metrics (a Prometheus registry's samples, the exposition text) is what each
    replica must do for itself."""
    body, flagged = PUSH_BODIES[case]
    app = """\
        import threading

        from django.apps import AppConfig


        class MetricsConfig(AppConfig):
            name = "metrics"

            def ready(self):
                from metrics.push import push_forever

                threading.Thread(target=push_forever, args=(threading.Event(),), daemon=True).start()
    """
    write(tmp_path, {"metrics/__init__.py": "", "metrics/push.py": PUSHER.format(body=body), "metrics/apps.py": app})
    assert bool(findings(tmp_path, "metrics/apps.py")) is flagged
