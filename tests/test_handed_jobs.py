"""Jobs, rows and keys handed through the project's own plumbing.

- A job handed to a scheduler as a parameter (``def _plan(s, fn, when): s.add_job(fn, when)``) is each function
  the callers pass, and a loop over a table of (function, trigger) rows passes each row (OG201).
- A claim helper that answers with something read off the claim's result (``return bool(res.scalar_one())``)
  is a claim.
- A claim given back after the work is enough when the work marks what it did in the rows it picks (OG201).
- Rows a loader selects by their state and hands back, worked through and updated by its caller through other
  helpers, are picked without a claim (OG302); so are rows whose state column is known only because the update
  sets the column the SELECT tested.
- A lock key built by a small function of the project is read through it (OG502).
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)


PLANNING = """\
    from apscheduler.schedulers.asyncio import AsyncIOScheduler
    from apscheduler.triggers.interval import IntervalTrigger

    from .work import nightly_totals, refresh_local_menu

    ROWS = [
        (nightly_totals, IntervalTrigger(hours=24)),
        (refresh_local_menu, IntervalTrigger(minutes=5)),
    ]


    def _plan(sched: AsyncIOScheduler, fn, when) -> None:
        sched.add_job(fn, when, id=fn.__name__)
        print("planned", fn.__name__)


    def make_scheduler() -> AsyncIOScheduler:
        sched = AsyncIOScheduler()
        for fn, when in ROWS:
            _plan(sched, fn, when)
        return sched
"""

WORK = """\
    import httpx

    MENU = {}


    async def nightly_totals() -> None:
        async with httpx.AsyncClient() as client:
            await client.post("https://ledger.example.org/totals", json={"day": "today"})


    async def refresh_local_menu() -> None:
        MENU.clear()
        MENU["soup"] = 4
"""

APP = """\
    from contextlib import asynccontextmanager

    from fastapi import FastAPI

    from .planning import make_scheduler


    @asynccontextmanager
    async def lifespan(app):
        sched = make_scheduler()
        sched.start()
        yield


    app = FastAPI(lifespan=lifespan)
"""


def test_a_job_handed_through_a_parameter_from_a_table_is_each_row(tmp_path):
    write(tmp_path, {"diner/__init__.py": "", "diner/planning.py": PLANNING, "diner/work.py": WORK,
                     "diner/app.py": APP})
    # nightly_totals reaches out of the process; refresh_local_menu only refills this process's memory
    assert findings(tmp_path, "diner/planning.py") == [(7, "OG201")]


ONE_MODULE = """\
    import httpx
    from apscheduler.schedulers.asyncio import AsyncIOScheduler


    async def nightly_totals() -> None:
        async with httpx.AsyncClient() as client:
            await client.post("https://ledger.example.org/totals", json={"day": "today"})


    ROWS = {"totals": (nightly_totals, "interval")}


    def _plan(sched, fn, how) -> None:
        sched.add_job(fn, how, hours=24)


    def make_scheduler() -> AsyncIOScheduler:
        sched = AsyncIOScheduler()
        for name, (fn, how) in ROWS.items():
            _plan(sched, fn, how)
        return sched
"""


def test_a_job_of_the_same_module_is_reported_at_its_def(tmp_path):
    write(tmp_path, {"diner/__init__.py": "", "diner/planning.py": ONE_MODULE, "diner/app.py": APP})
    assert findings(tmp_path, "diner/planning.py") == [(5, "OG201")]


def test_a_caller_handing_its_own_function_directly_is_followed(tmp_path):
    planning = PLANNING.replace("""        for fn, when in ROWS:
            _plan(sched, fn, when)""", """        _plan(sched, nightly_totals, IntervalTrigger(hours=24))""")
    write(tmp_path, {"diner/__init__.py": "", "diner/planning.py": planning, "diner/work.py": WORK,
                     "diner/app.py": APP})
    assert findings(tmp_path, "diner/planning.py") == [(19, "OG201")]


CLAIMED_WORK = WORK.replace("""    async def nightly_totals() -> None:
        async with httpx.AsyncClient() as client:""", """    async def nightly_totals() -> None:
        if not await take_turn("nightly_totals"):
            return
        async with httpx.AsyncClient() as client:""").replace("import httpx\n", """import httpx
    from sqlalchemy import text

    from .db import Session


    async def take_turn(name: str) -> bool:
        async with Session() as session:
            result = await session.execute(text("SELECT pg_try_advisory_xact_lock(hashtext(:n))"), {"n": name})
            return bool(result.scalar_one())
""")


def test_a_claim_helper_answering_from_the_claims_result_is_a_claim(tmp_path):
    write(tmp_path, {"diner/__init__.py": "", "diner/planning.py": PLANNING, "diner/work.py": CLAIMED_WORK,
                     "diner/db.py": "Session = None\n", "diner/app.py": APP})
    assert findings(tmp_path, "diner/planning.py") == []


# -- a lease given back, over work that marks its rows ------------------------------------------------------
LEASE = """\
    import uuid

    import redis

    r = redis.Redis()
    _DROP = r.register_script("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0")


    def take(name: str, seconds: int):
        token = uuid.uuid4().hex
        if not r.set(f"turn:{name}", token, nx=True, ex=seconds):
            return None
        return token


    def give_back(name: str, token: str) -> None:
        _DROP(keys=[f"turn:{name}"], args=[token])
"""

REMIND = """\
    import httpx
    from sqlalchemy import create_engine, text

    from . import lease

    engine = create_engine("postgresql://db/app")


    def remind_renewals() -> None:
        token = lease.take("renewals", 600)
        if token is None:
            return
        try:
            with engine.begin() as conn:
                rows = conn.execute(text(
                    "SELECT s.id, u.email FROM subscriptions s JOIN users u ON u.id = s.user_id "
                    "WHERE s.reminded_on IS NULL AND s.renews_at < now() + interval '3 days'")).all()
                for row in rows:
                    httpx.post("https://mail.example.org/send", json={"to": row.email})
                    conn.execute(text("UPDATE subscriptions SET reminded_on = now() WHERE id = :id"), {"id": row.id})
        finally:
            lease.give_back("renewals", token)
"""

#: ``python -m subs`` runs the package's ``__main__.py`` in every replica.
DOCKERFILE = """\
    FROM python:3.12-slim
    COPY . /srv
    WORKDIR /srv
    CMD ["python", "-m", "subs"]
"""

LOOP = """\
    import time

    from .remind import remind_renewals


    def main() -> None:
        while True:
            remind_renewals()
            time.sleep(60)


    if __name__ == "__main__":
        main()
"""


def test_a_lease_given_back_is_enough_when_the_work_marks_the_rows_it_picks(tmp_path):
    write(tmp_path, {"subs/__init__.py": "", "subs/lease.py": LEASE, "subs/remind.py": REMIND,
                     "subs/__main__.py": LOOP, "Dockerfile": DOCKERFILE})
    assert findings(tmp_path, "subs/__main__.py", codes=("OG201",)) == []
    assert findings(tmp_path, "subs/remind.py", codes=("OG302",)) == []


def test_the_same_lease_over_work_that_marks_nothing_is_reported(tmp_path):
    unmarked = REMIND.replace("""                    conn.execute(text("UPDATE subscriptions SET reminded_on = now() WHERE id = :id"), {"id": row.id})\n""",
                              "")
    write(tmp_path, {"subs/__init__.py": "", "subs/lease.py": LEASE, "subs/remind.py": unmarked,
                     "subs/__main__.py": LOOP, "Dockerfile": DOCKERFILE})
    assert findings(tmp_path, "subs/__main__.py", codes=("OG201",)) == [(8, "OG201")]


def test_rows_picked_by_a_column_the_update_sets_are_picked_by_state(tmp_path):
    unleased = REMIND.replace("""        token = lease.take("renewals", 600)
        if token is None:
            return
""", "        token = None\n")
    write(tmp_path, {"subs/__init__.py": "", "subs/lease.py": LEASE, "subs/remind.py": unleased,
                     "subs/__main__.py": LOOP, "Dockerfile": DOCKERFILE})
    assert findings(tmp_path, "subs/remind.py", codes=("OG302",)) == [(13, "OG302")]


# -- a loader hands the rows back; its caller updates them through helpers -----------------------------------
QUEUE = """\
    def waiting(conn, limit: int):
        with conn.cursor() as cur:
            cur.execute("SELECT id, phone FROM texts WHERE phase = 'waiting' ORDER BY id LIMIT %s", (limit,))
            return cur.fetchall()


    def finished(conn, text_id: int) -> None:
        conn.execute("UPDATE texts SET phase = 'finished' WHERE id = %s", (text_id,))
"""

SENDER = """\
    import httpx

    from .queue import finished, waiting


    def send_some(pool) -> int:
        with pool.connection() as conn:
            batch = waiting(conn, 20)
            for text_id, phone in batch:
                httpx.post("https://sms.example.org", json={"to": phone})
                finished(conn, text_id)
        return len(batch)
"""


def test_a_loader_whose_caller_updates_the_rows_through_a_helper_picks_them(tmp_path):
    write(tmp_path, {"sms/__init__.py": "", "sms/queue.py": QUEUE, "sms/sender.py": SENDER})
    assert findings(tmp_path, "sms/queue.py", codes=("OG302",)) == [(3, "OG302")]


def test_a_loader_that_claims_with_skip_locked_is_clean(tmp_path):
    claimed = QUEUE.replace("LIMIT %s", "LIMIT %s FOR UPDATE SKIP LOCKED")
    write(tmp_path, {"sms/__init__.py": "", "sms/queue.py": claimed, "sms/sender.py": SENDER})
    assert findings(tmp_path, "sms/queue.py", codes=("OG302",)) == []


@pytest.mark.parametrize("cross_file", [True, False])
def test_a_loader_nobody_updates_after_is_clean(tmp_path, cross_file):
    reader = SENDER.replace("                finished(conn, text_id)\n", "")
    write(tmp_path, {"sms/__init__.py": "", "sms/queue.py": QUEUE, "sms/sender.py": reader})
    assert findings(tmp_path, "sms/queue.py", codes=("OG302",), cross_file=cross_file) == []


# -- a lock key from a small function ----------------------------------------------------------------------
KEYED = """\
    import redis

    r = redis.Redis()


    def _slot(job: str) -> str:
        return f"shop:lease:{job}"


    def take(job: str) -> bool:
        return bool(r.set(_slot(job), "1", nx=True, ex=60))


    def drop(job: str) -> None:
        r.delete(_slot(job))
"""


def test_a_lock_key_built_by_a_function_is_read_through_it(tmp_path):
    write(tmp_path, {"shop/__init__.py": "", "shop/turns.py": KEYED})
    assert findings(tmp_path, "shop/turns.py", codes=("OG502",)) == [(15, "OG502")]


BACKFILL = """\
    def fill_missing(cur, suffix: str) -> None:
        cur.execute("SELECT user_id FROM profiles WHERE full_id IS NULL")
        if cur.fetchall():
            cur.execute(
                "UPDATE profiles SET full_id = user_id || %s WHERE user_id IN "
                "(SELECT user_id FROM profiles WHERE full_id IS NULL)", (suffix,))
"""


def test_a_set_based_update_that_selects_by_the_state_again_is_no_pickup(tmp_path):
    """The rows read are only counted; the UPDATE picks its rows by the state itself, in one statement."""
    write(tmp_path, {"users/__init__.py": "", "users/backfill.py": BACKFILL})
    assert findings(tmp_path, "users/backfill.py", codes=("OG302",)) == []


def test_the_same_column_moved_row_by_row_is_a_pickup(tmp_path):
    per_row = BACKFILL.replace("""        if cur.fetchall():
            cur.execute(
                "UPDATE profiles SET full_id = user_id || %s WHERE user_id IN "
                "(SELECT user_id FROM profiles WHERE full_id IS NULL)", (suffix,))""", """        for (user_id,) in cur.fetchall():
            cur.execute("UPDATE profiles SET full_id = %s WHERE user_id = %s", (user_id + suffix, user_id))""")
    write(tmp_path, {"users/__init__.py": "", "users/backfill.py": per_row})
    assert findings(tmp_path, "users/backfill.py", codes=("OG302",)) == [(2, "OG302")]


# -- a row changed where it is loaded, committed by the caller that handed in the session -------------------
WALLET = """\
    from sqlalchemy.orm import Session

    from .models import Account


    def spend(session: Session, account_id: int, cost: int) -> Account:
        row = session.get(Account, account_id)
        row.credits = row.credits - cost
        return row
"""

ROUTE = """\
    from fastapi import APIRouter, Depends

    from .db import get_session
    from .wallet import spend

    router = APIRouter()


    @router.post("/buy")
    def buy(account_id: int, session=Depends(get_session)):
        spend(session, account_id, 5)
        session.commit()
"""


def _shop(tmp_path, wallet=WALLET, route=ROUTE):
    write(tmp_path, {"shop/__init__.py": "", "shop/wallet.py": wallet, "shop/routes.py": route,
                     "shop/models.py": "class Account: pass\n", "shop/db.py": "def get_session(): ...\n"})
    return findings(tmp_path, "shop/wallet.py", codes=("OG301",))


def test_a_row_changed_in_a_helper_and_committed_by_the_caller_is_a_lost_update(tmp_path):
    assert _shop(tmp_path) == [(8, "OG301")]


def test_the_same_helper_loading_under_a_row_lock_is_clean(tmp_path):
    assert _shop(tmp_path, wallet=WALLET.replace("session.get(Account, account_id)",
                                                 "session.get(Account, account_id, with_for_update=True)")) == []


def test_a_caller_that_never_commits_the_session_it_handed_in_is_clean(tmp_path):
    assert _shop(tmp_path, route=ROUTE.replace("        session.commit()\n", "")) == []


# -- a loop that runs until a flag, flipped only from outside it, says stop -----------------------------------
FLAG_WORKER = """\
    import signal
    import time

    import httpx

    _running = True


    def _stop(*_):
        global _running
        _running = False


    def charge_due() -> None:
        httpx.post("https://billing.example.org/charge-due", json={})


    def main() -> None:
        signal.signal(signal.SIGTERM, _stop)
        while _running:
            charge_due()
            time.sleep(300)


    if __name__ == "__main__":
        main()
"""

FLAG_DOCKERFILE = """\
    FROM python:3.12-slim
    COPY . /srv
    WORKDIR /srv
    CMD ["python", "-m", "dues.worker"]
"""


def test_a_loop_until_a_flag_only_a_signal_handler_clears_runs_until_the_process_stops(tmp_path):
    """``charge_due`` is also a one-call helper, read in its place at the call: the job is still ``charge_due``."""
    write(tmp_path, {"dues/__init__.py": "", "dues/worker.py": FLAG_WORKER, "Dockerfile": FLAG_DOCKERFILE})
    assert findings(tmp_path, "dues/worker.py") == [(14, "OG201")]


def test_a_private_one_call_job_of_a_worker_loop_is_still_the_job(tmp_path):
    private = FLAG_WORKER.replace("charge_due", "_charge_due").replace("while _running:", "while True:")
    write(tmp_path, {"dues/__init__.py": "", "dues/worker.py": private, "Dockerfile": FLAG_DOCKERFILE})
    assert findings(tmp_path, "dues/worker.py") == [(14, "OG201")]


def test_a_loop_that_clears_its_own_flag_ends_on_its_own(tmp_path):
    ends = FLAG_WORKER.replace("""            time.sleep(300)""", """            time.sleep(300)
            _running = time.time() < 10""")
    write(tmp_path, {"dues/__init__.py": "", "dues/worker.py": ends, "Dockerfile": FLAG_DOCKERFILE})
    assert findings(tmp_path, "dues/worker.py") == []


LEDGER = """\
    from sqlalchemy.ext.asyncio import AsyncSession


    async def debit(session: AsyncSession, acct, amount) -> None:
        if acct.balance < amount:
            raise ValueError("short")
        acct.balance -= amount
"""

CHARGE_ROUTE = """\
    from sqlalchemy import select

    import cards.ledger as ledger
    from cards.models import Account


    async def charge(session, number: str, amount) -> None:
        acct = await session.scalar(select(Account).where(Account.number == number))
        await ledger.debit(session, acct, amount)
        await session.commit()
"""


def _cards(tmp_path, route=CHARGE_ROUTE):
    write(tmp_path, {"cards/__init__.py": "", "cards/ledger.py": LEDGER, "cards/routes.py": route,
                     "cards/models.py": "class Account: pass\n"})
    return findings(tmp_path, "cards/ledger.py", codes=("OG301",))


def test_a_row_handed_to_a_helper_of_another_module_and_committed_by_the_caller(tmp_path):
    assert _cards(tmp_path) == [(7, "OG301")]


def test_the_caller_loading_the_row_under_a_lock_keeps_the_helper_clean(tmp_path):
    assert _cards(tmp_path, CHARGE_ROUTE.replace(".where(Account.number == number)",
                                                 ".where(Account.number == number).with_for_update()")) == []


def test_a_caller_that_never_writes_the_row_back_keeps_the_helper_clean(tmp_path):
    assert _cards(tmp_path, CHARGE_ROUTE.replace("        await session.commit()\n", "")) == []


# -- a nested function that re-arms a Timer by its own name; its work assigned from a call --------------------
REARMING = """\
    import threading

    import httpx


    def post_due() -> int:
        return httpx.post("https://school.example.org/remind").status_code


    def arm(interval: float = 300) -> None:
        def _fire() -> None:
            sent = post_due()
            print("sent", sent)
            threading.Timer(interval, _fire).start()

        threading.Timer(interval, _fire).start()
"""


def test_a_nested_function_re_arming_its_own_timer_is_a_scheduled_job(tmp_path):
    write(tmp_path, {"school/__init__.py": "", "school/remind.py": REARMING})
    assert findings(tmp_path, "school/remind.py") == [(11, "OG201")]


def test_the_same_timer_whose_work_claims_first_is_clean(tmp_path):
    claimed = REARMING.replace("""            sent = post_due()""", """            if not claim_period("school:remind", 300):
                return
            sent = post_due()""").replace("import httpx\n", "import httpx\n\nfrom school.turns import claim_period\n")
    write(tmp_path, {"school/__init__.py": "", "school/remind.py": claimed})
    assert findings(tmp_path, "school/remind.py") == []


# -- an entry stored in process memory under a key the writer mints and hands out ----------------------------
TOKENS = """\
    import secrets

    from cachetools import TTLCache


    class SignInLinks:
        def __init__(self) -> None:
            self._waiting = TTLCache(maxsize=10_000, ttl=900)

        def issue(self, member_id: int) -> str:
            token = secrets.token_urlsafe(32)
            self._waiting[token] = member_id
            return token

        def redeem(self, token: str):
            return self._waiting.pop(token, None)


    links = SignInLinks()
"""


def test_an_entry_under_a_key_the_writer_mints_is_a_store_other_replicas_never_see(tmp_path):
    write(tmp_path, {"garden/__init__.py": "", "garden/links.py": TOKENS})
    assert findings(tmp_path, "garden/links.py", codes=("OG607",)) == [(8, "OG607")]


def test_a_cache_keyed_by_what_the_reader_computes_is_left_alone(tmp_path):
    memo = TOKENS.replace("token = secrets.token_urlsafe(32)", "token = str(member_id)")
    write(tmp_path, {"garden/__init__.py": "", "garden/links.py": memo})
    assert findings(tmp_path, "garden/links.py", codes=("OG607",)) == []


# -- huey: consumers told not to schedule, one scheduling consumer pinned to one replica ----------------------
HUEY_TASKS = """\
    import httpx
    from huey import RedisHuey, crontab

    huey = RedisHuey("vets")


    @huey.periodic_task(crontab(minute="*/5"))
    def push_updates() -> None:
        httpx.post("https://partner.example.org/updates", json={})
"""

HUEY_COMPOSE = """\
    services:
      worker:
        build: .
        command: ["huey_consumer", "vets.tasks.huey", "--workers", "4"{flag}]
        deploy:
          replicas: 3
      scheduler:
        build: .
        command: ["huey_consumer", "vets.tasks.huey", "--workers", "1"]
        deploy:
          replicas: 1
"""


@pytest.mark.parametrize("flag, reported", [(', "--no-periodic"', False), (', "-n"', False), ("", True)])
def test_huey_periodic_tasks_run_where_the_deployment_schedules_them(tmp_path, flag, reported):
    write(tmp_path, {"vets/__init__.py": "", "vets/tasks.py": HUEY_TASKS,
                     "docker-compose.yml": HUEY_COMPOSE.replace("{flag}", flag)})
    assert [code for _, code in findings(tmp_path, "vets/tasks.py")] == (["OG201"] if reported else [])


def test_a_service_pinned_to_one_replica_is_no_per_replica_launch(tmp_path):
    import textwrap

    import yaml

    from onceguard.project import deployment_files

    path = str(tmp_path / "docker-compose.yml")
    launches = deployment_files._compose(yaml.compose(textwrap.dedent(HUEY_COMPOSE.replace("{flag}", ""))), path)
    assert {launch.where: launch.per_replica for launch in launches} == {
        "docker-compose.yml service worker command": True, "docker-compose.yml service scheduler command": False}


# -- a plain SET after waiting for the key to go, deleted by the object's release ------------------------------
MUTEX = """\
    import asyncio

    import redis.asyncio as aioredis

    client = aioredis.Redis()


    class ProfileMutex:
        def __init__(self, key: str) -> None:
            self.key = key

        async def wait_and_take(self) -> None:
            while await client.exists(self.key):
                await asyncio.sleep(0.05)
            await client.set(self.key, "1", ex=3)

        async def release(self) -> None:
            await client.delete(self.key)
"""


def test_a_plain_set_after_waiting_for_absence_released_by_its_object_is_a_lock(tmp_path):
    write(tmp_path, {"track/__init__.py": "", "track/mutex.py": MUTEX})
    assert findings(tmp_path, "track/mutex.py", codes=("OG501", "OG502")) == [(15, "OG501"), (18, "OG502")]


def test_a_cache_filled_after_a_miss_and_dropped_by_an_invalidation_is_no_lock(tmp_path):
    cache = MUTEX.replace("""            while await client.exists(self.key):
                await asyncio.sleep(0.05)
            await client.set(self.key, "1", ex=3)""", """            value = await client.get(self.key)
            if value is None:
                value = "computed"
                await client.set(self.key, value, ex=3)
            return value""").replace("async def release", "async def invalidate")
    write(tmp_path, {"track/__init__.py": "", "track/mutex.py": cache})
    assert findings(tmp_path, "track/mutex.py", codes=("OG501", "OG502")) == []


SAMPLER = """\
    import psutil
    from apscheduler.schedulers.background import BackgroundScheduler

    sched = BackgroundScheduler()
    LAST = {"sent": 0}


    @sched.scheduled_job("interval", seconds=2)
    def sample_network() -> None:
        counters = psutil.net_io_counters()
        LAST["sent"] = counters.bytes_sent
"""


def test_a_job_that_samples_this_hosts_counters_into_its_memory_is_per_replica(tmp_path):
    write(tmp_path, {"panel/__init__.py": "", "panel/stats.py": SAMPLER})
    assert findings(tmp_path, "panel/stats.py") == []
    posting = SAMPLER.replace('LAST["sent"] = counters.bytes_sent', 'requests.post("https://stats.example.org", '
                              'json={"sent": counters.bytes_sent})').replace("import psutil\n", "import psutil\n    import requests\n")
    write(tmp_path, {"panel/pushed.py": posting})
    assert findings(tmp_path, "panel/pushed.py") == [(10, "OG201")]


#: The rows' state read against another column of the same row: a reminder is due while the cycle it was sent
#: for differs from the current one, and sending it moves the row out (``SET reminded_for = renews_on``).
_BY_COLUMN = REMIND.replace("WHERE s.reminded_on IS NULL AND", "WHERE s.reminded_for IS DISTINCT FROM s.renews_on AND") \
    .replace("SET reminded_on = now() WHERE id = :id", "SET reminded_for = renews_on WHERE id = :id")


def test_a_lease_given_back_over_rows_moved_out_of_a_column_to_column_state(tmp_path):
    assert _BY_COLUMN != REMIND
    write(tmp_path, {"subs/__init__.py": "", "subs/lease.py": LEASE, "subs/remind.py": _BY_COLUMN,
                     "subs/__main__.py": LOOP, "Dockerfile": DOCKERFILE})
    assert findings(tmp_path, "subs/__main__.py", codes=("OG201",)) == []


def test_a_column_to_column_state_that_the_work_never_moves_is_reported(tmp_path):
    unmoved = _BY_COLUMN.replace("SET reminded_for = renews_on WHERE id = :id", "SET last_seen = now() WHERE id = :id")
    write(tmp_path, {"subs/__init__.py": "", "subs/lease.py": LEASE, "subs/remind.py": unmoved,
                     "subs/__main__.py": LOOP, "Dockerfile": DOCKERFILE})
    assert findings(tmp_path, "subs/__main__.py", codes=("OG201",)) == [(8, "OG201")]
