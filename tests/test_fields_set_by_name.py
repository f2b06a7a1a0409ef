"""A field reached by name: ``setattr(row, name, getattr(row, name) + k)`` then a save is ``row.<name> += k``
then a save, whichever field the caller names: the value comes from the copy loaded with the row, and two
requests that start from it write the same total. A field set by name to a value of its own (not computed from
itself), or counted up in the database, is no lost update."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SCORES = """
    from django.db import models
    from django.db.models import F


    class Tally:
        def add_to(self, name: str, step: int = 1) -> None:
{body}


    class Player(Tally, models.Model):
        wins = models.IntegerField(default=0)
        losses = models.IntegerField(default=0)
    """

COUNTED_IN_PYTHON = """\
            setattr(self, name, getattr(self, name) + step)
            self.save(update_fields=[name])"""

THROUGH_A_LOCAL = """\
            total = getattr(self, name, 0) + step
            setattr(self, name, total)
            self.save()"""

LITERAL_NAME = """\
            setattr(self, "wins", step + getattr(self, "wins"))
            self.save()"""

COUNTED_IN_SQL = """\
            type(self).objects.filter(pk=self.pk).update(**{name: F(name) + step})
            self.refresh_from_db(fields=[name])"""

SET_FROM_ELSEWHERE = """\
            setattr(self, name, step)
            self.save(update_fields=[name])"""


@pytest.mark.parametrize("body, line", [(COUNTED_IN_PYTHON, 8), (THROUGH_A_LOCAL, 9), (LITERAL_NAME, 8)])
def test_a_field_counted_up_by_name_and_saved(tmp_path, body, line):
    write(tmp_path, {"league/__init__.py": "", "league/models.py": SCORES.format(body=body)})
    assert findings(tmp_path, "league/models.py", codes=("OG301",)) == [(line, "OG301")]


@pytest.mark.parametrize("body", [COUNTED_IN_SQL, SET_FROM_ELSEWHERE])
def test_a_field_set_by_name_without_reading_it(tmp_path, body):
    write(tmp_path, {"league/__init__.py": "", "league/models.py": SCORES.format(body=body)})
    assert findings(tmp_path, "league/models.py", codes=("OG301",)) == []


def test_the_mixin_in_another_module(tmp_path):
    mixin, model = SCORES.format(body=COUNTED_IN_PYTHON).split("    class Player")
    write(tmp_path, {"league/__init__.py": "", "league/tally.py": mixin,
                     "league/models.py": "from django.db import models\n\nfrom .tally import Tally\n\n\nclass Player"
                                         + model.replace("\n    ", "\n")})
    assert findings(tmp_path, "league/tally.py", codes=("OG301",)) == [(8, "OG301")]
