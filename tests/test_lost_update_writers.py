"""A lost update needs two writers (OG301): what the whole project shows about who else can hold the row,
and how the same hazards read when they are spelled another way (renamed, helper moved, other import)."""
from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from onceguard.analysis.executed_sql import orm_set_statement
from onceguard.config import from_mapping
from onceguard.engine.check import check_source
from onceguard.project import index as project
from onceguard.testing import write_source


@pytest.fixture(autouse=True)
def fresh_project_cache():
    project.clear_cache()
    yield
    project.clear_cache()


def check_project(root: Path, files: dict, target: str, cross_file: bool = True, code: str = "OG301"):
    """Write ``files`` under ``root``, check ``target`` as the CLI does (the project read) and return the
    lines reported with ``code``."""
    for path, source in files.items():
        write_source(root, path, source)
    full = root / target
    found = check_source(full.read_bytes(), str(full), from_mapping({}, root=str(root)), cross_file=cross_file)
    return sorted(d.line for d in found if d.code == code)


_JOB_MODEL = """
    from django.db import models


    class ExportJob(models.Model):
        total = models.IntegerField(default=0)
        owner = models.CharField(max_length=50)

        def queue_files(self, files):
            for item in files:
                self.total += 1
                self.save(update_fields=["total"])
"""

_CREATING_CALLER = """
    from exports.models import ExportJob


    def new_job(owner):
        job = ExportJob.objects.create(owner=owner)
        return job


    def start(owner, files):
        job = new_job(owner)
        job.queue_files(files)
"""


def test_method_whose_every_caller_passes_a_row_it_created_is_clean(tmp_path):
    files = {"exports/__init__.py": "", "exports/models.py": _JOB_MODEL, "exports/views.py": _CREATING_CALLER}
    assert check_project(tmp_path, files, "exports/models.py") == []


def test_one_caller_that_loads_the_row_makes_it_shared(tmp_path):
    loading_caller = """
        from exports.models import ExportJob


        def resume(job_id, files):
            job = ExportJob.objects.get(pk=job_id)
            job.queue_files(files)
    """
    files = {"exports/__init__.py": "", "exports/models.py": _JOB_MODEL, "exports/views.py": _CREATING_CALLER,
             "exports/resume.py": loading_caller}
    assert check_project(tmp_path, files, "exports/models.py") == [11]


def test_a_same_named_method_of_another_model_is_not_a_caller(tmp_path):
    other = """
        from django.db import models


        class ImportJob(models.Model):
            def queue_files(self, files):
                return None


        def retry(job_id, files):
            for job in ImportJob.objects.filter(pk=job_id):
                job.queue_files(files)
    """
    files = {"exports/__init__.py": "", "exports/models.py": _JOB_MODEL, "exports/views.py": _CREATING_CALLER,
             "imports.py": other}
    assert check_project(tmp_path, files, "exports/models.py") == []


def test_under_flake8_the_callers_are_not_known(tmp_path):
    files = {"exports/__init__.py": "", "exports/models.py": _JOB_MODEL, "exports/views.py": _CREATING_CALLER}
    assert check_project(tmp_path, files, "exports/models.py", cross_file=False) == [11]


_METERED_MODEL = """
    from sqlalchemy import Column, Integer
    from sqlalchemy.orm import declarative_base

    Base = declarative_base()


    class ApiKey(Base):
        __tablename__ = "api_keys"
        id = Column(Integer, primary_key=True)
        uses = Column(Integer, default=0)

        def record_use(self):
            self.uses += 1
"""


def test_model_method_nothing_calls_is_dead_code(tmp_path):
    files = {"keys/__init__.py": "", "keys/models.py": _METERED_MODEL,
             "tests/test_keys.py": "from keys.models import ApiKey\n\ndef test_it():\n    ApiKey().record_use()\n"}
    assert check_project(tmp_path, files, "keys/models.py") == []


def test_model_method_a_request_calls_on_a_loaded_row_is_reported(tmp_path):
    service = """
        from keys.models import ApiKey


        async def authenticate(session, key_id):
            key = await session.get(ApiKey, key_id)
            key.record_use()
            await session.commit()
    """
    files = {"keys/__init__.py": "", "keys/models.py": _METERED_MODEL, "keys/service.py": service}
    assert check_project(tmp_path, files, "keys/models.py") == [14]


def test_caller_that_relocks_the_row_first_serialises_the_writers(tmp_path):
    service = """
        from keys.models import ApiKey


        async def authenticate(session, *, key: ApiKey):
            await session.refresh(key, with_for_update=True)
            key.record_use()
            session.add(key)
    """
    files = {"keys/__init__.py": "", "keys/models.py": _METERED_MODEL, "keys/service.py": service}
    assert check_project(tmp_path, files, "keys/models.py") == []


def test_helper_changing_its_parameter_follows_the_callers(tmp_path):
    helpers = """
        def bump_and_save(counter, by):
            counter.value += by
            counter.save()
    """
    fresh_caller = """
        from app.helpers import bump_and_save
        from app.models import Counter


        def seed(name):
            counter = Counter(name=name)
            bump_and_save(counter, 1)
    """
    loading_caller = """
        from app.helpers import bump_and_save
        from app.models import Counter


        def hit(name):
            bump_and_save(Counter.objects.get(name=name), 1)
    """
    files = {"app/__init__.py": "", "app/models.py": "from django.db import models\n", "app/helpers.py": helpers,
             "app/seed.py": fresh_caller}
    assert check_project(tmp_path, files, "app/helpers.py") == []
    project.clear_cache()
    files["app/hits.py"] = loading_caller
    assert check_project(tmp_path, files, "app/helpers.py") == [3]


def test_library_object_is_no_row_but_a_project_class_of_that_shape_is(tmp_path):
    source = """
        import slidekit
        from app.sheets import load_sheet


        def stamp(path):
            deck = slidekit.load(path)
            deck.revision += 1
            deck.save(path)


        def stamp_project(path):
            sheet = load_sheet(path)
            sheet.revision += 1
            sheet.save()
    """
    files = {"app/__init__.py": "", "app/sheets.py": "def load_sheet(path):\n    return path\n",
             "app/stamp.py": source}
    assert check_project(tmp_path, files, "app/stamp.py") == [14]


# -- the guard fits the column ------------------------------------------------------------------------------


def test_text_and_json_columns_get_no_arithmetic_fix(tmp_path):
    source = """
        from django.db import models


        class Note(models.Model):
            body = models.TextField()
            tags = models.JSONField(default=list)
            hits = models.IntegerField(default=0)


        def append_line(note_id, line):
            note = Note.objects.get(pk=note_id)
            note.body = note.body + line
            note.save()


        def tag(note_id, tag):
            note = Note.objects.get(pk=note_id)
            note.tags = note.tags + [tag]
            note.save()


        def hit(note_id):
            note = Note.objects.get(pk=note_id)
            note.hits = note.hits + 1
            note.save()
    """
    path = write_source(tmp_path, "notes/models.py", source)
    found = {d.line: d for d in check_source(Path(path).read_bytes(), path, from_mapping({}, root=str(tmp_path)))
             if d.code == "OG301"}
    assert sorted(found) == [13, 19, 25]
    for line, kind in ((13, "text"), (19, "json")):
        assert f"a {kind} column" in found[line].suggestion
        assert "F(" not in found[line].suggestion.replace("Concat(F(", "")
        assert found[line].fix is None
    assert 'F("hits") + 1' in found[25].suggestion and found[25].fix is not None


# -- shared stores ------------------------------------------------------------------------------------------

_CACHE_VARIANTS = {
    "django cache, setdefault chain": """
        from django.core.cache import cache


        def record(tenant, channel):
            totals = cache.get(f"t:{tenant}", {})
            totals.setdefault(channel, {"n": 0})["n"] += 1
            cache.set(f"t:{tenant}", totals)  # expect
    """,
    "renamed, key in a local, alias import": """
        from django.core.cache import cache as shared


        def tally(org, kind):
            key = "tally:" + str(org)
            counts = shared.get(key) or {}
            bucket = counts.get(kind)
            if bucket is not None:
                bucket.append(1)
            shared.set(key, counts, 60)  # expect
    """,
    "redis module client, json round trip": """
        import json

        import redis

        client = redis.Redis()


        def rename(board, old, new):
            standings = json.loads(client.get(board) or "{}")
            for team, row in standings.items():
                if row["name"] == old:
                    row["name"] = new
            client.set(board, json.dumps(standings))  # expect
    """,
}


@pytest.mark.parametrize("name", sorted(_CACHE_VARIANTS))
def test_value_changed_in_place_and_set_back_whole(name, tmp_path):
    source = textwrap.dedent(_CACHE_VARIANTS[name])
    expected = [i for i, line in enumerate(source.splitlines(), 1) if line.endswith("# expect")]
    path = write_source(tmp_path, "app/metrics.py", source)
    found = check_source(Path(path).read_bytes(), path, from_mapping({}, root=str(tmp_path)))
    assert sorted(d.line for d in found if d.code == "OG301") == expected


def test_per_process_cache_has_no_second_writer(tmp_path):
    settings = "INSTALLED_APPS = []\nROOT_URLCONF = 'app.urls'\n"
    files = {"app/__init__.py": "", "app/settings.py": settings,
             "app/metrics.py": _CACHE_VARIANTS["django cache, setdefault chain"]}
    assert check_project(tmp_path, files, "app/metrics.py") == []


_STORE = """
    class NotebookStore:
        def load_notebook(self, nid): ...
        def save_notebook(self, nid, data): ...


    notebooks = NotebookStore()
"""


@pytest.mark.parametrize("caller, expected", [
    ("from api.storage import notebooks\n\n\ndef edit(nid, changes):\n"
     "    current = notebooks.load_notebook(nid)\n    merged = {**current, **changes}\n"
     "    notebooks.save_notebook(nid, merged)\n", [6]),
    ("import api.storage as st\n\n\ndef edit(nid, page):\n"
     "    book = st.notebooks.load_notebook(nid)\n    book['pages'].append(page)\n"
     "    st.notebooks.save_notebook(nid, book)\n", [6]),
    ("from api.storage import NotebookStore\n\n\ndef edit(store: NotebookStore, nid, n):\n"
     "    count = store.load_notebook(nid)\n    store.save_notebook(nid, count + n)\n", [6]),
    # an untyped parameter may be any object: no evidence it is a store
    ("def edit(store, nid, changes):\n    current = store.load_notebook(nid)\n"
     "    store.save_notebook(nid, {**current, **changes})\n", []),
    # another key, and a value that does not come from the read
    ("from api.storage import notebooks\n\n\ndef copy(src, dst, changes):\n"
     "    current = notebooks.load_notebook(src)\n    notebooks.save_notebook(dst, {**current, **changes})\n"
     "    notebooks.save_notebook(src, changes)\n", []),
])
def test_keyed_store_round_trip(caller, expected, tmp_path):
    files = {"api/__init__.py": "", "api/storage.py": _STORE, "api/edit.py": caller}
    assert check_project(tmp_path, files, "api/edit.py") == expected


# -- markers checked then set (OG302) ------------------------------------------------------------------------


@pytest.mark.parametrize("source, expected", [
    ("from django.core.cache import cache\nfrom app.mail import send\n\n\ndef once(pk):\n"
     "    if not cache.get(f'sent:{pk}'):\n        send(pk)\n        cache.set(f'sent:{pk}', 1)\n", [8]),
    # renamed helpers, keyword argument
    ("from django.core.cache import cache as c\nfrom app.mail import send\n\n\n"
     "def key_for(order):\n    return 'o:%s' % order.pk\n\n\n"
     "def done(order):\n    return c.get(key_for(order)) is not None\n\n\n"
     "def mark(order):\n    k = key_for(order)\n    c.set(k, 'yes', timeout=60)\n\n\n"
     "def ship(order):\n    if done(order=order):\n        return\n    send(order)\n    mark(order)\n", [22]),
    # the claim is atomic
    ("from django.core.cache import cache\nfrom app.mail import send\n\n\ndef once(pk):\n"
     "    if cache.add(f'sent:{pk}', 1):\n        send(pk)\n", []),
    # another key is set
    ("from django.core.cache import cache\nfrom app.mail import send\n\n\ndef once(pk):\n"
     "    if not cache.get(f'sent:{pk}'):\n        send(pk)\n        cache.set(f'seen:{pk}', 1)\n", []),
    # NX makes the set the claim
    ("import redis\nfrom app.mail import send\n\nr = redis.Redis()\n\n\ndef once(pk):\n"
     "    if not r.get(f'sent:{pk}'):\n        send(pk)\n        r.set(f'sent:{pk}', 1, nx=True)\n", []),
])
def test_marker_checked_then_set(source, expected, tmp_path):
    path = write_source(tmp_path, "app/jobs.py", source)
    found = check_source(Path(path).read_bytes(), path, from_mapping({}, root=str(tmp_path)))
    assert sorted(d.line for d in found if d.code == "OG302") == expected


# -- set-based ORM statements -------------------------------------------------------------------------------


@pytest.mark.parametrize("expression, kind", [
    ("Cart.objects.filter(a=1).delete()", "delete"),
    ("Cart.objects.filter(a=1).exclude(b=2).only('pk').delete()", "delete"),
    ("session.query(Cart).filter(Cart.a == 1).delete(synchronize_session=False)", "delete"),
    ("Cart.objects.filter(a=1).update(state='x')", "update"),
    ("session.query(Cart).filter_by(a=1).update({'state': 'x'})", "update"),
])
def test_orm_set_statement(expression, kind):
    statement = orm_set_statement(ast.parse(expression, mode="eval").body)
    assert statement is not None and statement.kind == kind


@pytest.mark.parametrize("expression", [
    "session.delete(cart)",  # one instance
    "Cart.objects.all().delete()",  # no filter: not this shape
    "cart.items.update(state='x')",  # no filter in the chain
    "Cart.objects.filter(a=1).values('pk')",  # not a run
    "Cart.objects.filter(a=1).annotate(n=Count('x')).first().delete()",  # one row loaded, then deleted
])
def test_not_an_orm_set_statement(expression):
    assert orm_set_statement(ast.parse(expression, mode="eval").body) is None


def test_object_a_library_context_manager_opens_is_no_row(tmp_path):
    source = """
        import slidekit


        def merge_decks(first, second):
            with slidekit.open(first) as deck, slidekit.open(second) as other:
                deck.slides.extend(other.slides)
                deck.revision += 1
                deck.save(first)
    """
    files = {"app/__init__.py": "", "app/decks.py": "from django.db import models\n" + textwrap.dedent(source)}
    assert check_project(tmp_path, files, "app/decks.py") == []


def test_list_added_to_a_field_is_growth_not_arithmetic(tmp_path):
    source = """
        from app.db import db
        from app.models import Team


        def admit(team_id, members):
            team = Team.query.get(team_id)
            newcomers = [m for m in members if m not in team.members]
            team.members += newcomers
            db.session.commit()
    """
    django = """
        from django.shortcuts import get_object_or_404

        from app.models import Board


        def pin(board_id, card):
            board = get_object_or_404(Board, pk=board_id)
            board.pinned += [card]
            board.save()
    """
    files = {"app/__init__.py": "", "app/teams.py": source, "app/boards.py": django}
    assert check_project(tmp_path, files, "app/teams.py") == []
    assert check_project(tmp_path, files, "app/boards.py") == [9]


def test_row_created_only_when_the_load_found_none_is_still_shared(tmp_path):
    source = """
        from sqlalchemy import select

        from app.db import db
        from app.models import Tally


        def bump(name):
            tally = db.session.scalars(select(Tally).where(Tally.name == name)).one_or_none()
            if tally is None:
                tally = Tally(name=name, value=0)
                db.session.add(tally)
            tally.value += 1  # expect
            db.session.commit()


        def seed(name):
            tally = db.session.scalars(select(Tally).where(Tally.name == name)).one_or_none()
            tally = Tally(name=name, value=0)
            tally.value += 1
            db.session.add(tally)
            db.session.commit()
    """
    files = {"app/__init__.py": "", "app/tally.py": source}
    expected = [i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if line.endswith("# expect")]
    assert check_project(tmp_path, files, "app/tally.py") == expected


SESSION_FACTORY = """\
    from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

    engine = create_async_engine("postgresql+asyncpg://app@db/app")
    Session = async_sessionmaker(engine)
"""
VIEW_COUNTER = """\
    from shop.db import Session as open_session
    from shop.models import Product


    async def count_view(product_id: int) -> int:
        async with open_session() as session:
            product = await session.get(Product, product_id)
            product.views = product.views + 1
            await session.commit()
        return product.views
"""


@pytest.mark.parametrize("cross_file, expected", [(True, [8]), (False, [])])
def test_a_session_factory_made_in_another_module(tmp_path, cross_file, expected):
    """The module that counts never imports SQLAlchemy: the session is known from the factory's own module
    (read only when the run reads across files)."""
    files = {"shop/__init__.py": "", "shop/db.py": SESSION_FACTORY, "shop/models.py": "class Product:\n    pass\n",
             "shop/views.py": VIEW_COUNTER}
    assert check_project(tmp_path, files, "shop/views.py", cross_file=cross_file) == expected


FLASK_EXTENSIONS = """\
    from flask_sqlalchemy import SQLAlchemy

    db = SQLAlchemy()
"""
FLASK_MODELS = """\
    from library.extensions import db


    class Title(db.Model):
        id = db.Column(db.Integer, primary_key=True)
        copies_out = db.Column(db.Integer, default=0)


    class Shelf:
        query = None
"""
FLASK_VIEW = """\
    from library.extensions import db
    from library.models import {model}


    def lend(title_id):
        title = {model}.query.filter_by(id=title_id).first_or_404()
        title.copies_out += 1
        db.session.commit()
        return title.copies_out
"""


@pytest.mark.parametrize("model, expected", [("Title", [7]), ("Shelf", [])])
def test_a_flask_model_query_in_a_module_that_imports_only_the_model(tmp_path, model, expected):
    """``Title.query`` is a loader because ``Title`` derives from the extension's ``db.Model``, made in another
    module; a class of the same shape that nothing maps is not."""
    files = {"library/__init__.py": "", "library/extensions.py": FLASK_EXTENSIONS,
             "library/models.py": FLASK_MODELS, "library/views.py": FLASK_VIEW.format(model=model)}
    assert check_project(tmp_path, files, "library/views.py") == expected


# -- code only an operator runs ----------------------------------------------------------------------------
_SHIFT = """
    from shop.models import Event


    def shift_event(event_id, days):
        event = Event.objects.get(pk=event_id)
        event.day_count = event.day_count + days
        event.save()
"""
_SHIFT_MODEL = """
    from django.db import models


    class Event(models.Model):
        day_count = models.IntegerField(default=0)
"""
_SCRIPT = """
    import sys

    from shop.shifting import shift_event


    def main():
        shift_event(int(sys.argv[1]), int(sys.argv[2]))


    if __name__ == "__main__":
        main()
"""


@pytest.mark.parametrize("operator_file", ["scripts/shift_demo.py", "shop/management/commands/shift.py"])
def test_a_read_modify_write_only_an_operator_runs_is_one_process(tmp_path, operator_file):
    files = {"shop/__init__.py": "", "shop/models.py": _SHIFT_MODEL, "shop/shifting.py": _SHIFT,
             operator_file: _SCRIPT}
    assert check_project(tmp_path, files, "shop/shifting.py") == []


def test_the_same_helper_also_called_from_a_view_is_reported(tmp_path):
    view = """
        from shop.shifting import shift_event


        def shift_view(request, event_id):
            shift_event(event_id, int(request.POST["days"]))
    """
    files = {"shop/__init__.py": "", "shop/models.py": _SHIFT_MODEL, "shop/shifting.py": _SHIFT,
             "scripts/shift_demo.py": _SCRIPT, "shop/views.py": view}
    assert check_project(tmp_path, files, "shop/shifting.py") == [7]


_POINTS_MODELS = """
    from sqlalchemy import Integer
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class Card(Base):
        __tablename__ = "cards"
        id: Mapped[int] = mapped_column(primary_key=True)
        points: Mapped[int] = mapped_column(Integer, default=0)
"""
_POINTS_HELPER = """
    def add_points(card, gained):
        card.points = card.points + gained


    def describe(card):
        return f"{card.id}: {card.points}"
"""
_POINTS_ROUTE = """
    from fastapi import FastAPI
    from sqlalchemy.orm import Session

    {imports}
    from loyalty.models import Card

    api = FastAPI()


    @api.post("/cards/{{card_id}}/earn")
    def earn(card_id: int, gained: int, db: Session):
        card = db.get(Card, card_id)
        {call}
        db.commit()
"""


@pytest.mark.parametrize("imports, call, flagged", [
    ("from loyalty import rewards", "rewards.add_points(card, gained)", [14]),
    ("from loyalty.rewards import add_points", "add_points(card, gained)", [14]),
    ("from loyalty.rewards import add_points as credit", "credit(card, gained)", [14]),
    ("import loyalty.rewards", "loyalty.rewards.add_points(card, gained)", [14]),
    ("from loyalty import rewards", "rewards.describe(card)", []),  # reads only
])
def test_a_row_changed_by_a_helper_of_another_module(tmp_path, imports, call, flagged):
    files = {"loyalty/__init__.py": "", "loyalty/models.py": _POINTS_MODELS, "loyalty/rewards.py": _POINTS_HELPER,
             "loyalty/routes.py": _POINTS_ROUTE.format(imports=imports, call=call)}
    assert check_project(tmp_path, files, "loyalty/routes.py") == flagged
    # One file alone cannot know what the imported helper does: silent.
    assert check_project(tmp_path, files, "loyalty/routes.py", cross_file=False) == []
