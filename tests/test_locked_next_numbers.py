"""OG301 next numbers: a lock the read of the highest value takes itself (``.select_for_update().aggregate(
Max(...))``) locks only the rows already numbered (none on the first number of a day, never the row being
added), so it serialises nothing; a lock on a parent row taken first does. The highest value may be read with
``.get(...)`` from the aggregate, and handed back formatted into text that the caller stores."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """\
    import datetime

    from django.db import models, transaction
    from django.db.models import IntegerField, Max
    from django.db.models.functions import Cast, Substr


    class Ledger(models.Model):
        name = models.CharField(max_length=50)


    class Voucher(models.Model):
        ledger = models.ForeignKey(Ledger, on_delete=models.CASCADE)
        number = models.CharField(max_length=30, blank=True)

        def next_number(self):
            prefix = "V-" + datetime.date.today().strftime("%Y%m%d") + "-"
            with transaction.atomic():
                {parent}
                found = (
                    Voucher.objects.filter(number__startswith=prefix)
                    .select_for_update()
                    .annotate(seq=Cast(Substr("number", len(prefix) + 1), IntegerField()))
                    .aggregate(top=Max("seq"))
                )
                seq = (found.get("top") or 0) + 1
                return f"{{prefix}}{{seq:04d}}"

        def save(self, *args, **kwargs):
            if not self.number:
                self.number = self.next_number()
            super().save(*args, **kwargs)
"""


@pytest.mark.parametrize("parent, expected", [
    ("pass", [(26, "OG301")]),
    ("Ledger.objects.select_for_update().get(pk=self.ledger_id)", []),
])
def test_the_lock_of_the_read_itself_serialises_nothing(tmp_path, parent, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'books'\n", "books/__init__.py": "",
                     "books/models.py": MODELS.format(parent=parent)})
    assert findings(tmp_path, "books/models.py", codes=("OG301",)) == expected
