"""A row loaded through a repository method, changed in Python and handed back to another method of the
repository that saves it, whatever that method is called; the repository reached through an attribute set to
``given or Default()`` (or a conditional expression) holds a ``Default``."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """
    from django.db import models


    class Card(models.Model):
        holder = models.CharField(max_length=64, unique=True)
        stamps = models.IntegerField(default=0)
    """

STORE = """
    from django.db.models import F

    from .models import Card


    class CardStore:
        def by_holder(self, holder):
            return Card.objects.get(holder=holder)

        def keep_stamps(self, card):
            card.save(update_fields=["stamps"])

        def add_stamps(self, card, count):
            Card.objects.filter(pk=card.pk).update(stamps=F("stamps") + count)
    """

SERVICE = """
    from .store import CardStore


    class Stamping:
        def __init__(self, store=None):
            self.store = {binding}

        def stamp(self, holder, count):
            card = self.store.by_holder(holder)
            {change}
            return card
    """

SAVED = """card.stamps = card.stamps + count
            self.store.keep_stamps(card)"""
IN_SQL = """self.store.add_stamps(card, count)"""


@pytest.mark.parametrize("binding", ["store or CardStore()", "store if store is not None else CardStore()",
                                     "CardStore()"])
@pytest.mark.parametrize("change, expected", [(SAVED, [(11, "OG301")]), (IN_SQL, [])])
def test_a_row_saved_by_a_repository_method(tmp_path, binding, change, expected):
    write(tmp_path, {"cards/__init__.py": "", "cards/models.py": MODELS, "cards/store.py": STORE,
                     "cards/service.py": SERVICE.format(binding=binding, change=change)})
    assert findings(tmp_path, "cards/service.py", codes=("OG301",)) == expected
