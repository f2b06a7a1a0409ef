"""OG603 unguarded start-up seeding: the shapes the rule doc does not show, and the lookalikes it must leave alone."""
from __future__ import annotations

from onceguard.testing import findings_in_written_file, write_source as write


def og603(tmp_path, path: str, source: str, cross_file: bool = False):
    return findings_in_written_file(tmp_path, path, source, "OG603", cross_file)


SEEDING_MODULE = """
    import time

    from sqlalchemy import select

    from app.db import get_db
    from app.orm import Option


    class Options:
        @staticmethod
        async def fill_defaults(defaults: dict) -> None:
            async with get_db() as db:
                result = await db.execute(select(Option.key))
                known_keys = {row[0] for row in result.all()}
                for key, value in defaults.items():
                    if key not in known_keys:
                        db.add(Option(key=key, value=value, updated_at=int(time.time())))
                await db.commit()
"""

LIFESPAN_MODULE = """
    from contextlib import asynccontextmanager

    from fastapi import FastAPI

    from app.options import Options


    @asynccontextmanager
    async def lifespan(app):
        await Options.fill_defaults({"theme": "light"})
        yield


    app = FastAPI(lifespan=lifespan)
"""

ROUTE_MODULE = """
    from fastapi import APIRouter

    from app.options import Options

    router = APIRouter()


    @router.post("/options/reset")
    async def reset_options():
        await Options.fill_defaults({"theme": "light"})
        return {}
"""


def test_seeding_in_another_module_reached_from_the_lifespan_is_reported_on_the_check(tmp_path):
    write(tmp_path, "app/__init__.py", "")
    write(tmp_path, "app/main.py", LIFESPAN_MODULE)
    found = og603(tmp_path, "app/options.py", SEEDING_MODULE, cross_file=True)
    assert [d.line for d in found] == [17]
    assert "lifespan" in found[0].message and "app/main.py" in found[0].message
    assert "ON CONFLICT DO NOTHING" in found[0].suggestion
    assert "advisory" in found[0].suggestion


def test_without_a_start_up_caller_the_same_code_is_silent(tmp_path):
    write(tmp_path, "app/__init__.py", "")
    write(tmp_path, "app/routes.py", ROUTE_MODULE)
    assert og603(tmp_path, "app/options.py", SEEDING_MODULE, cross_file=True) == []
    # one file alone (flake8) cannot know who calls it
    assert og603(tmp_path, "app/options.py", SEEDING_MODULE) == []


def test_a_loader_factory_whose_nested_def_is_only_returned_is_not_start_up(tmp_path):
    source = """
        from django.apps import AppConfig


        def make_loader(name):
            from .models import Dataset

            def load():
                if not Dataset.objects.filter(name=name).exists():
                    Dataset.objects.create(name=name)
            return load


        class DataConfig(AppConfig):
            name = "data"

            def ready(self):
                self.loader = make_loader("examples")
    """
    assert og603(tmp_path, "data/apps.py", source) == []


def test_a_nested_helper_called_from_start_up_with_a_retry_loop_is_reported(tmp_path):
    source = """
        from django.apps import AppConfig


        class UsersConfig(AppConfig):
            name = "users"

            def ready(self):
                from .models import Person

                def make_admin():
                    Person.objects.create_superuser(username="admin", password="x")

                admin = Person.objects.filter(is_staff=True).first()
                if admin is None:
                    while True:
                        try:
                            make_admin()
                            break
                        except Exception:
                            pass
    """
    found = og603(tmp_path, "users/apps.py", source)
    assert [d.line for d in found] == [15]
    assert "`Person`" in found[0].message


def test_check_of_one_model_and_insert_of_another_is_not_seeding(tmp_path):
    source = """
        from django.apps import AppConfig


        class ShopConfig(AppConfig):
            name = "shop"

            def ready(self):
                from .models import Order, AuditEntry

                if Order.objects.filter(state="open").exists():
                    AuditEntry.objects.create(text="booted with open orders")
    """
    assert og603(tmp_path, "shop/apps.py", source) == []


def test_save_of_a_new_instance_and_add_of_a_bound_instance_are_inserts(tmp_path):
    source = """
        from flask import Flask
        from sqlalchemy import select

        from .db import db
        from .models import Role, Site


        def create_app():
            app = Flask(__name__)
            with app.app_context():
                if Site.objects.filter(domain="localhost").count() == 0:
                    Site(domain="localhost").save()
                viewer = db.session.scalar(select(Role).where(Role.name == "viewer"))
                if not viewer:
                    role = Role(name="viewer")
                    db.session.add(role)
                    db.session.commit()
            return app
    """
    found = og603(tmp_path, "web/app.py", source)
    assert sorted(d.line for d in found) == [12, 15]


def test_guards_that_make_the_second_replica_safe_are_silent(tmp_path):
    source = """
        from django.apps import AppConfig


        class CatalogConfig(AppConfig):
            name = "catalog"

            def ready(self):
                from .models import Category, Unit

                if not Category.objects.filter(slug="misc").exists():
                    Category.objects.bulk_create([Category(slug="misc")], ignore_conflicts=True)
                with seeding_lock("units"):
                    if not Unit.objects.filter(code="kg").exists():
                        Unit.objects.create(code="kg")
    """
    assert og603(tmp_path, "catalog/apps.py", source) == []


def test_seeding_in_a_cli_command_and_in_a_script_is_silent(tmp_path):
    command = """
        import click

        from .models import Plan


        @click.command()
        def seed():
            if not Plan.objects.filter(code="free").exists():
                Plan.objects.create(code="free")
    """
    assert og603(tmp_path, "billing/cli.py", command) == []
    script = """
        from billing.models import Plan

        if not Plan.objects.filter(code="free").exists():
            Plan.objects.create(code="free")
    """
    assert og603(tmp_path, "scripts/seed_plans.py", script) == []


def test_tests_are_not_checked(tmp_path):
    source = """
        from django.apps import AppConfig


        class BillingConfig(AppConfig):
            name = "billing"

            def ready(self):
                from .models import Plan

                if not Plan.objects.filter(code="free").exists():
                    Plan.objects.create(code="free")
    """
    assert og603(tmp_path, "tests/test_apps.py", source) == []
    assert len(og603(tmp_path, "billing/apps.py", source)) == 1


def test_a_row_keyed_by_the_replica_itself_is_not_shared_seeding(tmp_path):
    source = """
        import socket

        from django.apps import AppConfig


        class NodesConfig(AppConfig):
            name = "nodes"

            def ready(self):
                from .models import Node

                host = socket.gethostname()
                if not Node.objects.filter(hostname=host).exists():
                    Node.objects.create(hostname=host)
                if not Node.objects.filter(hostname="primary").exists():
                    Node.objects.create(hostname="primary")
    """
    found = og603(tmp_path, "nodes/apps.py", source)
    assert [d.line for d in found] == [16]
