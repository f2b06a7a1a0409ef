"""OG501/OG502: what makes a key a lease (and not a cache, a cooldown or a counter), and which receivers are
clients when the project makes them (factories, wrapper classes, parameters filled by their callers)."""
from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from onceguard.config import Config
from onceguard.analysis.context import FileContext
from onceguard.engine.check import check_source
from onceguard.analysis.facts import ModuleFacts
from onceguard.knowledge import redis_clients as known
from onceguard.rules.redis_leases import redis_call

CODES = ("OG501", "OG502")


def found(source: str, path: str = "app/service.py", cross_file: bool = False):
    source = textwrap.dedent(source)
    return [d for d in check_source(source.encode(), path, Config(), cross_file=cross_file) if d.code in CODES]


def codes(source: str, path: str = "app/service.py", cross_file: bool = False):
    return sorted((d.line, d.code) for d in found(source, path, cross_file))


def write(root: Path, files: dict) -> None:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text), encoding="utf-8")


def check_file(path: Path, cross_file: bool = True):
    return sorted((d.line, d.code) for d in check_source(path.read_bytes(), str(path), Config(), cross_file=cross_file)
                  if d.code in CODES)


# -- caches, cooldowns and counters are not leases --------------------------------------------------------


def test_read_through_cache_filled_on_a_miss_and_invalidated_elsewhere_is_silent():
    assert codes("""
        from django.core.cache import cache

        TREE = "categories-tree"

        def tree(load):
            value = cache.get(TREE, "missing")
            if value == "missing":
                value = load()
                cache.set(TREE, value)
            return value

        def clear():
            cache.delete(TREE)
    """) == []


def test_read_through_cache_deleted_in_the_same_function_is_still_a_cache():
    # The SET stores the value handed back, not a marker: a cache refresh, not a lock.
    assert codes("""
        import redis
        r = redis.Redis()

        def refreshed(key, load):
            if r.exists(key):
                r.delete(key)
            value = load()
            r.set(key, value, ex=60)
            if value is None:
                r.delete(key)
            return value
    """) == []


def test_short_cooldown_named_with_a_lock_variable_is_a_throttle():
    assert codes("""
        from django_redis import get_redis_connection

        def write_back(ids, rows):
            rc = get_redis_connection("redis")
            lock_name = "_".join(str(i) for i in sorted(ids))
            if rc.exists(f"writes:{lock_name}"):
                return
            rc.set(f"writes:{lock_name}", "1", ex=10)
            rc.hset("availability", mapping=rows)
    """) == []


def test_nx_marker_deleted_by_a_reset_elsewhere_is_not_a_lock():
    assert codes("""
        from django.core.cache import cache

        class Budget:
            def __init__(self, key, attempts, window):
                self.key = f"budget:{key}"
                cache.add(self.key, attempts, window)

            def audit_once(self, timeout):
                return cache.add(f"{self.key}:audit", True, timeout)

            def reset(self):
                cache.delete(self.key)
                cache.delete(f"{self.key}:audit")
    """) == []


def test_variable_name_alone_does_not_make_a_plain_set_a_lock():
    assert codes("""
        import redis
        r = redis.Redis()

        def remember(user_id, payload):
            lock_key = f"profile:{user_id}"
            r.set(lock_key, payload)
    """) == []


# -- GET-then-SET locks --------------------------------------------------------------------------------------


def test_get_then_set_marker_then_delete_is_a_lock():
    assert codes("""
        from django.core.cache import cache

        def guarded(name, work):
            if cache.get(name) is not None:
                raise RuntimeError("busy")
            cache.set(name, True, timeout=300)
            result = work()
            cache.delete(name)
            return result
    """) == [(7, "OG501"), (9, "OG502")]


def test_two_deletes_of_one_lock_in_one_function_are_one_finding():
    assert codes("""
        from django.core.cache import cache

        def transition(entity_id, work):
            lock_key = f"fsm:{entity_id}:lock"
            if not cache.add(lock_key, "locked", timeout=5):
                return
            try:
                work()
                cache.delete(lock_key)
            except Exception:
                cache.delete(lock_key)
                raise
    """) == [(10, "OG502")]


# -- releases that compare the token --------------------------------------------------------------------------


def test_sync_compare_then_delete_is_clean_even_through_a_variable():
    assert codes("""
        import uuid
        from django.core.cache import cache

        def reserve(key, work):
            token = uuid.uuid4().hex
            if not cache.add(f"{key}:lock", token, timeout=30):
                return
            try:
                work()
            finally:
                holder = cache.get(f"{key}:lock")
                if holder != token:
                    return
                cache.delete(f"{key}:lock")
    """) == []


def test_awaited_compare_then_delete_on_a_wrapper_is_reported():
    [finding] = found("""
        import redis.asyncio as aioredis

        class KeyStore:
            def __init__(self, url):
                self.client = aioredis.from_url(url)

            async def async_set_cache(self, key, value, **kwargs):
                return await self.client.set(key, value, **kwargs)

            async def async_get_cache(self, key):
                return await self.client.get(key)

            async def async_delete_cache(self, key):
                return await self.client.delete(key)

        class Coordinator:
            def __init__(self, store: KeyStore | None, pod: str):
                self.store = store
                self.pod = pod

            @staticmethod
            def lock_key():
                return "probe_lock"

            async def acquire(self):
                key = self.lock_key()
                return await self.store.async_set_cache(key, self.pod, nx=True, ttl=60)

            async def release(self):
                key = self.lock_key()
                owner = await self.store.async_get_cache(key)
                if owner == self.pod:
                    await self.store.async_delete_cache(key)
    """)
    assert (finding.code, finding.line) == ("OG502", 34)
    assert "awaited" in finding.message


# -- clients the project makes -------------------------------------------------------------------------------


def test_any_parameter_filled_by_the_only_caller_and_a_base_class_property():
    assert codes("""
        from typing import Any
        import redis

        def coordination_client() -> "redis.Redis[Any] | None":
            return None

        class LockCommand:
            def __init__(self, name):
                self.name = name

            @property
            def lock_key(self):
                return f"lock:{self.name}"

        class Release(LockCommand):
            def run(self):
                if (client := coordination_client()) is not None:
                    self._drop(client)

            def _drop(self, client: Any):
                client.delete(self.lock_key)
    """) == [(22, "OG502")]


def test_any_parameter_whose_callers_pass_something_unknown_is_silent():
    assert codes("""
        from typing import Any

        class Release:
            def run(self, backend):
                self._drop(backend)

            def _drop(self, client: Any):
                client.delete("lock:report")
    """) == []


def test_subclass_of_flask_caching_behind_a_factory_is_a_client():
    assert codes("""
        from flask_caching import Cache

        class AppCache(Cache):
            pass

        cache = AppCache()

        class Scoped:
            def __init__(self, cache, scope):
                self.cache = cache
                self.scope = scope

            def get(self, key):
                return self.cache.get(f"{self.scope}/{key}")

            def set(self, key, value, timeout=None):
                self.cache.set(f"{self.scope}/{key}", value, timeout=timeout)

            def delete(self, key):
                self.cache.delete(f"{self.scope}/{key}")

        def scoped(scope):
            return Scoped(cache, scope)

        _locks = scoped("task-locks")

        def locked(name, work):
            if _locks.get(name):
                return
            _locks.set(name, True, 86400)
            try:
                work()
            finally:
                _locks.delete(name)
    """) == [(31, "OG501"), (35, "OG502")]


def test_class_with_get_set_delete_but_no_client_is_not_one():
    assert codes("""
        class Registry:
            def __init__(self):
                self.items = {}

            def get(self, key):
                return self.items.get(key)

            def set(self, key, value, timeout=None):
                self.items[key] = value

            def delete(self, key):
                self.items.pop(key, None)

        registry = Registry()

        def locked(name, work):
            if registry.get(name):
                return
            registry.set(name, True, 60)
            try:
                work()
            finally:
                registry.delete(name)
    """) == []


def test_redis_call_follows_a_factory_for_other_rules():
    source = textwrap.dedent("""
        import redis

        def get_redis_client():
            return redis.Redis.from_url("redis://redis")

        def bump():
            client = get_redis_client()
            client.get("hits")
    """)
    tree = ast.parse(source)
    facts = ModuleFacts(tree, FileContext("app/hits.py", Config()), source.splitlines())
    [call] = [c for c in facts.calls_named("get")]
    handle = redis_call(call, facts)
    assert handle is not None and handle.kind == known.REDIS


# -- across files (CLI) ----------------------------------------------------------------------------------------


_STORE = """
    import redis

    _connection = redis.Redis.from_url("redis://redis")

    class Store:
        def __init__(self, connection, prefix):
            self.connection = connection
            self.prefix = prefix

        def get(self, key):
            return self.connection.get(f"{self.prefix}:{key}")

        def set(self, key, value, ttl=None):
            self.connection.set(f"{self.prefix}:{key}", value, ex=ttl)

        def delete(self, key):
            self.connection.delete(f"{self.prefix}:{key}")

    def store(prefix):
        return Store(_connection, prefix)
"""

_JOBS = """
    from shop.store import store

    _running = store("running")

    def nightly(work):
        if _running.get("nightly"):
            return
        _running.set("nightly", 1, ttl=600)
        try:
            work()
        finally:
            _running.delete("nightly")
"""


def test_factory_in_another_module_is_followed_by_the_cli_only(tmp_path):
    write(tmp_path, {"shop/__init__.py": "", "shop/store.py": _STORE, "shop/jobs.py": _JOBS})
    jobs = tmp_path / "shop" / "jobs.py"
    assert check_file(jobs) == [(9, "OG501"), (13, "OG502")]
    assert check_file(jobs, cross_file=False) == []


_DJANGO_LOCK = """
    from django.core.cache import cache

    def close_period(work):
        if not cache.add("close-period:lock", 1, None):
            return
        try:
            work()
        finally:
            cache.delete("close-period:lock")
"""


def test_django_default_cache_without_caches_setting_is_per_process(tmp_path):
    write(tmp_path, {
        "billing/__init__.py": "",
        "billing/tasks.py": _DJANGO_LOCK,
        "billing/settings.py": 'INSTALLED_APPS = ["billing"]\n',
    })
    assert check_file(tmp_path / "billing" / "tasks.py") == []


def test_django_default_cache_with_a_local_memory_backend_is_per_process(tmp_path):
    write(tmp_path, {
        "billing/__init__.py": "",
        "billing/tasks.py": _DJANGO_LOCK,
        "billing/settings.py": """
            INSTALLED_APPS = ["billing"]
            CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
        """,
    })
    assert check_file(tmp_path / "billing" / "tasks.py") == []


def test_django_default_cache_configured_as_redis_is_shared(tmp_path):
    write(tmp_path, {
        "billing/__init__.py": "",
        "billing/tasks.py": _DJANGO_LOCK,
        "config/settings/base.py": """
            INSTALLED_APPS = ["billing"]
            CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
            if REDIS_URL:
                CACHES["default"] = {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": REDIS_URL}
        """,
    })
    assert check_file(tmp_path / "billing" / "tasks.py") == [(5, "OG501"), (10, "OG502")]


def test_django_settings_not_visible_keeps_the_default_cache_shared(tmp_path):
    write(tmp_path, {"billing/__init__.py": "", "billing/tasks.py": _DJANGO_LOCK})
    assert check_file(tmp_path / "billing" / "tasks.py") == [(5, "OG501"), (10, "OG502")]


def test_named_alias_behind_a_factory_stays_shared_without_caches_setting(tmp_path):
    write(tmp_path, {
        "fsm/__init__.py": "",
        "fsm/settings.py": 'INSTALLED_APPS = ["fsm"]\n',
        "fsm/state.py": """
            from django.conf import settings
            from django.core.cache import cache, caches

            _chosen = None

            def fsm_cache():
                global _chosen
                if _chosen is not None:
                    return _chosen
                alias = getattr(settings, "REDIS_CACHE_ALIAS", None)
                if alias:
                    _chosen = caches[alias]
                else:
                    _chosen = cache
                return _chosen

            def transition(entity_id, work):
                store = fsm_cache()
                key = f"fsm:{entity_id}:lock"
                if not store.add(key, "locked", timeout=5):
                    return
                try:
                    work()
                finally:
                    store.delete(key)
        """,
    })
    assert check_file(tmp_path / "fsm" / "state.py") == [(26, "OG502")]


# -- a release the holder's own deadline guards; keys that hold data; locks built only to look -----------


DEADLINE_RELEASE = """
    import time
    from django.core.cache import cache

    def run_once(job_id, owner, work):
        deadline = time.monotonic() + 600 - 3
        acquired = cache.add(f"job-lock:{job_id}", owner, 600)
        try:
            if acquired:
                work()
        finally:
            if {test}:
                cache.delete(f"job-lock:{job_id}")
"""


def test_release_only_before_the_holders_own_deadline_is_silent():
    assert codes(DEADLINE_RELEASE.replace("{test}", "time.monotonic() < deadline and acquired")) == []
    assert codes(DEADLINE_RELEASE.replace("{test}", "deadline > time.monotonic()")) == []


def test_release_after_the_deadline_or_on_another_condition_is_reported():
    assert codes(DEADLINE_RELEASE.replace("{test}", "time.monotonic() > deadline")) == [(13, "OG502")]
    assert codes(DEADLINE_RELEASE.replace("{test}", "acquired")) == [(13, "OG502")]


def test_key_that_accumulates_what_it_read_is_not_a_lease():
    assert codes("""
        from django.core.cache import cache

        def collect(team, page, fetch, later):
            key = f"seen:{team}"
            seen = cache.get(key, set())
            if page and not seen:
                return later()
            batch, page, limited = fetch(page)
            seen.update(batch)
            if limited:
                cache.set(key, seen, timeout=3600)
                return later(page)
            cache.delete(key)
    """) == []


def test_marker_written_after_an_absence_check_is_still_a_lease():
    assert codes("""
        from django.core.cache import cache

        def collect(team, work):
            key = f"seen:{team}"
            if cache.get(key):
                return
            cache.set(key, "busy", timeout=3600)
            work()
            cache.delete(key)
    """) == [(8, "OG501"), (10, "OG502")]


def test_lock_object_built_only_to_ask_locked_has_no_lifetime():
    assert codes("""
        from redis.asyncio import Redis
        from redis.asyncio.lock import Lock

        class Guard:
            def __init__(self, r: Redis):
                self.r = r

            async def busy(self, name):
                probe = Lock(self.r, name)
                return await probe.locked()

            async def also_busy(self, name):
                return await Lock(self.r, name).locked()

            async def hold(self, name):
                lock = Lock(self.r, name)
                await lock.acquire()
                return lock
    """) == [(17, "OG501")]


def test_key_prefix_from_a_constant_in_an_fstring_names_a_lock():
    assert codes("""
        import redis

        HOLD = "cart:lock:"
        r = redis.Redis()

        def give_back(cart_id):
            r.delete(f"{HOLD}{cart_id}")
    """) == [(8, "OG502")]


def test_release_through_the_classs_own_delete_helper_is_judged_where_the_helper_is_called():
    assert codes("""
        import redis

        class NightlyLease:
            def __init__(self, client: redis.Redis) -> None:
                self.client = client
                self.key = "lock:nightly"

            def _drop(self):
                self.client.delete(self.key)

            def release(self):
                self._drop()

            def abandon(self):
                self._drop()
    """) == [(13, "OG502"), (16, "OG502")]


def test_delete_helper_of_a_cache_key_stays_silent_at_its_callers():
    assert codes("""
        import redis

        class Totals:
            def __init__(self, client: redis.Redis) -> None:
                self.client = client
                self.key = "totals:today"

            def _drop(self):
                self.client.delete(self.key)

            def reset(self):
                self._drop()
    """) == []


# -- a client another module of the project builds ----------------------------------------------------------
_SHARED_CLIENT = """
    import os

    from redis import Redis

    conn = Redis.from_url(os.environ["REDIS_URL"])


    def connection():
        return conn
"""

_LEASE_ON_IMPORTED = """
    {imports}


    def rebuild(work):
        if not {client}.setnx("lease:rebuild", 1):
            return
        try:
            work()
        finally:
            {client}.delete("lease:rebuild")
"""


@pytest.mark.parametrize("imports, client", [
    ("from app.shared import conn as kv", "kv"),
    ("from .shared import conn", "conn"),
    ("import app.shared", "app.shared.conn"),
    ("from app import shared", "shared.conn"),
    ("from app import conn", "conn"),  # re-exported by the package
    ("from app.shared import connection\n    kv = connection()", "kv"),
])
def test_a_client_imported_from_another_module_is_followed_by_the_cli_only(tmp_path, imports, client):
    write(tmp_path, {"app/__init__.py": "from .shared import conn\n", "app/shared.py": _SHARED_CLIENT,
                     "app/jobs.py": _LEASE_ON_IMPORTED.format(imports=imports, client=client)})
    jobs = tmp_path / "app" / "jobs.py"
    offset = imports.count("\n")
    assert check_file(jobs) == [(6 + offset, "OG501"), (11 + offset, "OG502")]
    assert check_file(jobs, cross_file=False) == []


_SAFE_LEASE_ON_IMPORTED = """
    import secrets

    from app.shared import conn as kv

    _RELEASE = kv.register_script(
        "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0")


    def rebuild(work):
        token = secrets.token_hex(16)
        if not kv.set("lease:rebuild", token, nx=True, px=60_000):
            return
        try:
            work()
        finally:
            _RELEASE(keys=["lease:rebuild"], args=[token])


    def forget(kv, work):
        # `kv` here is whatever the caller passes: it hides the imported client.
        if not kv.setnx("lease:forget", 1):
            return
        kv.delete("lease:forget")
"""


def test_an_imported_client_used_safely_or_hidden_by_a_parameter_is_silent(tmp_path):
    write(tmp_path, {"app/__init__.py": "", "app/shared.py": _SHARED_CLIENT, "app/jobs.py": _SAFE_LEASE_ON_IMPORTED})
    assert check_file(tmp_path / "app" / "jobs.py") == []


def test_a_name_imported_from_a_module_that_binds_no_client_is_unknown(tmp_path):
    write(tmp_path, {"app/__init__.py": "", "app/shared.py": "conn = make_anything()\n",
                     "app/jobs.py": _LEASE_ON_IMPORTED.format(imports="from app.shared import conn", client="conn")})
    assert check_file(tmp_path / "app" / "jobs.py") == []
