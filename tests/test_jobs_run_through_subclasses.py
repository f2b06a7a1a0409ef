"""Scheduled work reached through class hierarchies: a method called on an instance known only as a base (``self``
in the base's template method, a parameter annotated with the base, an instance of a class taken out of a
registry of subclasses) runs every override; a registry filled by a class decorator or ``__init_subclass__``
holds each class; a dependency-injection container hands out what its providers make."""
from __future__ import annotations

from test_job_discovery import findings, write  # noqa: F401 (fresh_caches: autouse here too)
from test_job_discovery import fresh_caches  # noqa: F401

# -- a registry filled by a class decorator, scheduled with APScheduler ------------------------------------
PLUGINS = """
    from typing import Callable, Dict, List, Type

    _KNOWN: Dict[str, "Type[Chore]"] = {{}}


    class Chore:
        every_minutes = 60

        def __init__(self, store) -> None:
            self.store = store

        def fire(self) -> None:
            {claim}self.perform()

        def perform(self) -> None:
            return None


    def chore(name: str) -> Callable:
        def register(cls):
            _KNOWN[name] = cls
            return cls
        return register


    def known_chores() -> List[Type[Chore]]:
        return list(_KNOWN.values())
    """

CHORES = """
    import requests

    from .plugins import Chore, chore


    @chore("invoice-nudges")
    class InvoiceNudges(Chore):
        def perform(self) -> None:
            for row in self.store.overdue():
                requests.post("https://hooks.example.org/nudge", json={"invoice": row})
    """

FACTORY = """
    from apscheduler.schedulers.background import BackgroundScheduler

    from . import chores  # noqa: F401
    from .plugins import known_chores


    def start(store):
        scheduler = BackgroundScheduler()
        for kind in known_chores():
            job = kind(store)
            scheduler.add_job(job.fire, "interval", minutes=kind.every_minutes)
        scheduler.start()
        return scheduler
    """

CLAIM = """if not self.store.redis.set("chore:" + type(self).__name__, "1", nx=True, ex=300):
                return
            """


def test_a_chore_registered_by_a_class_decorator_runs_its_override(tmp_path):
    files = {"ops/__init__.py": "", "ops/chores.py": CHORES, "ops/factory.py": FACTORY}
    write(tmp_path / "plain", {**files, "ops/plugins.py": PLUGINS.format(claim="")})
    assert findings(tmp_path / "plain", "ops/factory.py") == [(12, "OG201")]
    # the base's template method claims before it calls the hook: every override runs once
    write(tmp_path / "claimed", {**files, "ops/plugins.py": PLUGINS.format(claim=CLAIM)})
    assert findings(tmp_path / "claimed", "ops/factory.py") == []


# -- a registry kept on the base by ``__init_subclass__``, run with ``schedule`` ------------------------------
BASE = """
    import logging
    from typing import ClassVar, Dict, Type

    log = logging.getLogger(__name__)


    class Routine:
        catalogue: ClassVar[Dict[str, Type["Routine"]]] = {}
        slug: ClassVar[str] = ""

        def __init_subclass__(cls, **kwargs) -> None:
            super().__init_subclass__(**kwargs)
            if cls.slug:
                Routine.catalogue[cls.slug] = cls

        def go(self) -> None:
            log.info("routine %s", self.slug)
            self.body()

        def body(self) -> None:
            pass
    """

ROUTINES = """
    import smtplib

    from .base import Routine


    class WeeklyLetter(Routine):
        slug = "weekly-letter"

        def body(self) -> None:
            with smtplib.SMTP("mail.internal") as smtp:
                smtp.sendmail("ops@example.org", ["all@example.org"], "weekly")
    """

LOOP = """
    import time

    import schedule

    from {package} import routines  # noqa: F401
    from {package}.base import Routine


    def main() -> None:
        for slug, kind in Routine.catalogue.items():
            schedule.every().monday.do(kind().go)
        while True:
            schedule.run_pending()
            time.sleep(5)


    if __name__ == "__main__":
        main()
    """

QUIET_ROUTINES = """
    from .base import Routine


    class CountOnly(Routine):
        slug = "count-only"
        seen = 0

        def body(self) -> None:
            CountOnly.seen += 1
    """


def test_a_routine_kept_by_init_subclass_runs_its_override(tmp_path):
    files = {"letters/__init__.py": "", "letters/base.py": BASE, "letters/runner.py": LOOP.format(package="letters")}
    write(tmp_path / "mail", {**files, "letters/routines.py": ROUTINES})
    assert findings(tmp_path / "mail", "letters/runner.py") == [(12, "OG201")]
    # overrides that only touch the process are per-replica work
    write(tmp_path / "count", {**files, "letters/routines.py": QUIET_ROUTINES})
    assert findings(tmp_path / "count", "letters/runner.py") == []


# -- an asyncio loop over instances typed as the base, a wait taken only while time is left -----------------
TICKING = """
    import asyncio
    import time

    from .duties import Duty


    class Clock:
        def __init__(self, duties, pool) -> None:
            self.duties = duties
            self.pool = pool

        async def start(self) -> None:
            for duty in self.duties:
                asyncio.create_task(self._cycle(duty))

        async def _won(self, duty: Duty, slot: int) -> bool:
            row = await self.pool.fetchval(
                "INSERT INTO duty_slots (duty, slot) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING slot",
                duty.label, slot)
            return row is not None

        async def _cycle(self, duty: Duty) -> None:
            while True:
                wait = duty.next_at() - time.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                {claim}await duty.perform()
    """

DUTIES = """
    import httpx


    class Duty:
        label = ""

        def next_at(self) -> float:
            return 0.0

        async def perform(self) -> None:
            {base_body}


    class PostDigest(Duty):
        label = "digest"

        async def perform(self) -> None:
            async with httpx.AsyncClient() as client:
                await client.post("https://chat.example.org/hook", json={{"text": "digest"}})
    """

APP = """
    from contextlib import asynccontextmanager

    import asyncpg
    from fastapi import FastAPI

    from .clock import Clock
    from .duties import PostDigest


    @asynccontextmanager
    async def lifespan(app: FastAPI):
        pool = await asyncpg.create_pool("postgresql://db/app")
        await Clock([PostDigest()], pool).start()
        yield


    app = FastAPI(lifespan=lifespan)
    """

SLOT_CLAIM = """if not await self._won(duty, int(time.time() // 3600)):
                    continue
                """


def test_a_loop_over_duties_typed_as_the_base_runs_every_override(tmp_path):
    # the base's own ``perform`` does nothing: what the loop runs is each subclass's
    write(tmp_path, {"svc/__init__.py": "", "svc/clock.py": TICKING.format(claim=""),
                     "svc/duties.py": DUTIES.format(base_body="return None"), "svc/main.py": APP})
    assert findings(tmp_path, "svc/clock.py") == [(23, "OG201")]


def test_a_claim_after_a_conditional_wait_leads_the_loop(tmp_path):
    write(tmp_path, {"svc/__init__.py": "", "svc/clock.py": TICKING.format(claim=SLOT_CLAIM),
                     "svc/duties.py": DUTIES.format(base_body="raise NotImplementedError"), "svc/main.py": APP})
    assert findings(tmp_path, "svc/clock.py") == []


# -- a dependency-injection container hands out the loops an app starts -------------------------------------
LOOPS = """
    import asyncio


    class Periodic:
        interval = 60.0

        async def forever(self) -> None:
            while True:
                await asyncio.sleep(self.interval)
                await self.step()

        async def step(self) -> None:
            raise NotImplementedError
    """

PUSHER = """
    import aiohttp

    from .loops import Periodic


    class StockPusher(Periodic):
        def __init__(self, session: aiohttp.ClientSession, redis) -> None:
            self.session = session
            self.redis = redis

        async def step(self) -> None:
            {claim}async with self.session.put("https://erp.example.org/stock", json={{"full": True}}):
                pass
    """

WIRING = """
    import aiohttp
    from dependency_injector import containers, providers
    from redis.asyncio import Redis

    from .pusher import StockPusher


    class Wiring(containers.DeclarativeContainer):
        session = providers.Singleton(aiohttp.ClientSession)
        redis = providers.Singleton(Redis)
        pusher = providers.Singleton(StockPusher, session=session, redis=redis)
        background = providers.List(pusher)
    """

SERVER = """
    import asyncio

    from aiohttp import web

    from .wiring import Wiring


    async def begin(app: web.Application) -> None:
        wiring = Wiring()
        app["loops"] = [asyncio.create_task(loop.forever()) for loop in wiring.background()]


    def make_app() -> web.Application:
        app = web.Application()
        app.on_startup.append(begin)
        return app
    """

TOKEN_CLAIM = """if not await self.redis.set("stock-push", "1", nx=True, ex=50):
                return
            """


def test_a_loop_a_container_provides_runs_its_subclass_step(tmp_path):
    files = {"erp/__init__.py": "", "erp/loops.py": LOOPS, "erp/wiring.py": WIRING, "erp/server.py": SERVER}
    write(tmp_path / "plain", {**files, "erp/pusher.py": PUSHER.format(claim="")})
    assert findings(tmp_path / "plain", "erp/server.py") == [(11, "OG201")]
    # the only override of the base's stub claims first: each pass of the loop runs once
    write(tmp_path / "claimed", {**files, "erp/pusher.py": PUSHER.format(claim=TOKEN_CLAIM)})
    assert findings(tmp_path / "claimed", "erp/server.py") == []


# -- a mixin wrapping the base's method with ``super()`` -----------------------------------------------------
WRAPPED = """
    import logging
    import time

    import redis
    import requests
    import schedule

    log = logging.getLogger(__name__)
    shared = redis.Redis()


    class Exporter:
        def export(self) -> None:
            {claim}requests.put("https://ledger.example.org/daily", json={{"day": time.strftime("%F")}})


    class Timed:
        def export(self) -> None:
            started = time.monotonic()
            try:
                super().export()
            finally:
                log.info("export took %.1fs", time.monotonic() - started)


    class DailyExport(Timed, Exporter):
        pass


    if __name__ == "__main__":
        schedule.every().day.at("02:00").do(DailyExport().export)
        while True:
            schedule.run_pending()
            time.sleep(30)
    """

DAY_CLAIM = """if not shared.set("export:" + time.strftime("%F"), "1", nx=True, ex=90000):
                return
            """


def test_super_in_a_mixin_reaches_the_base_it_wraps(tmp_path):
    write(tmp_path / "plain", {"books/__init__.py": "", "books/export.py": WRAPPED.format(claim="")})
    assert findings(tmp_path / "plain", "books/export.py") == [(19, "OG201")]
    # the base the mixin's ``super()`` runs claims the day first
    write(tmp_path / "claimed", {"books/__init__.py": "", "books/export.py": WRAPPED.format(claim=DAY_CLAIM)})
    assert findings(tmp_path / "claimed", "books/export.py") == []
