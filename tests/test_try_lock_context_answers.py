"""A context manager of the project that tries a lock once and yields whether it got it: entered without binding
the answer, or binding a name nothing reads, it claims nothing -- the block runs on every replica (OG106)."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

# The try-lock's answer assigned over several lines, then yielded (the claim's SQL is not on the assigning line).
GUARDS = """
    from contextlib import contextmanager

    from sqlalchemy import text


    @contextmanager
    def single_runner(conn, key):
        got = conn.execute(
            text("SELECT pg_try_advisory_xact_lock(:k)"),
            {"k": key},
        ).scalar()
        yield bool(got)
    """

# One line, and the answer yielded as it is.
ONE_LINE_GUARDS = """
    from contextlib import contextmanager

    from sqlalchemy import text


    @contextmanager
    def single_runner(conn, key):
        yield conn.execute(text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": key}).scalar()
    """

REBATES = """
    from sqlalchemy import text

    from .guards import single_runner


    def pay_rebates(engine, bank):
        with engine.begin() as conn, single_runner(conn, 5150){binding}:{gate}
            for row in conn.execute(text("SELECT id, iban, cents FROM rebates WHERE paid_at IS NULL")):
                bank.transfer(row.iban, row.cents)
    """

# The helper reached through its module (``from . import guards``) rather than imported by name.
REBATES_THROUGH_MODULE = REBATES.replace("from .guards import single_runner", "from . import guards").replace(
    "single_runner(conn, 5150)", "guards.single_runner(conn, 5150)")

GATE = """
            if not won:
                return"""


def _check(tmp_path, guards, rebates):
    write(tmp_path, {"shop/__init__.py": "", "shop/guards.py": guards, "shop/rebates.py": rebates})
    return findings(tmp_path, "shop/rebates.py", codes=("OG106",))


@pytest.mark.parametrize("guards", [GUARDS, ONE_LINE_GUARDS], ids=["multi-line", "one-line"])
@pytest.mark.parametrize("binding", ["", " as won"], ids=["no-as", "unread-as"])
def test_the_yielded_answer_dropped_is_flagged(tmp_path, guards, binding):
    rebates = REBATES.format(binding=binding, gate="")
    assert _check(tmp_path, guards, rebates) == [(8, "OG106")]


def test_the_helper_reached_through_its_module(tmp_path):
    rebates = REBATES_THROUGH_MODULE.format(binding="", gate="")
    assert _check(tmp_path, GUARDS, rebates) == [(8, "OG106")]


@pytest.mark.parametrize("guards", [GUARDS, ONE_LINE_GUARDS], ids=["multi-line", "one-line"])
def test_the_yielded_answer_tested_is_clean(tmp_path, guards):
    rebates = REBATES.format(binding=" as won", gate=GATE)
    assert _check(tmp_path, guards, rebates) == []


def test_a_context_manager_that_yields_a_connection_is_not_a_try_lock(tmp_path):
    pooled = """
        from contextlib import contextmanager


        @contextmanager
        def single_runner(conn, key):
            conn.info["job"] = key
            yield conn
        """
    rebates = REBATES.format(binding="", gate="")
    assert _check(tmp_path, pooled, rebates) == []
