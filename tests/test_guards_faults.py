"""onceguard.guards under faults, against real servers: late asks, clock skew, restarts, partitions,
stalls, locked tables, frozen servers, PgBouncer, configuration mistakes and daylight-saving days.

Servers: the PostgreSQL and Redis of ONCEGUARD_TEST_POSTGRES_URL / ONCEGUARD_TEST_REDIS_URL, PgBouncer in
transaction mode at ONCEGUARD_TEST_PGBOUNCER_URL (all started by .ci/run), and, where a test must stop,
freeze or restart a server, a private ``redis-server`` it starts itself. Partitions and frozen servers are
made with a TCP relay in this process whose forwarding can be paused while the sockets stay open.
"""
from __future__ import annotations

import asyncio
import datetime as dt
import logging
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from contextlib import contextmanager
from typing import Iterator, List
from zoneinfo import ZoneInfo

import pytest

from onceguard import guards
from onceguard.guards import BackendError, LeaseLost

ENV = {"redis": "ONCEGUARD_TEST_REDIS_URL", "postgres": "ONCEGUARD_TEST_POSTGRES_URL",
       "pgbouncer": "ONCEGUARD_TEST_PGBOUNCER_URL"}


def _url(name: str) -> str:
    url = os.environ.get(ENV[name])
    if not url:
        if os.environ.get("ONCEGUARD_REQUIRE_SERVICES") == "1":
            pytest.fail(f"{ENV[name]} is not set but ONCEGUARD_REQUIRE_SERVICES=1")
        pytest.skip(f"{ENV[name]} not set (no {name} server)")
    return url


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _key() -> str:
    return "fault." + uuid.uuid4().hex[:10]


def _table() -> str:
    return "og_fault_" + uuid.uuid4().hex[:12]


@pytest.fixture(autouse=True)
def _guards_off():
    guards.configure()
    yield
    guards.configure()


@pytest.fixture(params=("redis", "postgres"))
def backend(request):
    name = request.param
    url = _url(name)
    if name == "redis":
        guards.configure(redis=url, namespace=f"ogfault:{uuid.uuid4().hex[:8]}:")
    else:
        guards.configure(postgres=url, table=_table())
    return name


# ---------------------------------------------------------------------------------------------------------
# Helpers: a private Redis we may stop, freeze and restart; a relay we may pause


class PrivateRedis:
    def __init__(self, directory: str) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            if os.environ.get("ONCEGUARD_REQUIRE_SERVICES") == "1":
                pytest.fail("redis-server is not installed but ONCEGUARD_REQUIRE_SERVICES=1")
            pytest.skip("redis-server is not installed")
        self.binary = binary
        self.directory = directory
        self.port = _free_port()
        self.process: "subprocess.Popen[bytes] | None" = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self.directory], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import redis

        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        for _ in range(100):
            try:
                client.ping()
                return
            except redis.RedisError:
                time.sleep(0.05)
        raise RuntimeError("private redis-server did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
            self.process.wait()
            self.process = None

    def freeze(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)


@pytest.fixture
def private_redis(tmp_path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(str(tmp_path))
    yield server
    server.stop()


class Relay:
    """A TCP relay to ``target``; ``pause()`` stops forwarding while every socket stays open."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.flowing = threading.Event()
        self.flowing.set()
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                self.flowing.wait()
                sink.sendall(data)
        except OSError:
            pass

    def pause(self) -> None:
        self.flowing.clear()

    def resume(self) -> None:
        self.flowing.set()

    def close(self) -> None:
        self.closed = True
        self.flowing.set()
        self.listener.close()


@contextmanager
def relay_to(port: int) -> Iterator[Relay]:
    relay = Relay(port)
    try:
        yield relay
    finally:
        relay.close()


def _port_of(url: str) -> int:
    from urllib.parse import urlparse

    return urlparse(url).port or 5432


# ---------------------------------------------------------------------------------------------------------
# One winner per period, whatever the latency and the clocks


def test_an_ask_of_the_period_that_arrives_after_its_end_does_not_win_again(backend):
    period = 2
    time.sleep(period - time.time() % period + 0.02)  # just after a period starts
    first_ask = time.time()
    assert guards.claim_period("sweep", period, now=first_ask)
    period_end = first_ask // period * period + period
    time.sleep(max(0.0, period_end + 0.15 - time.time()))  # real time: into the next period
    late_clock = period_end - 0.3  # a replica whose clock is behind, or whose ask was slow
    assert guards.period_key("sweep", period, late_clock) == guards.period_key("sweep", period, first_ask)
    assert not guards.claim_period("sweep", period, now=late_clock)
    assert guards.claim_period("sweep", period)  # the new period is free


def test_fences_keep_growing_after_redis_restarts_without_persistence(private_redis):
    guards.configure(redis=private_redis.url)
    key = _key()
    before = guards.acquire(key, 30)
    other = guards.acquire(_key(), 30)
    assert before is not None and other is not None
    private_redis.stop()
    private_redis.start()
    after = guards.acquire(key, 30)
    assert after is not None, "the restarted server lost the lease, so the key is free again"
    assert after.fence > max(before.fence, other.fence)


def test_guards_keys_never_collide_with_a_users_key(backend):
    assert guards.claim_once("fence", 60)  # a user's key with the name the counter once had
    leases = [guards.acquire(name, 10) for name in ("other", "fence:x", "{fence}", "f:{other}")]
    assert all(lease is not None and lease.fence > 0 for lease in leases)
    assert not guards.claim_once("fence", 60)
    assert guards.acquire("fence", 10) is None


def test_long_keys_are_claimed_once_and_bad_keys_are_errors_at_the_call(backend):
    long_key = "report:" + "x" * 5000
    assert guards.claim_once(long_key, 60)
    assert not guards.claim_once(long_key, 60)
    assert guards.claim_once(long_key + "y", 60), "two long keys with one prefix are distinct"
    with pytest.raises(ValueError):
        guards.claim_once("bad\x00key", 60)
    with pytest.raises(TypeError):
        guards.claim_once(42, 60)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------------
# Knowing a lease is lost before anyone else can hold it


def test_a_partitioned_owner_knows_it_lost_the_lease_before_a_new_owner_gets_it():
    import redis as redis_py

    url = _url("redis")
    namespace = f"ogfault:{uuid.uuid4().hex[:8]}:"
    key = _key()
    ttl = 2.0
    with relay_to(_port_of(url)) as relay:
        guards.configure(redis=f"redis://127.0.0.1:{relay.port}/0", namespace=namespace, timeout=0.5)
        direct = redis_py.Redis.from_url(url)
        moments = {}

        def work(lease):
            time.sleep(0.3)
            relay.pause()
            moments["cut"] = time.monotonic()
            lease.lost.wait(3 * ttl)
            moments["lost"] = time.monotonic()
            # Another replica, reaching Redis directly, waits for the key to expire.
            while direct.exists(f"{namespace}c:{{{key}}}"):
                time.sleep(0.005)
            moments["free"] = time.monotonic()

        with pytest.raises(LeaseLost):
            guards.run_exclusive(key, ttl, work)
        relay.resume()
    assert "lost" in moments and moments["lost"] < moments["free"]


def test_check_fails_once_the_deadline_passed_even_if_nothing_noticed(backend):
    lease = guards.acquire(_key(), 0.3)  # no renewer: a stall longer than the ttl
    assert lease is not None
    lease.check()
    time.sleep(0.35)
    with pytest.raises(LeaseLost):
        lease.check()
    assert lease.is_lost


# ---------------------------------------------------------------------------------------------------------
# Calls that return within a bounded time


def test_a_locked_claims_table_means_a_skipped_tick_not_a_hang():
    import psycopg

    url = _url("postgres")
    table = _table()
    guards.configure(postgres=url, table=table)
    assert guards.claim_period(_key(), 60)  # creates the table
    with psycopg.connect(url) as locker:
        locker.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        started = time.monotonic()
        assert not guards.claim_period(_key(), 60)
        assert time.monotonic() - started < 4
        locker.rollback()
    assert guards.claim_period(_key(), 60)


def test_a_frozen_server_behind_a_pool_means_a_skipped_tick():
    psycopg_pool = pytest.importorskip("psycopg_pool")
    url = _url("postgres")
    with relay_to(_port_of(url)) as relay:
        relayed = url.replace(f":{_port_of(url)}/", f":{relay.port}/")
        pool = psycopg_pool.ConnectionPool(relayed, min_size=1, max_size=2, open=True)
        try:
            guards.configure(postgres=pool, table=_table(), timeout=1)
            assert guards.claim_period(_key(), 60)
            relay.pause()
            started = time.monotonic()
            assert not guards.claim_period(_key(), 60)
            assert time.monotonic() - started < 3
        finally:
            relay.resume()
            pool.close()


def test_an_app_made_redis_client_without_timeouts_cannot_hang_a_claim(private_redis):
    import redis as redis_py

    client = redis_py.Redis(port=private_redis.port)  # no socket timeouts
    guards.configure(redis=client, timeout=0.5)
    assert guards.claim_once(_key(), 60)
    private_redis.freeze()
    try:
        started = time.monotonic()
        assert not guards.claim_once(_key(), 60)
        assert time.monotonic() - started < 2
    finally:
        private_redis.thaw()


def test_a_claim_that_timed_out_does_not_hold_the_period_for_nobody(private_redis):
    guards.configure(redis=private_redis.url, timeout=0.5)
    assert guards.claim_once("warm-up", 60)
    private_redis.freeze()
    try:
        assert not guards.claim_period("billing.renew", 3600)  # the reply never comes in time
    finally:
        private_redis.thaw()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if guards.claim_period("billing.renew", 3600):
            break
        time.sleep(0.1)
    else:
        pytest.fail("the period stayed held by a claim its caller had given up on")


# ---------------------------------------------------------------------------------------------------------
# Poolers, event loops, housekeeping


def test_claims_through_pgbouncer_with_a_psycopg_pool_are_never_skipped(caplog):
    psycopg_pool = pytest.importorskip("psycopg_pool")
    url = _url("pgbouncer")
    caplog.set_level(logging.WARNING, logger="onceguard.guards")
    pool = psycopg_pool.ConnectionPool(url, min_size=2, max_size=4, open=True)
    try:
        guards.configure(postgres=pool, table=_table())
        results = [guards.claim_once(f"{_key()}:{n}", 60) for n in range(120)]
        leases = [guards.acquire(_key(), 5) for _ in range(20)]
    finally:
        pool.close()
    assert all(results) and all(lease is not None for lease in leases)
    assert not [r for r in caplog.records if "unreachable" in r.getMessage()]


def test_claims_through_pgbouncer_with_a_conninfo():
    guards.configure(postgres=_url("pgbouncer"), table=_table())
    key = _key()
    assert all(guards.claim_once(f"{key}:{n}", 60) for n in range(30))
    assert not guards.claim_once(f"{key}:0", 60)


def test_asyncio_run_per_job_does_not_leak_redis_connections(private_redis):
    import redis as redis_py

    guards.configure(redis=private_redis.url)
    for n in range(60):
        assert asyncio.run(guards.aclaim_once(f"{_key()}:{n}", 60))
    watcher = redis_py.Redis(port=private_redis.port)
    clients = watcher.client_list()
    assert len(clients) <= 3, f"{len(clients)} connections left open"


def test_the_asyncio_path_cleans_up_expired_claims(monkeypatch):
    import psycopg

    from onceguard.guards import _postgres

    url = _url("postgres")
    table = _table()
    guards.configure(postgres=url, table=table)
    assert guards.claim_once(_key(), 60)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"INSERT INTO {table} (key, token, fence, expires_at) "
                     "SELECT 'c:old' || n, 't', 0, now() - interval '2 hours' FROM generate_series(1, 300) n")
        indexes = conn.execute("SELECT indexdef FROM pg_indexes WHERE tablename = %s", (table,)).fetchall()
    assert any("expires_at" in row[0] for row in indexes)
    monkeypatch.setattr(_postgres, "_CLEANUP_CHANCE", 1.0)
    assert asyncio.run(guards.aclaim_once(_key(), 60))
    with psycopg.connect(url, autocommit=True) as conn:
        left = conn.execute(f"SELECT count(*) FROM {table} WHERE key LIKE 'c:old%%'").fetchone()[0]
    assert left == 0


# ---------------------------------------------------------------------------------------------------------
# Mistakes are errors at configure() or at the call, never an outage at every tick


def test_configuration_mistakes_raise_instead_of_skipping_every_tick():
    import redis as redis_py

    with pytest.raises(ValueError):
        guards.configure(redis="127.0.0.1:6379")
    with pytest.raises(TypeError):
        guards.configure(redis=object())
    with pytest.raises(TypeError):
        guards.configure(postgres=object())
    with pytest.raises(Exception):
        guards.configure(postgres="host=127.0.0.1 port=notaport = =")
    guards.configure(redis=redis_py.asyncio.Redis.from_url(_url("redis")))
    with pytest.raises(TypeError, match="asyncio"):
        guards.claim_period(_key(), 60)


def test_a_sync_pool_also_serves_the_asyncio_guards():
    psycopg_pool = pytest.importorskip("psycopg_pool")
    pool = psycopg_pool.ConnectionPool(_url("postgres"), min_size=1, max_size=2, open=True)
    try:
        guards.configure(postgres=pool, table=_table())
        key = _key()

        async def main():
            return await guards.aclaim_period(key, 60), await guards.aclaim_period(key, 60)

        assert asyncio.run(main()) == (True, False)
    finally:
        pool.close()


def test_without_a_backend_the_first_claim_warns_once_naming_configure(caplog):
    from onceguard.guards import _state

    _state._warned_unconfigured.clear()
    caplog.set_level(logging.WARNING, logger="onceguard.guards")
    assert guards.claim_period(_key(), 60) and guards.claim_once(_key(), 60)
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "configure(" in warnings[0].getMessage()


# ---------------------------------------------------------------------------------------------------------
# Periods that follow the schedule's calendar


def test_a_daily_local_job_runs_every_day_across_the_dst_change(backend):
    new_york = ZoneInfo("America/New_York")
    key = _key()
    ran: List[bool] = []
    for day in (6, 7, 8, 9, 10):  # DST starts on 2026-03-08
        fire = dt.datetime(2026, 3, day, 19, 30, tzinfo=new_york)
        ran.append(guards.claim_period(key, "day", now=fire, tz=new_york))
        assert not guards.claim_period(key, "day", now=fire + dt.timedelta(minutes=1), tz="America/New_York")
    assert ran == [True] * 5


def test_weeks_start_on_monday_and_months_on_the_first():
    utc = dt.timezone.utc
    thursday = dt.datetime(2026, 12, 3, 12, tzinfo=utc)
    monday = dt.datetime(2026, 11, 30, 0, tzinfo=utc)
    sunday = dt.datetime(2026, 12, 6, 23, 59, tzinfo=utc)
    assert guards.period_key("w", "week", thursday) == guards.period_key("w", "week", monday) \
        == guards.period_key("w", 7 * 86400, sunday)
    assert guards.period_key("w", "week", monday - dt.timedelta(seconds=1)) != guards.period_key("w", "week", monday)
    assert guards.period_key("m", "month", dt.datetime(2026, 12, 31, 23, tzinfo=utc)) == \
        guards.period_key("m", "month", dt.datetime(2026, 12, 1, tzinfo=utc))


# ---------------------------------------------------------------------------------------------------------
# The forms people reach for, and the last success


def test_the_decorator_runs_once_per_period_for_sync_and_async_functions(backend):
    calls: List[str] = []
    key = _key()

    @guards.claimed_period(key, "1h")
    def sweep(tag: str) -> str:
        calls.append(tag)
        return tag

    @guards.claimed_period(key + ".async", 3600)
    async def asweep(tag: str) -> str:
        calls.append(tag)
        return tag

    assert sweep("a") == "a" and sweep("b") is None
    assert asyncio.run(asweep("c")) == "c" and asyncio.run(asweep("d")) is None
    assert calls == ["a", "c"]
    assert sweep.__name__ == "sweep"
    assert guards.last_success(key) is not None
    with pytest.raises(ValueError):
        guards.claimed_period(key, "every tuesday")


def test_the_exclusive_context_manager_excludes_renews_and_records_success(backend):
    key = _key()
    before = time.time()
    with guards.exclusive(key, ttl=0.6) as lease:
        assert lease is not None
        with guards.exclusive(key, ttl=0.6) as second:
            assert second is None
        time.sleep(1.0)  # longer than the ttl: renewed meanwhile
        lease.check()
    when = guards.last_success(key)
    assert when is not None and when >= before - 5
    with guards.exclusive(key, ttl=5) as again:
        assert again is not None


def test_the_asyncio_exclusive_context_manager(backend):
    key = _key()

    async def main():
        async with guards.aexclusive(key, ttl=0.6) as lease:
            assert lease is not None
            async with guards.aexclusive(key, ttl=0.6) as second:
                assert second is None
            await asyncio.sleep(1.0)
            lease.check()
        return await guards.alast_success(key)

    assert asyncio.run(main()) is not None


def test_a_failed_run_records_no_success(backend):
    key = _key()
    with pytest.raises(RuntimeError):
        guards.run_once(key, 60, lambda: (_ for _ in ()).throw(RuntimeError("boom")))
    assert guards.last_success(key) is None
    assert guards.run_once(key, 60, lambda: None)
    assert guards.last_success(key) is not None


def test_last_success_without_a_backend_is_none_and_with_a_dead_one_an_error():
    assert guards.last_success("anything") is None
    guards.configure(redis=f"redis://127.0.0.1:{_free_port()}/0", timeout=1)
    with pytest.raises(BackendError):
        guards.last_success("anything")
