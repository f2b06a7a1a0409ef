"""A row a Peewee model class loads itself (``Card.get_or_none(...)``), returned by a repository method, changed
in Python and saved back through the repository: a lost update, and the advice is written in Peewee's own
queries (never Django's manager or a fix that writes one)."""
from __future__ import annotations

import pytest

from onceguard.config import from_mapping
from onceguard.engine.check import check_source

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """
    from peewee import BigIntegerField, CharField, Model, PostgresqlDatabase

    db = PostgresqlDatabase("cards")


    class Card(Model):
        code = CharField(unique=True)
        balance = BigIntegerField()

        class Meta:
            database = db
    """

PLAIN_MODELS = """
    class Card:
        @classmethod
        def get_or_none(cls, code):
            return None
    """

REPOSITORY = """
    from .models import Card


    class Cards:
        def by_code(self, code):
            return {loader}

        def keep(self, card):
            card.save(only=[Card.balance])
    """

SERVICE = """
    from .repository import Cards


    class Redeeming:
        def __init__(self, cards=None):
            self.cards = cards or Cards()

        def redeem(self, code, amount):
            card = self.cards.by_code(code)
            card.balance = card.balance - amount
            self.cards.keep(card)
    """


@pytest.mark.parametrize("models, loader, expected", [
    (MODELS, "Card.get_or_none(Card.code == code)", [(11, "OG301")]),
    (MODELS, "Card.get(Card.code == code)", [(11, "OG301")]),
    # a row locked by the select it is loaded with
    (MODELS, "Card.select().where(Card.code == code).for_update().get()", []),
    # a class of the project that is no model of an ORM: its ``get_or_none`` loads no row
    (PLAIN_MODELS, "Card.get_or_none(code)", []),
])
def test_rows_a_model_class_loads(tmp_path, models, loader, expected):
    write(tmp_path, {"cards/__init__.py": "", "cards/models.py": models,
                     "cards/repository.py": REPOSITORY.format(loader=loader), "cards/service.py": SERVICE})
    assert findings(tmp_path, "cards/service.py", codes=("OG301",)) == expected


def test_the_advice_for_a_peewee_row_is_peewee(tmp_path):
    write(tmp_path, {"cards/__init__.py": "", "cards/models.py": MODELS,
                     "cards/repository.py": REPOSITORY.format(loader="Card.get_or_none(Card.code == code)"),
                     "cards/service.py": SERVICE})
    path = tmp_path / "cards" / "service.py"
    found = [d for d in check_source(path.read_bytes(), str(path), from_mapping({}, root=str(tmp_path)),
                                     cross_file=True) if d.code == "OG301"]
    assert len(found) == 1
    advice = found[0].suggestion
    assert "Card.update(balance=Card.balance - amount).where(Card.id == card.id).execute()" in advice
    assert ".objects." not in advice and "F(" not in advice
    assert found[0].fix is None


def test_a_peewee_row_changed_where_it_is_loaded(tmp_path):
    write(tmp_path, {"shop/__init__.py": "", "shop/models.py": MODELS, "shop/views.py": """
        from .models import Card


        def redeem(code, amount):
            card = Card.get(Card.code == code)
            card.balance -= amount
            card.save()
        """})
    path = tmp_path / "shop" / "views.py"
    found = [d for d in check_source(path.read_bytes(), str(path), from_mapping({}, root=str(tmp_path)),
                                     cross_file=True) if d.code == "OG301"]
    assert [d.line for d in found] == [7]
    assert ".execute()" in found[0].suggestion and ".objects." not in found[0].suggestion
    assert found[0].fix is None
