"""A branch no database the project can connect with takes races nothing: the dialects come from the
drivers its dependency files name (every extra and group), SQLite always; with no driver named, or checked
one file at a time, every branch counts."""
from __future__ import annotations

import pytest

from onceguard.project.index import clear_cache
from onceguard.testing import findings_in_written_file, write_source as write

USAGE = """\
    from sqlalchemy import select
    from sqlalchemy.dialects.postgresql import insert as pg_insert

    from app.models import Tally


    async def add_usage(session, key, amount):
        dialect = session.bind.dialect.name
        if dialect {test}:
            upsert = pg_insert(Tally).values(key=key, total=amount)
            await session.execute(upsert.on_conflict_do_update(
                index_elements=["key"], set_={{"total": Tally.total + amount}}))
        else:
            row = (await session.execute(select(Tally).where(Tally.key == key))).scalar_one()
            row.total = row.total + amount
        await session.commit()
"""
RACY_LINE = 15

PYPROJECT = """\
    [project]
    name = "app"
    dependencies = ["sqlalchemy>=2", {drivers}]
    [project.optional-dependencies]
    extra = [{extra}]
"""


@pytest.fixture(autouse=True)
def _fresh_project_caches():
    clear_cache()
    yield
    clear_cache()


def lines(tmp_path, source: str, cross_file: bool = True):
    return [d.line for d in findings_in_written_file(tmp_path, "app/usage.py", source, "OG301", cross_file)]


@pytest.mark.parametrize("test", ['in ("postgresql", "sqlite")', '!= "mysql"'])
def test_the_fallback_no_declared_driver_takes_is_not_reported(tmp_path, test):
    write(tmp_path, "pyproject.toml", PYPROJECT.format(drivers='"asyncpg>=0.29"', extra='"aiosqlite"'))
    # With ``!= "mysql"`` the else is the MySQL branch, and no MySQL driver is declared.
    assert lines(tmp_path, USAGE.format(test=test)) == []


def test_a_driver_in_any_extra_makes_the_fallback_possible(tmp_path):
    write(tmp_path, "pyproject.toml", PYPROJECT.format(drivers='"asyncpg>=0.29"', extra='"PyMySQL>=1"'))
    assert lines(tmp_path, USAGE.format(test='in ("postgresql", "sqlite")')) == [RACY_LINE]


def test_requirement_files_and_poetry_tables_are_read(tmp_path):
    write(tmp_path, "requirements/base.txt", "psycopg2-binary==2.9.9  # the database\n-r other.txt\n")
    assert lines(tmp_path, USAGE.format(test='in ("postgresql", "sqlite")')) == []
    clear_cache()
    write(tmp_path, "pyproject.toml", '[tool.poetry.group.db.dependencies]\nmysqlclient = "^2"\n')
    assert lines(tmp_path, USAGE.format(test='in ("postgresql", "sqlite")')) == [RACY_LINE]


def test_an_elif_chain_excludes_what_the_tests_before_it_took(tmp_path):
    write(tmp_path, "setup.py", 'from setuptools import setup\nsetup(name="app", install_requires=["asyncpg"])\n')
    chain = USAGE.format(test='== "postgresql"').replace(
        "        else:\n", '        elif dialect == "sqlite":\n            pass\n        else:\n')
    assert lines(tmp_path, chain) == []
    # The same fallback reached by SQLite (not tested before it) is possible: SQLite needs no driver.
    open_chain = USAGE.format(test='== "postgresql"')
    assert lines(tmp_path, open_chain) == [RACY_LINE]


def test_no_driver_named_or_one_file_alone_says_nothing(tmp_path):
    write(tmp_path, "pyproject.toml", PYPROJECT.format(drivers='"httpx"', extra=""))
    source = USAGE.format(test='in ("postgresql", "sqlite")')
    assert lines(tmp_path, source) == [RACY_LINE]
    clear_cache()
    write(tmp_path, "pyproject.toml", PYPROJECT.format(drivers='"asyncpg"', extra=""))
    assert lines(tmp_path, source, cross_file=False) == [RACY_LINE]


MYSQL_ONLY = """\
    from sqlalchemy import select

    from app.models import Tally


    def add_usage(session, key, amount):
        if session.bind.dialect.name == "mysql":
            row = session.execute(select(Tally).where(Tally.key == key)).scalar_one()
            row.total = row.total + amount
            session.commit()
"""


def test_a_branch_for_a_dialect_the_project_cannot_use_is_not_reported(tmp_path):
    write(tmp_path, "pyproject.toml", PYPROJECT.format(drivers='"psycopg[binary]>=3"', extra=""))
    assert lines(tmp_path, MYSQL_ONLY) == []
    clear_cache()
    write(tmp_path, "pyproject.toml", PYPROJECT.format(drivers='"psycopg[binary]>=3"', extra='"aiomysql"'))
    assert lines(tmp_path, MYSQL_ONLY) == [9]


def test_every_file_that_read_the_dependency_files_depends_on_them(tmp_path):
    # A cached result must be thrown away when pyproject.toml changes, for each file judged by it, also the
    # second file of a directory whose dependency files were already read for the first.
    from onceguard.config import from_mapping
    from onceguard.engine import runner

    pyproject = write(tmp_path, "pyproject.toml", PYPROJECT.format(drivers='"asyncpg"', extra=""))
    first = write(tmp_path, "app/usage.py", USAGE.format(test='in ("postgresql", "sqlite")'))
    second = write(tmp_path, "app/totals.py", USAGE.format(test='== "postgresql"').replace("add_usage", "add_total"))
    config = from_mapping({}, root=str(tmp_path))
    for path in (first, second):
        *_, others = runner.check_one((path, config, None))
        assert pyproject in others, path
