"""Lock libraries by their real defaults: which wait (OG103 on a fixed key in job code), which were told not to
and had their answer dropped (OG106), and the spellings that keep them clean."""
from __future__ import annotations

import textwrap

import pytest
from samples import REDIS_LOCK_HELPERS

from onceguard.config import Config
from onceguard.engine.check import check_source


def codes(source: str, path: str = "jobs/nightly.py"):
    source = textwrap.dedent(source)
    return sorted((d.line, d.code) for d in check_source(source.encode(), path, Config())
                  if d.code in ("OG103", "OG106"))


def marked(source: str):
    found = []
    for number, line in enumerate(textwrap.dedent(source).splitlines(), 1):
        for code in ("OG103", "OG106"):
            if f"# {code}" in line:
                found.append((number, code))
    return found


HEAD = """\
import time
import redis
import redis_lock
from django_pglocks import advisory_lock
from pottery import Redlock
from sqlalchemy_dlock import create_sadlock
r = redis.Redis()
KEY = "nightly"
"""

WAITING = [
    "with r.lock(KEY, timeout=60):  # OG103\n        work()",
    "with r.lock(KEY, timeout=60, blocking_timeout=30):  # OG103\n        work()",
    "lock = r.lock(KEY, timeout=60)\n    lock.acquire()  # OG103\n    work()",
    "lock = redis.lock.Lock(r, KEY, timeout=60)\n    if lock.acquire():  # OG103\n        work()",
    "lock = redis_lock.Lock(r, KEY, expire=60, blocking=False)\n    lock.acquire()  # OG103\n    work()",
    "with redis_lock.Lock(r, KEY, expire=60):  # OG103\n        work()",
    "with Redlock(key=KEY, masters={r}):  # OG103\n        work()",
    "with advisory_lock(KEY):  # OG103\n        work()",
    "with create_sadlock(conn, KEY):  # OG103\n        work()",
    "while not r.set(KEY, 1, nx=True, ex=60):  # OG103\n        time.sleep(1)\n    work()",
    "while r.exists(KEY):  # OG103\n        time.sleep(1)\n    work()",
    "while True:\n        if r.set(KEY, 1, nx=True, ex=60):  # OG103\n            break\n        time.sleep(1)\n    work()",
]

NOT_WAITING = [
    "lock = r.lock(KEY, timeout=60, blocking=False)\n    if not lock.acquire():\n        return\n    work()",
    "lock = r.lock(KEY, timeout=60)\n    if not lock.acquire(blocking=False):\n        return\n    work()",
    "lock = r.lock(KEY, timeout=60)\n    if not lock.acquire(blocking_timeout=0):\n        return\n    work()",
    "with r.lock(KEY, timeout=60, blocking=False):\n        work()",
    "lock = redis_lock.Lock(r, KEY, expire=60)\n    if lock.acquire(blocking=False):\n        work()",
    "with Redlock(key=KEY, masters={r}, context_manager_blocking=False):\n        work()",
    "with advisory_lock(KEY, wait=False) as acquired:\n        if acquired:\n            work()",
    "lock = create_sadlock(conn, KEY)\n    if lock.acquire(block=False):\n        work()",
]


@pytest.mark.parametrize("body", WAITING)
def test_locks_that_wait_by_default_are_reported_where_they_are_taken(body):
    source = HEAD + "def job(work, conn):\n    " + body + "\n"
    assert codes(source) == marked(source) != []


@pytest.mark.parametrize("body", NOT_WAITING)
def test_locks_told_not_to_wait_whose_answer_is_read_are_silent(body):
    assert codes(HEAD + "def job(work, conn):\n    " + body + "\n") == []


def test_dropped_answers_of_locks_that_do_not_wait_are_og106():
    source = HEAD + """
def a(work):
    with advisory_lock(KEY, wait=False):  # OG106
        work()

def b(work):
    with advisory_lock(KEY, wait=False) as got:  # OG106
        work()

def c(work):
    lock = redis_lock.Lock(r, KEY, expire=60)
    lock.acquire(blocking=False)  # OG106
    work()
"""
    assert codes(source) == marked(source)


def test_per_entity_keys_generator_helpers_tests_and_migrations_are_silent():
    source = HEAD + """
from contextlib import contextmanager

def per_user(user_id, work):
    with r.lock(f"user:{user_id}", timeout=10):
        work()

@contextmanager
def exclusive():
    with r.lock(KEY, timeout=60):
        yield
"""
    assert codes(source) == []
    waiting = HEAD + "def job(work):\n    with r.lock(KEY, timeout=60):\n        work()\n"
    assert codes(waiting, path="tests/test_jobs.py") == []
    assert codes(waiting, path="migrations/0002_backfill.py") == []


def test_guard_run_of_asyncpg_lock_waits_its_turn():
    source = """
import asyncpg
import asyncpg_lock

guard = asyncpg_lock.AdvisoryLockGuard(connect=lambda: asyncpg.connect("postgresql://db/app"))

async def nightly(work):
    await guard.run(4242, work)  # OG103
"""
    assert codes(source) == marked(source)


# -- a lock made by a helper that returns the client's lock --------------------------------------------------
_COORDINATION = REDIS_LOCK_HELPERS

HELPER_WAITING = [
    'guard = named_lock("sitemap-rebuild")\n    guard.acquire()  # OG103\n    work()',
    'guard = named_lock("sitemap-rebuild", ttl=600)\n    if guard.acquire():  # OG103\n        work()',
]

HELPER_NOT_WAITING = [
    'guard = named_lock("sitemap-rebuild")\n    if not guard.acquire(blocking=False):\n        return\n    work()',
    'guard = named_lock(f"sitemap:{site_id}")\n    guard.acquire()\n    work()',  # one lock per site: serialises on purpose
]


def _project_codes(tmp_path, body: str):
    source = f"from app.coordination import named_lock\n\n\ndef rebuild(work, site_id):\n    {body}\n"
    (tmp_path / "app").mkdir(exist_ok=True)
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "app" / "coordination.py").write_text(_COORDINATION)
    jobs = tmp_path / "app" / "jobs.py"
    jobs.write_text(source)
    found = sorted((d.line, d.code) for d in check_source(source.encode(), str(jobs), Config(), cross_file=True)
                   if d.code in ("OG103", "OG106"))
    return found, marked(source)


@pytest.mark.parametrize("body", HELPER_WAITING)
def test_a_lock_from_a_helper_in_another_module_waits_as_the_client_lock_it_returns(tmp_path, body):
    found, expected = _project_codes(tmp_path, body)
    assert expected and found == expected


@pytest.mark.parametrize("body", HELPER_NOT_WAITING)
def test_a_lock_from_a_helper_told_not_to_wait_or_on_a_per_entity_key_is_silent(tmp_path, body):
    found, expected = _project_codes(tmp_path, body)
    assert found == expected == []


def test_a_helper_that_locks_on_the_client_its_caller_passes():
    source = """
import redis

r = redis.Redis()


def make_lock(client, name):
    return client.lock(name, timeout=60)


def nightly(work):
    lock = make_lock(r, "nightly")
    lock.acquire()  # OG103
    work()


def per_user(work, user_id):
    lock = make_lock(r, f"user:{user_id}")
    lock.acquire()
    work()
"""
    assert codes(source) == marked(source)


def test_an_f_string_of_fixed_parts_is_a_job_wide_key():
    source = """
import redis

r = redis.Redis()
PREFIX = "jobs"


def nightly(work):
    with r.lock(f"{PREFIX}:nightly", timeout=60):  # OG103
        work()
"""
    assert codes(source) == marked(source)
