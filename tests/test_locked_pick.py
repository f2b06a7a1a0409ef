"""OG301: an instance picked out of rows a query of the same function locked (``select_for_update()`` listed,
then looked up in a dict built from the list) is changed under that row lock: no lost update."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """\
    from django.db import models


    class Ticket(models.Model):
        alt_ids = models.JSONField(default=list)
        title = models.CharField(max_length=200)
"""

VIEWS = """\
    from django.db import transaction
    from django.http import JsonResponse

    from desk.models import Ticket


    def merge(request, pk, into):
        with transaction.atomic():
            rows = list(Ticket.objects{lock}.filter(id__in=sorted([pk, into])))
            by_id = {{t.id: t for t in rows}}
            source, target = by_id.get(pk), by_id.get(into)
            merged = list(target.alt_ids or [])
            merged.extend(i for i in source.alt_ids if i not in merged)
            target.alt_ids = merged
            target.save(update_fields=["alt_ids"])
        return JsonResponse({{"ok": True}})
"""


@pytest.mark.parametrize("lock, expected", [(".select_for_update()", []), ("", [(14, "OG301")])])
def test_an_instance_picked_out_of_locked_rows(tmp_path, lock, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'desk'\n", "desk/__init__.py": "",
                     "desk/models.py": MODELS, "desk/views.py": VIEWS.format(lock=lock)})
    assert findings(tmp_path, "desk/views.py", codes=("OG301",)) == expected
