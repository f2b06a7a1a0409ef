"""OG301: the object a REST framework view loads with ``self.get_object()`` comes from its own
``get_queryset()``: locked there with ``select_for_update()`` (always, or for the action being served) the
change and save are serialised; locked only for another action, or not at all, they are a lost update."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

VIEWS = """\
    from django.db import transaction
    from rest_framework import viewsets
    from rest_framework.decorators import action
    from rest_framework.response import Response

    from shelf.models import Book


    class BookViewSet(viewsets.ReadOnlyModelViewSet):
        queryset = Book.objects.all()

        def get_queryset(self):
            queryset = super().get_queryset()
            {lock}
            return queryset

        @action(detail=True, methods=["post"])
        @transaction.atomic
        def lend(self, request, pk=None):
            book = self.get_object()
            book.copies_out = book.copies_out + 1
            book.save(update_fields=["copies_out"])
            return Response({{"out": book.copies_out}})
"""


@pytest.mark.parametrize("lock, expected", [
    ('if self.action == "lend":\n                queryset = queryset.select_for_update()', []),
    ('if self.action in ("lend", "give_back"):\n                queryset = queryset.select_for_update()', []),
    ("queryset = queryset.select_for_update()", []),
    ('if self.action == "give_back":\n                queryset = queryset.select_for_update()', [(22, "OG301")]),
    ("pass", [(21, "OG301")]),
])
def test_a_view_object_its_queryset_locks(tmp_path, lock, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'shelf'\n", "shelf/__init__.py": "",
                     "shelf/models.py": "from django.db import models\n\n\nclass Book(models.Model):\n"
                                        "    copies_out = models.IntegerField(default=0)\n",
                     "shelf/views.py": VIEWS.format(lock=lock)})
    assert findings(tmp_path, "shelf/views.py", codes=("OG301",)) == expected
