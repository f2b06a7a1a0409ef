"""onceguard.guards against real Redis and PostgreSQL servers: no mocks.

The servers come from the environment: ONCEGUARD_TEST_REDIS_URL and ONCEGUARD_TEST_POSTGRES_URL
(.ci/run installs and starts both). Without them these tests skip, unless ONCEGUARD_REQUIRE_SERVICES=1
(set by .ci/run), which makes a missing server a failure.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from onceguard import guards
from onceguard.guards import Lease, LeaseLost

ROOT = Path(__file__).resolve().parents[1]
BACKENDS = ("redis", "postgres")
ENV = {"redis": "ONCEGUARD_TEST_REDIS_URL", "postgres": "ONCEGUARD_TEST_POSTGRES_URL"}


def _url(name: str) -> str:
    url = os.environ.get(ENV[name])
    if not url:
        if os.environ.get("ONCEGUARD_REQUIRE_SERVICES") == "1":
            pytest.fail(f"{ENV[name]} is not set but ONCEGUARD_REQUIRE_SERVICES=1")
        pytest.skip(f"{ENV[name]} not set (no {name} server)")
    return url


def _table() -> str:
    # A fresh table per test: the guards create it on first use, also when processes race to.
    return "og_test_" + uuid.uuid4().hex[:12]


@pytest.fixture(params=BACKENDS)
def backend(request):
    """configure() keyword arguments for one real backend; the guards are switched off afterwards."""
    name = request.param
    url = _url(name)
    settings = {"redis": url, "namespace": f"ogtest:{uuid.uuid4().hex[:8]}:"} if name == "redis" else \
        {"postgres": url, "table": _table()}
    guards.configure(**settings)
    yield settings
    guards.configure()


@pytest.fixture(autouse=True)
def _guards_off():
    guards.configure()
    yield
    guards.configure()


def _key() -> str:
    return "job." + uuid.uuid4().hex[:10]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---------------------------------------------------------------------------------------------------------
# Several processes racing (each a fresh interpreter, as replicas are)

_RACER = textwrap.dedent("""
    import json, random, sys, time
    from onceguard import guards

    settings, mode, key, start_at, count = json.loads(sys.argv[1])
    guards.configure(**settings)
    while time.time() < start_at:  # every process leaves this line within a few milliseconds
        pass
    wins = []
    for period in range(count):
        # Each replica wakes at its own moment inside the period; the key is the same all the same.
        now = 1_800_000_000 + period * 60 + random.randrange(50)
        if mode == "claim_period":
            won = guards.claim_period(key, 60, now=now)
        elif mode == "claim_once":
            won = guards.claim_once(f"{key}:{period}", 30)
        else:
            won = guards.run_once(key, 60, lambda: None, now=now)
        wins.append(won)
    print(json.dumps(wins))
""")


def _race(tmp_path: Path, settings: dict, mode: str, processes: int = 5, periods: int = 8) -> list:
    script = tmp_path / "racer.py"
    script.write_text(_RACER)
    key = _key()
    start_at = time.time() + 3.0  # time for every interpreter to start and import
    argument = json.dumps([settings, mode, key, start_at, periods])
    racers = [subprocess.Popen([sys.executable, str(script), argument], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True) for _ in range(processes)]
    results = []
    for racer in racers:
        out, err = racer.communicate(timeout=120)
        assert racer.returncode == 0, err
        results.append(json.loads(out))
    return results


@pytest.mark.parametrize("mode", ["claim_period", "claim_once", "run_once"])
def test_racing_processes_exactly_one_winner_per_period(backend, tmp_path, mode):
    results = _race(tmp_path, backend, mode)
    winners = Counter()
    for wins in results:
        for period, won in enumerate(wins):
            winners[period] += bool(won)
    assert dict(winners) == {period: 1 for period in range(8)}, results


# ---------------------------------------------------------------------------------------------------------
# Claims in one process


def test_claim_period_first_caller_wins_and_next_period_is_free(backend):
    key = _key()
    base = 1_800_000_000
    assert guards.claim_period(key, 300, now=base + 1)
    assert not guards.claim_period(key, 300, now=base + 299)  # a late replica, same period
    assert guards.claim_period(key, 300, now=base + 300)  # the next period


def test_claim_once_expires_after_ttl(backend):
    key = _key()
    assert guards.claim_once(key, 0.5)
    assert not guards.claim_once(key, 0.5)
    time.sleep(0.7)
    assert guards.claim_once(key, 0.5)


def test_run_once_keeps_the_key_after_success_and_frees_it_after_failure(backend):
    key, calls = _key(), []
    assert guards.run_once(key, 3600, lambda: calls.append("ran"))
    assert not guards.run_once(key, 3600, lambda: calls.append("again"))
    assert calls == ["ran"]

    other = _key()

    def fails():
        raise RuntimeError("upstream down")

    with pytest.raises(RuntimeError):
        guards.run_once(other, 3600, fails)
    assert guards.run_once(other, 3600, lambda: calls.append("retried"))
    assert calls == ["ran", "retried"]


def test_async_claims(backend):
    key = _key()

    async def main():
        first = await guards.aclaim_period(key, 60)
        second = await guards.aclaim_period(key, 60)
        once = await guards.aclaim_once(key + ":event", 60)
        again = await guards.aclaim_once(key + ":event", 60)
        ran = []

        async def job():
            ran.append(1)

        run_first = await guards.arun_once(key + ":run", 60, job)
        run_second = await guards.arun_once(key + ":run", 60, job)
        return first, second, once, again, run_first, run_second, ran

    assert asyncio.run(main()) == (True, False, True, False, True, False, [1])


def test_fencing_tokens_grow_with_each_acquisition(backend):
    key = _key()
    first = guards.acquire(key, 5)
    assert first is not None and first.release()
    second = guards.acquire(key, 5)
    assert second is not None
    assert second.fence > first.fence > 0
    assert second.release()


def test_release_and_renewal_by_a_non_owner_are_refused(backend):
    key = _key()
    owner = guards.acquire(key, 5)
    assert owner is not None
    impostor = Lease(key, "not-the-owner", 0, 5000, guards._backend)
    assert not impostor.release()
    assert not impostor.renew()
    assert guards.acquire(key, 5) is None  # still held by its owner
    assert owner.renew()
    assert owner.release()
    assert not owner.release()  # already gone
    assert guards.acquire(key, 5) is not None


def test_a_lease_that_expired_and_was_taken_over_is_not_released_by_its_old_owner(backend):
    key = _key()
    old = guards.acquire(key, 0.3)
    assert old is not None
    time.sleep(0.5)
    new = guards.acquire(key, 5)
    assert new is not None
    assert not old.release()
    assert guards.acquire(key, 5) is None


# ---------------------------------------------------------------------------------------------------------
# Exclusive leases: lost → cancelled; crashed → expired


def _take_over(key: str, lease: Lease) -> Lease:
    """What another replica does once the lease expired during a pause: the key is gone, then taken."""
    guards._backend.release(key, lease.token)
    thief = guards.acquire(key, 30)
    assert thief is not None
    return thief


def test_run_exclusive_renews_a_lease_that_outlives_its_ttl(backend):
    key, seen = _key(), []

    def work(lease):
        time.sleep(1.2)  # four times the ttl: renewals every 0.1 s keep it
        seen.append(lease.is_lost)
        assert guards.acquire(key, 1) is None

    assert guards.run_exclusive(key, 0.3, work)
    assert seen == [False]
    assert guards.acquire(key, 1) is not None  # released at the end


def test_run_exclusive_skips_when_another_owner_holds_the_key(backend):
    key, calls = _key(), []
    holder = guards.acquire(key, 5)
    assert holder is not None
    assert not guards.run_exclusive(key, 5, lambda lease: calls.append(1))
    assert calls == []


def test_lost_lease_sets_the_flag_for_thread_work_and_raises(backend):
    key, thieves, noticed = _key(), [], []

    def work(lease):
        thieves.append(_take_over(key, lease))
        noticed.append(lease.lost.wait(timeout=5))
        with pytest.raises(LeaseLost):
            lease.check()

    with pytest.raises(LeaseLost):
        guards.run_exclusive(key, 0.6, work)
    assert noticed == [True]
    # The old owner did not delete the new owner's key on the way out.
    assert guards.acquire(key, 1) is None
    assert thieves[0].release()


def test_lost_lease_cancels_asyncio_work(backend):
    key = _key()
    events = []

    async def work(lease):
        await asyncio.to_thread(_take_over, key, lease)
        try:
            await asyncio.sleep(30)
            events.append("finished")
        except asyncio.CancelledError:
            events.append("cancelled")
            raise

    async def main():
        started = time.monotonic()
        with pytest.raises(LeaseLost):
            await guards.arun_exclusive(key, 0.6, work)
        return time.monotonic() - started

    elapsed = asyncio.run(main())
    assert events == ["cancelled"]
    assert elapsed < 5


def test_asyncio_exclusive_runs_and_releases(backend):
    key = _key()

    async def work(lease):
        await asyncio.sleep(0.5)
        return lease.fence

    async def main():
        return await guards.arun_exclusive(key, 0.3, work), await guards.aacquire(key, 1)

    ran, after = asyncio.run(main())
    assert ran is True and after is not None


_HOLDER = textwrap.dedent("""
    import json, sys, time
    from onceguard import guards

    settings, key = json.loads(sys.argv[1])
    guards.configure(**settings)

    def work(lease):
        print("held", flush=True)
        time.sleep(60)

    guards.run_exclusive(key, 1.0, work)
""")


def test_crashed_owner_lease_expires(backend, tmp_path):
    script = tmp_path / "holder.py"
    script.write_text(_HOLDER)
    key = _key()
    holder = subprocess.Popen([sys.executable, str(script), json.dumps([backend, key])],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held", holder.stderr.read()
        time.sleep(1.5)  # longer than the ttl: only renewals keep it now
        assert guards.acquire(key, 1) is None
        holder.send_signal(signal.SIGKILL)  # no finally, no release: a crash
        holder.wait(timeout=10)
        killed_at = time.monotonic()
        deadline = killed_at + 5
        lease = None
        while lease is None and time.monotonic() < deadline:
            lease = guards.acquire(key, 1)
            time.sleep(0.05)
        assert lease is not None, "a crashed owner's lease never expired"
        assert time.monotonic() - killed_at < 2.5
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


# ---------------------------------------------------------------------------------------------------------
# No backend, unreachable backend, logging


def test_without_a_backend_every_claim_succeeds():
    key, calls = _key(), []
    assert guards.claim_period(key, 60) and guards.claim_period(key, 60)
    assert guards.claim_once(key, 60) and guards.claim_once(key, 60)
    assert guards.run_once(key, 60, lambda: calls.append(1)) and guards.run_once(key, 60, lambda: calls.append(1))
    assert guards.run_exclusive(key, 1, lambda lease: calls.append(lease.fence))
    assert asyncio.run(guards.aclaim_period(key, 60))
    assert calls == [1, 1, 0]


@pytest.mark.parametrize("name", BACKENDS)
def test_unreachable_backend_skips_every_claim(name, caplog):
    port = _free_port()  # nothing listens there
    if name == "redis":
        guards.configure(redis=f"redis://127.0.0.1:{port}/0")
    else:
        guards.configure(postgres=f"postgresql://postgres@127.0.0.1:{port}/postgres")
    calls = []
    caplog.set_level(logging.DEBUG, logger="onceguard.guards")
    started = time.monotonic()
    assert not guards.claim_period("job.sweep", 60)
    assert not guards.claim_once("job.event", 60)
    assert not guards.run_once("job.backup", 60, lambda: calls.append(1))
    assert not guards.run_exclusive("job.reindex", 5, lambda lease: calls.append(1))
    assert not asyncio.run(guards.aclaim_period("job.sweep", 60))
    assert calls == []
    assert time.monotonic() - started < 30
    assert any("unreachable" in record.getMessage() for record in caplog.records)


def test_a_lost_claim_logs_at_debug_only(backend, caplog):
    key = _key()
    caplog.set_level(logging.DEBUG, logger="onceguard.guards")
    assert guards.claim_period(key, 60)
    assert not guards.claim_period(key, 60)
    records = [r for r in caplog.records if r.name == "onceguard.guards"]
    assert records and all(r.levelno == logging.DEBUG for r in records)
    assert "another replica" in records[-1].getMessage()


# ---------------------------------------------------------------------------------------------------------
# Keys and configuration


def test_period_key_is_aligned_to_the_epoch():
    assert guards.period_key("billing.renew", 300, now=1_800_000_123) == "billing.renew:2027-01-15T08:00:00Z"
    assert guards.period_key("b", 300, now=1_800_000_000) == guards.period_key("b", 300, now=1_800_000_299.9)
    assert guards.period_key("b", 300, now=1_800_000_000) != guards.period_key("b", 300, now=1_800_000_300)
    assert guards.period_key("t", 0.5, now=1_800_000_000.7) == "t:2027-01-15T08:00:00.500Z"


def test_period_key_refuses_a_naive_datetime_and_bad_periods():
    import datetime as dt

    with pytest.raises(ValueError):
        guards.period_key("b", 60, now=dt.datetime(2027, 1, 1))
    aware = dt.datetime(2027, 1, 1, 0, 0, 30, tzinfo=dt.timezone.utc)
    assert guards.period_key("b", dt.timedelta(minutes=1), now=aware) == "b:2027-01-01T00:00:00Z"
    with pytest.raises(ValueError):
        guards.claim_period("b", 0)
    with pytest.raises(TypeError):
        guards.claim_period("b", ["5m"])
    with pytest.raises(ValueError):
        guards.claim_period("b", "5 fortnights")
    assert guards.period_key("b", "5m", now=aware) == guards.period_key("b", 300, now=aware)


def test_configure_takes_one_backend():
    with pytest.raises(ValueError):
        guards.configure(redis="redis://127.0.0.1:1/0", postgres="postgresql://127.0.0.1:1/x")
    with pytest.raises(ValueError):
        guards.configure(postgres="postgresql://127.0.0.1:1/x", table="Robert'); DROP TABLE x;--")


def test_sync_redis_client_also_serves_the_asyncio_guards():
    import redis

    client = redis.Redis.from_url(_url("redis"))
    guards.configure(redis=client, namespace=f"ogtest:{uuid.uuid4().hex[:8]}:")
    key = _key()

    async def main():
        return await guards.aclaim_period(key, 60), await guards.aclaim_period(key, 60)

    assert asyncio.run(main()) == (True, False)
    assert not guards.claim_period(key, 60)


def test_postgres_schema_matches_what_the_guards_create():
    import psycopg

    table = _table()
    with psycopg.connect(_url("postgres"), autocommit=True) as conn:
        conn.execute(guards.postgres_schema(table))
        guards.configure(postgres=_url("postgres"), table=table)
        assert guards.claim_period(_key(), 60)
        count = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    assert count == 1


def test_importing_the_linter_never_imports_the_guards():
    code = ("import sys, onceguard, onceguard.surfaces.cli, onceguard.engine.check, onceguard.surfaces.flake8_plugin, onceguard.surfaces.lsp\n"
            "from onceguard.engine.check import check_source\n"
            "from onceguard.config import Config\n"
            "bad = [m for m in ('onceguard.guards', 'redis', 'psycopg') if m in sys.modules]\n"
            "print(','.join(bad))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
