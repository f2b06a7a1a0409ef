"""OG301 on a row a project function loads and returns: the caller changes a column from its own value and
commits, and the unlocked load that makes the value stale is in the function it called (a repository of
another module, a method of a module-level instance, a helper of its own module), however the load is spelled
and whichever way the caller imports it. A load under a row lock, a row the caller creates, arithmetic done by
the database and a constant stay clean."""
from __future__ import annotations

import pytest
from test_lost_update_writers import check_project, fresh_project_cache  # noqa: F401 (autouse here too)


EXTENSIONS = """
    from flask_sqlalchemy import SQLAlchemy

    db = SQLAlchemy()
"""
MODELS = """
    from arcade.extensions import db


    class Card(db.Model):
        __tablename__ = "cards"
        id = db.Column(db.Integer, primary_key=True)
        player_id = db.Column(db.Integer, unique=True, nullable=False)
        tokens = db.Column(db.Integer, nullable=False, default=0)
"""
STORE = """
    from arcade.extensions import db
    from arcade.models import Card


    def card_for(player_id):
        return {load}
"""
CLASS_STORE = """
    from arcade.extensions import db
    from arcade.models import Card


    class CardStore:
        def for_player(self, player_id):
            card = {load}
            return card


    cards = CardStore()
"""
SERVICE = """
    {imports}
    from arcade.extensions import db
    from arcade.models import Card


    def top_up(player_id, bought):
        card = {call}
        if card is None:
            raise LookupError(player_id)
        {change}
        {write}
        return card
"""
UNLOCKED = "Card.query.filter_by(player_id=player_id).first()"


def run(tmp_path, store: str = STORE, load: str = UNLOCKED, imports: str = "from arcade import store",
        call: str = "store.card_for(player_id)", change: str = "card.tokens = card.tokens + bought",
        write: str = "db.session.commit()", extra=None):
    files = {"arcade/__init__.py": "", "arcade/extensions.py": EXTENSIONS, "arcade/models.py": MODELS,
             "arcade/store.py": store.format(load=load),
             "arcade/service.py": SERVICE.format(imports=imports, call=call, change=change, write=write)}
    files.update(extra or {})
    return check_project(tmp_path, files, "arcade/service.py")


CHANGE_LINE = 11


@pytest.mark.parametrize("imports, call", [
    ("from arcade import store", "store.card_for(player_id)"),
    ("from arcade.store import card_for", "card_for(player_id)"),
    ("import arcade.store as st", "st.card_for(player_id)"),
    ("from .store import card_for", "card_for(player_id)"),
])
def test_a_row_a_repository_function_loads_and_returns(imports, call, tmp_path):
    assert run(tmp_path, imports=imports, call=call) == [CHANGE_LINE]


@pytest.mark.parametrize("load", [
    "db.session.get(Card, player_id)",
    "db.session.scalars(select(Card).where(Card.player_id == player_id)).first()",
    "Card.query.filter(Card.player_id == player_id).one_or_none()",
])
def test_however_the_repository_spells_the_load(load, tmp_path):
    store = STORE.replace("from arcade.extensions import db",
                          "from sqlalchemy import select\n    from arcade.extensions import db")
    assert run(tmp_path, store=store, load=load) == [CHANGE_LINE]


@pytest.mark.parametrize("imports, call", [
    ("from arcade.store import cards", "cards.for_player(player_id)"),
    ("from arcade import store", "store.cards.for_player(player_id)"),
])
def test_a_method_of_a_module_level_repository_instance(imports, call, tmp_path):
    assert run(tmp_path, store=CLASS_STORE, imports=imports, call=call) == [CHANGE_LINE]


def test_a_repository_function_of_the_same_module(tmp_path):
    helper = (f"def card_for(player_id):\n        found = {UNLOCKED}\n        return found\n\n\n"
              "    def top_up(")
    files = {"arcade/__init__.py": "", "arcade/extensions.py": EXTENSIONS, "arcade/models.py": MODELS,
             "arcade/service.py": SERVICE.format(imports="", call="card_for(player_id)",
                                                 change="card.tokens += bought", write="db.session.commit()")
             .replace("def top_up(", helper)}
    assert check_project(tmp_path, files, "arcade/service.py") == [16]


def test_a_load_behind_two_repository_functions(tmp_path):
    store = STORE + """

    def _one(player_id):
        found = {load}
        return found
"""
    assert run(tmp_path, store=store.replace("return {load}", "return _one(player_id)", 1)) == [CHANGE_LINE]


def test_the_finding_points_at_the_load_in_the_repository(tmp_path):
    from onceguard.config import from_mapping
    from onceguard.engine.check import check_source

    run(tmp_path)
    path = tmp_path / "arcade" / "service.py"
    found = [d for d in check_source(path.read_bytes(), str(path), from_mapping({}, root=str(tmp_path)),
                                     cross_file=True) if d.code == "OG301"]
    assert len(found) == 1 and "store.card_for(player_id)" in found[0].message
    assert [(r.path.endswith("store.py"), r.line) for r in found[0].related] == [(True, 7)]
    assert found[0].related[0].message == "The row is loaded here without a lock and returned by `card_for`"


@pytest.mark.parametrize("load", [
    "Card.query.filter_by(player_id=player_id).with_for_update().first()",
    "db.session.get(Card, player_id, with_for_update=True)",
])
def test_a_repository_that_locks_the_row(load, tmp_path):
    assert run(tmp_path, load=load) == []
    assert run(tmp_path, store=CLASS_STORE, load=load, imports="from arcade.store import cards",
               call="cards.for_player(player_id)") == []


@pytest.mark.parametrize("change", [
    "card.tokens = Card.tokens + bought",  # the database adds
    "card.tokens = 0",  # a constant: nothing read
])
def test_no_value_computed_from_the_stale_read(change, tmp_path):
    assert run(tmp_path, change=change) == []


def test_a_row_the_caller_creates(tmp_path):
    assert run(tmp_path, imports="", call="Card(player_id=player_id, tokens=0)",
               write="db.session.add(card)\n        db.session.commit()") == []


# -- SQLAlchemy sessions from a sessionmaker, handed to the repository ---------------------------------------
SA_MODELS = """
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class Card(Base):
        __tablename__ = "cards"
        id: Mapped[int] = mapped_column(primary_key=True)
        tokens: Mapped[int] = mapped_column(default=0)
"""
SA_DB = """
    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker

    SessionLocal = sessionmaker(create_engine("postgresql://db/arcade"))
"""
SA_STORE = """
    from sqlalchemy.orm import Session

    from arcade.models import Card


    def card_for(session: Session, card_id: int) -> Card | None:
        return session.get(Card, card_id{lock})
"""
SA_SERVICE = """
    from arcade import store
    from arcade.db import SessionLocal


    def top_up(card_id: int, bought: int) -> None:
        with SessionLocal() as session, SessionLocal() as audit:
            card = store.card_for(session, card_id)
            card.tokens = card.tokens + bought
            {commit}.commit()
"""


def sa_run(tmp_path, lock: str = "", commit: str = "session"):
    files = {"arcade/__init__.py": "", "arcade/models.py": SA_MODELS, "arcade/db.py": SA_DB,
             "arcade/store.py": SA_STORE.format(lock=lock), "arcade/service.py": SA_SERVICE.format(commit=commit)}
    return check_project(tmp_path, files, "arcade/service.py")


def test_a_session_handed_to_the_repository_and_committed_by_the_caller(tmp_path):
    assert sa_run(tmp_path) == [9]


def test_another_session_committed_writes_nothing_back(tmp_path):
    assert sa_run(tmp_path, commit="audit") == []


def test_a_handed_session_that_loads_under_a_lock(tmp_path):
    assert sa_run(tmp_path, lock=", with_for_update=True") == []


# -- Django --------------------------------------------------------------------------------------------------
DJANGO_MODELS = """
    from django.db import models


    class Card(models.Model):
        tokens = models.IntegerField(default=0)
"""
DJANGO_STORE = """
    from arcade.models import Card


    def card_for(card_id):
        return Card.objects{lock}.get(pk=card_id)
"""
DJANGO_SERVICE = """
    from django.db import transaction

    from arcade import store


    def top_up(card_id, bought):
        with transaction.atomic():
            card = store.card_for(card_id)
            card.tokens = card.tokens + bought
            card.save(update_fields=["tokens"])
"""


@pytest.mark.parametrize("lock, expected", [("", [10]), (".select_for_update()", [])])
def test_a_django_row_a_repository_returns(lock, expected, tmp_path):
    files = {"arcade/__init__.py": "", "arcade/models.py": DJANGO_MODELS,
             "arcade/store.py": DJANGO_STORE.format(lock=lock), "arcade/service.py": DJANGO_SERVICE}
    assert check_project(tmp_path, files, "arcade/service.py") == expected


OBJECT_STORE = """
    from sqlalchemy.orm import Session

    from arcade.models import Card


    class CardStore:
        def __init__(self, session: Session) -> None:
            self.session = session

        def get(self, card_id: int) -> Card | None:
            return self.session.get(Card, card_id)
"""
OBJECT_SERVICE = """
    from arcade.db import SessionLocal
    from arcade.store import CardStore


    def top_up(card_id: int, bought: int) -> None:
        with SessionLocal() as session, SessionLocal() as audit:
            card = CardStore(session).get(card_id)
            card.tokens = card.tokens + bought
            {commit}.commit()
"""


@pytest.mark.parametrize("commit, expected", [("session", [9]), ("audit", [])])
def test_a_repository_object_made_with_the_callers_session(commit, expected, tmp_path):
    files = {"arcade/__init__.py": "", "arcade/models.py": SA_MODELS, "arcade/db.py": SA_DB,
             "arcade/store.py": OBJECT_STORE, "arcade/service.py": OBJECT_SERVICE.format(commit=commit)}
    assert check_project(tmp_path, files, "arcade/service.py") == expected
    bound = OBJECT_SERVICE.replace("card = CardStore(session).get(card_id)",
                                   "store = CardStore(session)\n            card = store.get(card_id)")
    files["arcade/service.py"] = bound.format(commit=commit)
    assert check_project(tmp_path, files, "arcade/service.py") == [line + 1 for line in expected]


def test_text_appended_to_a_returned_row_is_built_not_computed(tmp_path):
    models = MODELS + "        label = db.Column(db.Text, nullable=True)\n"
    change = 'card.label += f"; {bought}" if card.label else f"{bought}"'
    assert run(tmp_path, change=change, extra={"arcade/models.py": models}) == []
