"""OG606-OG608 (process-local state): the shapes the rule docs cannot show (several files, settings in
another module) and the lookalikes that must stay silent."""
from __future__ import annotations

from onceguard.rules.registry import rule_classes
from onceguard.testing import findings_in_written_file, write_source as write


def found(tmp_path, path: str, source: str, code: str, cross_file: bool = False):
    return findings_in_written_file(tmp_path, path, source, code, cross_file)


# -- OG608 ------------------------------------------------------------------------------------------------
QUOTA = """
    class UploadQuota:
        def __init__(self, per_day: int) -> None:
            self.per_day = per_day
            self._used = {}

        def spend(self, tenant: str) -> None:
            if self._used.get(tenant, 0) >= self.per_day:
                raise PermissionError(tenant)
            self._used[tenant] = self._used.get(tenant, 0) + 1
"""


def test_instance_made_at_module_level_of_another_module_is_seen_by_the_cli_only(tmp_path):
    write(tmp_path, "svc/__init__.py", "")
    write(tmp_path, "svc/api.py", """
        from svc.quota import UploadQuota

        quota = UploadQuota(per_day=100)


        def upload(request, tenant):
            quota.spend(tenant)
    """)
    cli = found(tmp_path, "svc/quota.py", QUOTA, "OG608", cross_file=True)
    assert [d.line for d in cli] == [5]
    assert any("module level of `svc/api.py`" in r.message for r in cli[0].related)
    assert "N copies" in cli[0].message and "INCR" in cli[0].suggestion
    assert found(tmp_path, "svc/quota.py", QUOTA, "OG608") == []  # flake8: the instance is not in view


def test_state_handed_out_through_a_chain_of_methods_is_still_the_state(tmp_path):
    # ``_counts`` returns the state through ``_store``, which alone spells it: the quota read and written
    # through the chain is the same per-process quota as one spelled directly.
    source = """
        class UploadQuota:
            def __init__(self, per_day: int) -> None:
                self.per_day = per_day
                self._used = {}

            def _store(self):
                return self._used

            def _counts(self):
                return self._store()

            def spend(self, tenant: str) -> None:
                used = self._counts()
                if used.get(tenant, 0) >= self.per_day:
                    raise PermissionError(tenant)
                used[tenant] = used.get(tenant, 0) + 1


        quota = UploadQuota(per_day=100)
    """
    assert [d.line for d in found(tmp_path, "svc/quota.py", source, "OG608")] == [5]


def test_an_instance_made_per_call_is_left_alone(tmp_path):
    write(tmp_path, "svc/__init__.py", "")
    write(tmp_path, "svc/api.py", """
        from svc.quota import UploadQuota


        def upload(request, tenant):
            UploadQuota(per_day=100).spend(tenant)
    """)
    assert found(tmp_path, "svc/quota.py", QUOTA, "OG608", cross_file=True) == []


def test_a_gauge_of_work_in_flight_is_per_process(tmp_path):
    source = """
        from fastapi import FastAPI, HTTPException

        app = FastAPI()
        _active = {}


        @app.post("/encode/{user}")
        async def encode(user: str) -> None:
            if _active.get(user, 0) >= 2:
                raise HTTPException(status_code=429)
            _active[user] = _active.get(user, 0) + 1
            try:
                await run_encoder(user)
            finally:
                _active[user] -= 1
    """
    assert found(tmp_path, "svc/encode.py", source, "OG608") == []
    # The same gauge taken down through a local the function computes first.
    through_local = source.replace("_active[user] -= 1",
                                   "left = _active.get(user, 0) - 1\n                _active[user] = left")
    assert through_local != source
    assert found(tmp_path, "svc/encode_local.py", through_local, "OG608") == []


RENDERERS = """
    from django.http import Http404, HttpRequest, HttpResponse


    class Renderers:
        def __init__(self):
            self._by_kind = {}

        def register(self, kind, func=None):
            if func is not None:
                self._by_kind[kind] = func
                return func
            return lambda given: self.register(kind, given)

        def render(self, request, kind, item):
            if kind not in self._by_kind:
                raise Http404(kind)
            return self._by_kind[kind](request, item)


    renderers = Renderers()


    @renderers.register("badge")
    def badge(request: HttpRequest, item: str) -> HttpResponse:
        return HttpResponse(f"<b>{item}</b>")
"""


def test_a_registry_filled_by_decorators_at_import_is_the_same_in_every_process(tmp_path):
    # The method that writes runs as a decorator of module-level defs (at import), also of one shaped like a
    # view, and a view only reads: every process fills the same entries.  Written from a view, it is a
    # registry the replicas do not share.
    reader = """

    def render_view(request: HttpRequest, kind: str, item: str) -> HttpResponse:
        return renderers.render(request, kind, item)
    """
    assert found(tmp_path, "svc/render.py", RENDERERS + reader, "OG608") == []
    writer = """

    def add_renderer_view(request: HttpRequest, kind: str) -> HttpResponse:
        renderers.register(kind, lambda request, item: HttpResponse(item))
        return HttpResponse("added")
    """
    assert [d.line for d in found(tmp_path, "svc/render_view.py", RENDERERS + reader + writer, "OG608")] == [7]


def test_a_watermark_stamped_elsewhere_is_not_a_skip(tmp_path):
    """Idle eviction: the time is stamped on use and read by a sweep that removes the entry."""
    source = """
        import time

        _last_used = {}


        def touch(key):
            _last_used[key] = time.monotonic()


        def sweep(ttl):
            for key in list(_last_used):
                if time.monotonic() - _last_used[key] < ttl:
                    continue
                close_session(key)
    """
    assert found(tmp_path, "svc/sessions.py", source, "OG608") == []


def test_a_seen_marker_outside_request_and_job_code_is_left_alone(tmp_path):
    source = """
        import logging

        _configured = set()


        def build_logger(name):
            if name in _configured:
                return logging.getLogger(name)
            _configured.add(name)
            logger = logging.getLogger(name)
            logger.addHandler(logging.StreamHandler())
            return logger
    """
    assert found(tmp_path, "svc/logs.py", source, "OG608") == []


# A "sent" marker kept by a helper module whose only callers are in other modules: the effect (a push through
# another module's client) and the request that runs it both live elsewhere.
PUSH_ONCE = """
    from svc import push

    _pushed: set[str] = set()


    def push_once(order_id: str, device: str) -> bool:
        key = f"{order_id}:{device}"
        if key in _pushed:
            return False
        push.send(device, f"order {order_id} is ready")
        _pushed.add(key)
        return True
"""
PUSH_CLIENT = """
    import httpx

    _client = httpx.Client(base_url="https://push.example")


    def send(device: str, text: str) -> None:
        _client.post("/messages", json={"to": device, "text": text}).raise_for_status()
"""


def test_a_seen_marker_in_a_helper_run_by_another_modules_route_is_found_by_the_cli(tmp_path):
    write(tmp_path, "svc/__init__.py", "")
    write(tmp_path, "svc/push.py", PUSH_CLIENT)
    write(tmp_path, "svc/orders.py", """
        from fastapi import APIRouter

        from .notify import push_once

        router = APIRouter()


        def _announce(order_id: str, devices: list[str]) -> int:
            return sum(1 for device in devices if push_once(order_id, device))


        @router.post("/orders/{order_id}/ready")
        def ready(order_id: str, devices: list[str]) -> dict:
            return {"pushed": _announce(order_id, devices)}
    """)
    cli = found(tmp_path, "svc/notify.py", PUSH_ONCE, "OG608", cross_file=True)
    assert [d.line for d in cli] == [4]
    assert any(r.line == 9 and "decides" in r.message for r in cli[0].related)
    assert any(r.path.endswith("orders.py") and "ready()" in r.message for r in cli[0].related)
    assert found(tmp_path, "svc/notify.py", PUSH_ONCE, "OG608") == []  # flake8: no caller in view


def test_a_seen_marker_on_an_instance_another_modules_job_calls_is_found_by_the_cli(tmp_path):
    # The module-level instance is imported by the job's module, which spells the call by the instance's
    # name, not by its class.
    write(tmp_path, "svc/__init__.py", "")
    write(tmp_path, "svc/push.py", PUSH_CLIENT)
    write(tmp_path, "svc/tasks.py", """
        from celery import shared_task

        from .notify import pusher


        @shared_task
        def order_ready(order_id: str, device: str) -> None:
            pusher.push_once(order_id, device)
    """)
    source = """
        from svc import push


        class Pusher:
            def __init__(self) -> None:
                self._pushed = set()

            def push_once(self, order_id: str, device: str) -> None:
                if (order_id, device) in self._pushed:
                    return
                push.send(device, f"order {order_id} is ready")
                self._pushed.add((order_id, device))


        pusher = Pusher()
    """
    cli = found(tmp_path, "svc/notify.py", source, "OG608", cross_file=True)
    assert [d.line for d in cli] == [7]
    assert any(r.path.endswith("tasks.py") and "order_ready()" in r.message for r in cli[0].related)


def test_a_seen_marker_in_a_helper_run_only_at_start_up_or_by_a_script_is_left_alone(tmp_path):
    # Once per process as it starts, or by a person: no request or job of a replica runs it again.
    write(tmp_path, "svc/__init__.py", "")
    write(tmp_path, "svc/push.py", PUSH_CLIENT)
    write(tmp_path, "svc/main.py", """
        from contextlib import asynccontextmanager

        from fastapi import FastAPI

        from .notify import push_once


        @asynccontextmanager
        async def lifespan(app):
            push_once("boot", "ops-pager")
            yield


        app = FastAPI(lifespan=lifespan)
    """)
    write(tmp_path, "scripts/announce.py", """
        import sys

        from svc.notify import push_once


        def main() -> None:
            push_once(sys.argv[1], sys.argv[2])


        if __name__ == "__main__":
            main()
    """)
    assert found(tmp_path, "svc/notify.py", PUSH_ONCE, "OG608", cross_file=True) == []


def test_a_seen_marker_on_a_new_object_each_request_builds_is_left_alone(tmp_path):
    # The route makes a new batch, whose constructor fills its own set: the de-duplication is meant to last
    # as long as that batch. The module-level default batch is never run by a request.
    write(tmp_path, "svc/__init__.py", "")
    write(tmp_path, "svc/push.py", PUSH_CLIENT)
    write(tmp_path, "svc/api.py", """
        from fastapi import FastAPI

        from .batch import Batch

        app = FastAPI()


        @app.post("/orders/{order_id}/ready")
        def ready(order_id: str, devices: list[str]) -> dict:
            Batch(order_id, devices)
            return {"ok": True}
    """)
    source = """
        from svc import push


        class Batch:
            def __init__(self, order_id: str, devices: list[str]) -> None:
                self._pushed = set()
                for device in devices:
                    self.push_once(order_id, device)

            def push_once(self, order_id: str, device: str) -> None:
                if device in self._pushed:
                    return
                push.send(device, f"order {order_id} is ready")
                self._pushed.add(device)


        EMPTY = Batch("", [])
    """
    assert found(tmp_path, "svc/batch.py", source, "OG608", cross_file=True) == []


def test_a_local_copy_read_from_the_state_is_not_a_counter(tmp_path):
    source = """
        from flask import Flask

        app = Flask(__name__)
        PATHS = {"video": "/videos/%d"}


        @app.route("/media/<kind>/<int:item>")
        def media(kind, item):
            if kind not in PATHS:
                return "", 404
            path = PATHS[kind]
            path %= item
            return path
    """
    assert found(tmp_path, "svc/media.py", source, "OG608") == []


# -- OG607 ------------------------------------------------------------------------------------------------
VIEW = """
    from django.core.cache import cache
    from django.http import HttpResponse


    def resend(request, order_id):
        if not cache.add(f"resend:{order_id}", 1, 60):
            return HttpResponse(status=409)
        return HttpResponse("ok")
"""


def test_django_cache_add_with_locmem_in_settings(tmp_path):
    write(tmp_path, "site/__init__.py", "")
    write(tmp_path, "shop/__init__.py", "")
    write(tmp_path, "site/settings.py", """
        INSTALLED_APPS = ["shop"]
        CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    """)
    cli = found(tmp_path, "shop/views.py", VIEW, "OG607", cross_file=True)
    assert [d.line for d in cli] == [7]
    assert "LocMemCache" in cli[0].message and "RedisCache" in cli[0].suggestion
    assert found(tmp_path, "shop/views.py", VIEW, "OG607") == []  # flake8 cannot see the settings


def test_django_cache_add_on_a_shared_backend_is_a_real_lock(tmp_path):
    write(tmp_path, "site/__init__.py", "")
    write(tmp_path, "shop/__init__.py", "")
    write(tmp_path, "site/settings.py", """
        INSTALLED_APPS = ["shop"]
        CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                              "LOCATION": "redis://cache:6379"}}
    """)
    assert found(tmp_path, "shop/views.py", VIEW, "OG607", cross_file=True) == []


def test_django_caches_from_the_environment_are_not_guessed(tmp_path):
    write(tmp_path, "site/__init__.py", "")
    write(tmp_path, "shop/__init__.py", "")
    write(tmp_path, "site/settings.py", """
        import os

        INSTALLED_APPS = ["shop"]
        CACHES = {"default": cache_config(os.environ["CACHE_URL"])}
    """)
    assert found(tmp_path, "shop/views.py", VIEW, "OG607", cross_file=True) == []


def test_without_settings_in_view_the_default_is_unknown(tmp_path):
    write(tmp_path, "shop/__init__.py", "")
    assert found(tmp_path, "shop/views.py", VIEW, "OG607", cross_file=True) == []


def test_an_add_whose_result_is_ignored_is_no_lock(tmp_path):
    source = """
        from flask_caching import Cache

        cache = Cache(config={"CACHE_TYPE": "SimpleCache"})


        def remember(key, value):
            cache.add(key, value)
    """
    assert found(tmp_path, "svc/remember.py", source, "OG607") == []


# -- OG606 ------------------------------------------------------------------------------------------------
def test_locked_work_in_another_module_is_followed_by_the_cli(tmp_path):
    write(tmp_path, "svc/__init__.py", "")
    write(tmp_path, "svc/ledger.py", """
        import json
        from pathlib import Path

        LEDGER = Path("/srv/ledger.json")


        def append_entry(entry):
            entries = json.loads(LEDGER.read_text())
            entries.append(entry)
            LEDGER.write_text(json.dumps(entries))
    """)
    source = """
        import threading

        from svc.ledger import append_entry

        _ledger_lock = threading.Lock()


        def record(request, entry):
            with _ledger_lock:
                append_entry(entry)
    """
    cli = found(tmp_path, "svc/api.py", source, "OG606", cross_file=True)
    assert [d.line for d in cli] == [10]
    assert cli[0].fix is not None and cli[0].fix.applicability == "display-only"
    assert any("is made here" in r.message for r in cli[0].related)
    assert found(tmp_path, "svc/api.py", source, "OG606") == []


def test_a_lock_handed_in_is_not_judged(tmp_path):
    source = """
        class Repository:
            def __init__(self, sessions, lock=None):
                self.sessions = sessions
                self._lock = lock

            async def create(self, name):
                async with self._lock:
                    async with self.sessions() as session:
                        if await session.scalar(select_one(name)):
                            return None
                        session.add(Item(name=name))
                        await session.commit()
    """
    assert found(tmp_path, "svc/repo.py", source, "OG606") == []


def test_a_lock_in_a_script_is_one_process(tmp_path):
    source = """
        import json
        import threading
        from pathlib import Path

        STATE = Path("state.json")
        _lock = threading.Lock()


        def bump():
            with _lock:
                data = json.loads(STATE.read_text())
                data["n"] += 1
                STATE.write_text(json.dumps(data))


        if __name__ == "__main__":
            bump()
    """
    assert found(tmp_path, "scripts/bump.py", source, "OG606") == []


def test_every_process_state_rule_declares_triggers():
    codes = {"OG606", "OG607", "OG608"}
    rules = [r for r in rule_classes() if r.code in codes]
    assert {r.code for r in rules} == codes
    assert all(r.triggers for r in rules)
