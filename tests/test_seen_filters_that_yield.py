"""A "seen" marker kept by a generator that filters what it is handed (``if key in _done: continue`` …
``_done.add(key)`` … ``yield item``): the items it lets through are its answer, and the loop of its caller over
them (``for item in fresh(items):`` … a row written, a request sent) is the work the marker guards.  A repeat
reaching another worker process or replica passes the filter again (OG608).  A loop that only logs what it is
handed, or a set the generator makes anew on each call, is left alone."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

FILTER = """
    _done: set = set()


    def fresh(refunds):
        for refund in refunds:
            if refund["ref"] in _done:
                continue
            _done.add(refund["ref"])
            yield refund
    """

FILTER_PER_CALL = """
    def fresh(refunds):
        done = set()
        for refund in refunds:
            if refund["ref"] in done:
                continue
            done.add(refund["ref"])
            yield refund
    """

ROUTE = """
    import logging

    import httpx
    from fastapi import FastAPI

    {imports}

    app = FastAPI()
    log = logging.getLogger(__name__)


    @app.post("/hooks/refunds")
    async def refunds_issued(batch: dict) -> dict:
        for refund in {call}(batch["refunds"]):
            {work}
        return {{"ok": True}}
    """

PAYS = 'httpx.post("https://ledger.example/refunds", json=refund)'
LOGS = 'log.info("refund %s", refund["ref"])'


@pytest.mark.parametrize("imports, call", [
    ("from billing.filters import fresh", "fresh"),
    ("from billing.filters import fresh as only_new", "only_new"),
    ("from billing import filters", "filters.fresh"),
])
def test_a_module_level_set_a_filter_yields_past_is_a_seen_marker(tmp_path, imports, call):
    write(tmp_path, {"billing/__init__.py": "", "billing/filters.py": FILTER,
                     "billing/hooks.py": ROUTE.format(imports=imports, call=call, work=PAYS)})
    assert findings(tmp_path, "billing/filters.py", codes=("OG608",)) == [(2, "OG608")]


def test_a_filter_whose_items_are_only_logged_is_left_alone(tmp_path):
    write(tmp_path, {"billing/__init__.py": "", "billing/filters.py": FILTER,
                     "billing/hooks.py": ROUTE.format(imports="from billing.filters import fresh", call="fresh",
                                                      work=LOGS)})
    assert findings(tmp_path, "billing/filters.py", codes=("OG608",)) == []


def test_a_set_made_on_each_call_is_no_memory(tmp_path):
    write(tmp_path, {"billing/__init__.py": "", "billing/filters.py": FILTER_PER_CALL,
                     "billing/hooks.py": ROUTE.format(imports="from billing.filters import fresh", call="fresh",
                                                      work=PAYS)})
    assert findings(tmp_path, "billing/filters.py", codes=("OG608",)) == []
