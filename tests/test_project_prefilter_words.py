"""Prefilter words the project itself gives: a module is read for a rule when the project's other modules make it
worth reading, not when it merely loops, says "limit" or calls ``time()``.

- OG604: a module that makes a limiter object of a project class keeping per-key containers against a clock
  (``gate = Bucket(3, 3600)``) is read by that class's name, though it spells no word of a limiter.
- OG610: a loop over the rows a project function picks with a filter, taking nothing to narrow them, is read by
  that function's name; a loop over anything else is not.
- OG104: a module computing a per-process value is read when a module taking advisory locks calls or imports
  what it defines, or when it calls a lock helper such a module defines.
"""
from __future__ import annotations

import os

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

from onceguard.analysis.context import FileContext
from onceguard.config import from_mapping
from onceguard.engine.check import applicable_rules, enabled_rules

BUCKET = """\
    import time
    from collections import defaultdict, deque


    class Bucket:
        def __init__(self, cap: int, seconds: float) -> None:
            self.cap = cap
            self.seconds = seconds
            self._hits = defaultdict(deque)

        async def allow(self, key: str) -> bool:
            now = time.monotonic()
            hits = self._hits[key]
            while hits and now - hits[0] > self.seconds:
                hits.popleft()
            if len(hits) >= self.cap:
                return False
            hits.append(now)
            return True
"""

GATES = """\
    from shop.windows import Bucket

    resend_gate = Bucket(3, 3600)
"""

WEB = """\
    from flask import Flask, jsonify

    from shop.gates import resend_gate

    app = Flask(__name__)


    @app.post("/codes/<phone>")
    async def resend(phone: str):
        if not await resend_gate.allow(phone):
            return jsonify(error="slow down"), 429
        return jsonify(status="sent"), 202
"""


def _admitted(root, path: str) -> set:
    full = os.path.join(str(root), path)
    with open(full, "rb") as handle:
        source = handle.read()
    config = from_mapping({}, root=str(root))
    context = FileContext(full, config, cross_file=True)
    return {rule.code for rule in applicable_rules(source, enabled_rules(config), context)}


@pytest.mark.parametrize("gates", [
    GATES,
    GATES.replace("from shop.windows import Bucket", "from shop import windows").replace("Bucket(3", "windows.Bucket(3"),
    GATES.replace("from shop.windows import Bucket", "from shop.windows import Bucket as Window").replace(
        "= Bucket(", "= Window("),
], ids=["from-import", "module-import", "alias"])
def test_a_limiter_made_from_a_counting_class_of_another_module_is_read_by_the_class_name(tmp_path, gates):
    write(tmp_path, {"shop/__init__.py": "", "shop/windows.py": BUCKET, "shop/gates.py": gates, "shop/web.py": WEB})
    assert "OG604" in _admitted(tmp_path, "shop/gates.py")
    assert findings(tmp_path, "shop/gates.py", codes=("OG604",)) == [(3, "OG604")]


def test_a_class_that_keeps_no_counts_gives_no_word(tmp_path):
    plain = BUCKET.replace("self._hits = defaultdict(deque)", "self._hits = None").replace(
        "now = time.monotonic()", "now = 0.0")
    write(tmp_path, {"shop/__init__.py": "", "shop/windows.py": plain, "shop/gates.py": GATES, "shop/web.py": WEB})
    assert "OG604" not in _admitted(tmp_path, "shop/gates.py")
    assert findings(tmp_path, "shop/gates.py", codes=("OG604",)) == []


PAGING = """\
    import time


    def page(rows, limit=10):
        out = []
        for row in rows[:limit]:
            out.append((row, time.time()))
        return out
"""


def test_a_module_that_only_loops_and_says_limit_is_not_read_for_these_rules(tmp_path):
    write(tmp_path, {"app/__init__.py": "", "app/paging.py": PAGING})
    assert not {"OG104", "OG604", "OG610"} & _admitted(tmp_path, "app/paging.py")


ROSTER = """\
    from app.models import Courier, db


    class Roster:
        def idle_couriers(self):
            return Courier.query.filter_by(state="idle").all()
"""

SWEEP = """\
    from app.registry import roster


    def sweep() -> None:
        for courier in roster.idle_couriers():
            roster.retire(courier.id)
"""


@pytest.mark.parametrize("signature, admitted", [
    ("self", True),
    ("self: 'Roster'", True),
    ("\n            self,  # the roster\n        ", True),
    ("self, state", False),  # a def handed what picks the rows is no word of the rule
])
def test_a_loop_over_a_bare_loader_of_the_project_is_read_by_its_name(tmp_path, signature, admitted):
    write(tmp_path, {"app/__init__.py": "", "app/roster.py": ROSTER.replace("(self)", f"({signature})"),
                     "app/sweep.py": SWEEP})
    assert ("OG610" in _admitted(tmp_path, "app/sweep.py")) is admitted


def test_a_loader_in_test_code_gives_no_word(tmp_path):
    write(tmp_path, {"app/__init__.py": "", "tests/test_roster.py": ROSTER, "app/sweep.py": SWEEP})
    assert "OG610" not in _admitted(tmp_path, "app/sweep.py")


KEYS = """\
    NAMESPACE = "credit-allocation"


    def allocation_slot(utility: str, period: str) -> int:
        return hash((NAMESPACE, utility, period)) & 0x7FFF_FFFF_FFFF_FFFF
"""

LOCKS = """\
    from django.db import connection

    from credits.keys import allocation_slot as slot_for


    def try_slot(utility: str, period: str) -> bool:
        with connection.cursor() as cur:
            cur.execute("SELECT pg_try_advisory_xact_lock(%s)", [slot_for(utility, period)])
            return bool(cur.fetchone()[0])
"""


def test_a_key_function_a_locking_module_imports_under_an_alias_is_read_and_reported(tmp_path):
    write(tmp_path, {"credits/__init__.py": "", "credits/keys.py": KEYS, "credits/locks.py": LOCKS})
    assert "OG104" in _admitted(tmp_path, "credits/keys.py")
    assert findings(tmp_path, "credits/keys.py", codes=("OG104",)) == [(5, "OG104")]


def test_a_key_function_no_locking_module_names_is_not_read_for_og104(tmp_path):
    write(tmp_path, {"credits/__init__.py": "", "credits/keys.py": KEYS,
                     "credits/locks.py": LOCKS.replace("slot_for(utility, period)", "42").replace(
                         "from credits.keys import allocation_slot as slot_for\n", "")})
    assert "OG104" not in _admitted(tmp_path, "credits/keys.py")
