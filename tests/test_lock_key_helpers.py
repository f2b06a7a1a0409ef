"""OG104: a lock helper keyed on its parameter, handed a per-process key by its callers.

``def try_xact_lock(lock_id)`` runs ``pg_try_advisory_xact_lock(%s)`` with ``lock_id``; a task calls it with
``allocation_lock_id(code, period)``, which returns ``hash((...))`` of text: salted per process, so each worker
locks its own key.  Reported where the value is computed; a stable digest there is fine.
"""
from __future__ import annotations

import textwrap

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LOCKS = """\
    from django.db import connection

    NAMESPACE = "credit-allocation"


    def allocation_lock_id(utility: str, period: str) -> int:
        return hash((NAMESPACE, utility, period)) & 0x7FFF_FFFF_FFFF_FFFF


    def try_xact_lock(lock_id: int) -> bool:
        with connection.cursor() as cur:
            cur.execute("SELECT pg_try_advisory_xact_lock(%s)", [lock_id])
            return bool(cur.fetchone()[0])
"""

TASKS = """\
    from django.db import transaction

    from credits.locks import allocation_lock_id, try_xact_lock


    def allocate(utility: str, period: str, post) -> int:
        with transaction.atomic():
            if not try_xact_lock(allocation_lock_id(utility, period)):
                return 0
            return post(utility, period)
"""


@pytest.mark.parametrize("tasks", [
    TASKS,
    TASKS.replace("from credits.locks import allocation_lock_id, try_xact_lock", "from credits import locks").replace(
        "try_xact_lock(allocation_lock_id(utility, period))", "locks.try_xact_lock(locks.allocation_lock_id(utility, period))"),
    TASKS.replace("if not try_xact_lock(allocation_lock_id(utility, period)):",
                  "key = allocation_lock_id(utility, period)\n            if not try_xact_lock(key):"),
], ids=["from-import", "module-import", "through-a-local"])
def test_a_per_process_key_handed_to_a_lock_helper_is_reported_where_it_is_computed(tmp_path, tasks):
    write(tmp_path, {"credits/__init__.py": "", "credits/locks.py": LOCKS, "credits/tasks.py": tasks})
    assert findings(tmp_path, "credits/locks.py", codes=("OG104",)) == [(7, "OG104")]


def test_a_stable_digest_handed_to_the_helper_is_fine(tmp_path):
    stable = LOCKS.replace("return hash((NAMESPACE, utility, period)) & 0x7FFF_FFFF_FFFF_FFFF",
                           'return zlib.crc32(f"{NAMESPACE}:{utility}:{period}".encode())').replace(
        "from django.db import connection", "import zlib\n\n    from django.db import connection")
    write(tmp_path, {"credits/__init__.py": "", "credits/locks.py": stable, "credits/tasks.py": TASKS})
    assert findings(tmp_path, "credits/locks.py", codes=("OG104",)) == []


SETTINGS = """\
    import os
    import uuid
    from dataclasses import dataclass, field


    def _namespace() -> uuid.UUID:
        configured = os.environ.get("ROAST_LOCK_NAMESPACE")
        return uuid.UUID(configured) if configured else uuid.uuid4()


    @dataclass(frozen=True)
    class Settings:
        lock_namespace: uuid.UUID = field(default_factory=_namespace)


    settings = Settings()
"""

NAMED_LOCK = """\
    import uuid

    from redis import Redis

    from roast.settings import settings

    client = Redis(host="redis")


    def plan(job: str, run) -> None:
        lock = client.lock(f"roast:{uuid.uuid5(settings.lock_namespace, job)}", timeout=600, blocking=False)
        if lock.acquire():
            run()
"""


def test_a_lock_name_from_a_default_factory_function_drawing_a_uuid4_is_per_process(tmp_path):
    write(tmp_path, {"roast/__init__.py": "", "roast/settings.py": SETTINGS, "roast/jobs.py": NAMED_LOCK})
    assert findings(tmp_path, "roast/jobs.py", codes=("OG104",)) == [(11, "OG104")]


def test_the_same_factory_falling_back_to_a_constant_is_stable(tmp_path):
    stable = SETTINGS.replace("else uuid.uuid4()", 'else uuid.UUID("3d0f6a52-8b1e-4c53-9a1f-2f4b8e6c1d07")')
    write(tmp_path, {"roast/__init__.py": "", "roast/settings.py": stable, "roast/jobs.py": NAMED_LOCK})
    assert findings(tmp_path, "roast/jobs.py", codes=("OG104",)) == []


# -- the key computed in one module, the lock helper in another, the call that joins them in a third ------------
SLOT_KEYS = """\
    NAMESPACE = "credit-allocation"


    def allocation_slot(utility: str, period: str) -> int:
        return hash((NAMESPACE, utility, period)) & 0x7FFF_FFFF_FFFF_FFFF
"""

XACT_LOCKS = """\
    from django.db import connection


    def try_xact_lock(lock_id: int) -> bool:
        with connection.cursor() as cur:
            cur.execute("SELECT pg_try_advisory_xact_lock(%s)", [lock_id])
            return bool(cur.fetchone()[0])
"""

JOINING_TASKS = """\
    from django.db import transaction

    from credits.keys import allocation_slot
    from credits.locks import try_xact_lock


    def allocate(utility: str, period: str, post) -> int:
        with transaction.atomic():
            if not try_xact_lock(allocation_slot(utility, period)):
                return 0
            return post(utility, period)
"""


@pytest.mark.parametrize("tasks", [
    JOINING_TASKS,
    JOINING_TASKS.replace("from credits.keys import allocation_slot", "from credits.keys import allocation_slot as slot_for")
    .replace("from credits.locks import try_xact_lock", "from credits.locks import try_xact_lock as take")
    .replace("try_xact_lock(allocation_slot(", "take(slot_for("),
    JOINING_TASKS.replace("from credits.keys import allocation_slot\n    from credits.locks import try_xact_lock",
                          "from credits import keys, locks")
    .replace("try_xact_lock(allocation_slot(", "locks.try_xact_lock(keys.allocation_slot("),
], ids=["from-import", "aliases", "module-import"])
def test_a_key_computed_in_a_third_module_is_reported_where_it_is_computed(tmp_path, tasks):
    write(tmp_path, {"credits/__init__.py": "", "credits/keys.py": SLOT_KEYS, "credits/locks.py": XACT_LOCKS,
                     "credits/tasks.py": tasks})
    assert findings(tmp_path, "credits/keys.py", codes=("OG104",)) == [(5, "OG104")]
    assert findings(tmp_path, "credits/tasks.py", codes=("OG104",)) == []


def test_a_stable_key_of_a_third_module_is_fine(tmp_path):
    stable = SLOT_KEYS.replace("return hash((NAMESPACE, utility, period)) & 0x7FFF_FFFF_FFFF_FFFF",
                               'return zlib.crc32(f"{NAMESPACE}:{utility}:{period}".encode())')
    write(tmp_path, {"credits/__init__.py": "", "credits/keys.py": "import zlib\n\n" + textwrap.dedent(stable),
                     "credits/locks.py": XACT_LOCKS, "credits/tasks.py": JOINING_TASKS})
    assert findings(tmp_path, "credits/keys.py", codes=("OG104",)) == []


@pytest.mark.parametrize("spelled, lock", [
    ("try_xact_lock(hash((utility, period)))", "from credits.locks import try_xact_lock"),
    ("take(hash((utility, period)))", "from credits.locks import try_xact_lock as take"),
], ids=["from-import", "alias"])
def test_a_per_process_key_handed_to_a_lock_helper_of_another_module_is_reported_where_it_is_handed(
        tmp_path, spelled, lock):
    tasks = JOINING_TASKS.replace("    from credits.keys import allocation_slot\n", "").replace(
        "from credits.locks import try_xact_lock", lock).replace("try_xact_lock(allocation_slot(utility, period))",
                                                                 spelled)
    write(tmp_path, {"credits/__init__.py": "", "credits/locks.py": XACT_LOCKS, "credits/tasks.py": tasks})
    assert findings(tmp_path, "credits/tasks.py", codes=("OG104",)) == [(8, "OG104")]
    assert findings(tmp_path, "credits/locks.py", codes=("OG104",)) == []
