"""Two things about who else can write a row.

A helper whose only claim is a marker row inserted unless present (``INSERT ... ON CONFLICT DO NOTHING``, its row
count the answer) claims that key only: runners of other keys pass at once, so a read-modify-write of some other
row behind it still has two writers.  A helper taking a try-lock is one runner at a time.

A row handed to a helper from a loop over rows a project function took with a claim (``FOR UPDATE SKIP LOCKED``,
moved to an in-flight state) is that runner's alone: the helper's change of it has no second writer.
"""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LEDGER = """
    def fold_points(conn, member_id: int, gained: int) -> None:
        with conn.cursor() as cur:
            cur.execute("SELECT points FROM loyalty WHERE member_id = %s", (member_id,))
            current = cur.fetchone()[0]
            cur.execute("UPDATE loyalty SET points = %s WHERE member_id = %s", (current + gained, member_id))
    """

MARKER = """
    def {name}(conn, receipt: str) -> bool:
        with conn.cursor() as cur:
            cur.execute(
                "INSERT INTO seen_receipts (receipt) VALUES (%s) ON CONFLICT (receipt) DO NOTHING", (receipt,)
            )
            return cur.rowcount == 1
    """

TRY_LOCK = """
    def {name}(conn, receipt: str) -> bool:
        with conn.cursor() as cur:
            cur.execute("SELECT pg_try_advisory_xact_lock(42)")
            return cur.fetchone()[0]
    """

WORKER = """
    import dramatiq

    from {imports}


    @dramatiq.actor
    def apply_receipt(conn, receipt: str, member_id: int, gained: int) -> None:
        if not {guard}(conn, receipt):
            return
        {fold}(conn, member_id, gained)
    """


def _project(tmp_path, helper: str, inline: bool, imports: str, guard: str, fold: str) -> str:
    if inline:
        files = {"points/__init__.py": "",
                 "points/worker.py": WORKER.format(imports="dramatiq import actor as _unused", guard=guard,
                                                   fold=fold) + helper.format(name=guard) + LEDGER}
    else:
        files = {"points/__init__.py": "", "points/ledger.py": LEDGER + helper.format(name="first_sight"),
                 "points/worker.py": WORKER.format(imports=imports, guard=guard, fold=fold)}
    write(tmp_path, files)
    return "points/worker.py" if inline else "points/ledger.py"


@pytest.mark.parametrize("inline, imports, guard, fold", [
    (False, ". import ledger", "ledger.first_sight", "ledger.fold_points"),
    (False, ".ledger import first_sight, fold_points", "first_sight", "fold_points"),
    (True, "", "note_receipt", "fold_points"),
])
def test_a_marker_row_claim_does_not_serialise_other_rows(tmp_path, inline, imports, guard, fold):
    path = _project(tmp_path, MARKER, inline, imports, guard, fold)
    line = 6 if not inline else WORKER.count("\n") + MARKER.count("\n") + 6
    assert findings(tmp_path, path, codes=("OG301",)) == [(line, "OG301")]


def test_a_try_lock_helper_still_serialises(tmp_path):
    path = _project(tmp_path, TRY_LOCK, False, ". import ledger", "ledger.first_sight", "ledger.fold_points")
    assert findings(tmp_path, path, codes=("OG301",)) == []


# -- a row handed from a loop over claimed rows -------------------------------------------------------------
DELIVERY = """
    from django.db import transaction
    from django.utils import timezone

    from .models import Parcel
    {extra_import}


    def _bump(parcel: Parcel) -> None:
        parcel.tries += 1
        parcel.save(update_fields=["tries"])


    def _take(limit: int) -> list:
        with transaction.atomic():
            picked = list(Parcel.objects.{lock}.filter(state="waiting")[:limit])
            Parcel.objects.filter(pk__in=[p.pk for p in picked]).update(state="in_flight", taken_at=timezone.now())
        return picked


    def run_once(limit: int = 20) -> None:
        for parcel in {source}(limit):
            {bump}(parcel)
    """

MODELS = """
    from django.db import models


    class Parcel(models.Model):
        state = models.CharField(max_length=16)
        tries = models.IntegerField(default=0)
        taken_at = models.DateTimeField(null=True)
    """


@pytest.mark.parametrize("lock, source", [
    ("select_for_update(skip_locked=True)", "_take"),
    ("select_for_update(skip_locked=True)", "list(_take"),
])
def test_a_row_from_claimed_rows_has_one_writer(tmp_path, lock, source):
    text = DELIVERY.format(extra_import="", lock=lock, source=source, bump="_bump")
    if source.startswith("list("):
        text = text.replace("list(_take(limit):", "list(_take(limit)):")
    write(tmp_path, {"parcels/__init__.py": "", "parcels/models.py": MODELS, "parcels/runner.py": text})
    assert findings(tmp_path, "parcels/runner.py", codes=("OG301",)) == []


def test_a_helper_in_another_module_given_claimed_rows(tmp_path):
    text = DELIVERY.format(extra_import="from .bumps import bump_tries", lock="select_for_update(skip_locked=True)",
                           source="_take", bump="bump_tries")
    bumps = """
        def bump_tries(parcel) -> None:
            parcel.tries = parcel.tries + 1
            parcel.save(update_fields=["tries"])
        """
    write(tmp_path, {"parcels/__init__.py": "", "parcels/models.py": MODELS, "parcels/runner.py": text,
                     "parcels/bumps.py": bumps})
    assert findings(tmp_path, "parcels/bumps.py", codes=("OG301",)) == []


def test_a_row_from_rows_read_plainly_is_still_shared(tmp_path):
    text = DELIVERY.format(extra_import="", lock="all()", source="_take", bump="_bump")
    text = text.replace('            Parcel.objects.filter(pk__in=[p.pk for p in picked]).update(state="in_flight", '
                        'taken_at=timezone.now())\n', "")
    write(tmp_path, {"parcels/__init__.py": "", "parcels/models.py": MODELS, "parcels/runner.py": text})
    assert findings(tmp_path, "parcels/runner.py", codes=("OG301",)) == [(10, "OG301")]
