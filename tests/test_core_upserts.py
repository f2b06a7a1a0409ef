"""A SQLAlchemy Core upsert that sets a conflicting row to the values it was given
(``insert(T).values(rows).on_conflict_do_update(index_elements=..., set_={"price": stmt.excluded.price})``) leaves
the table as one run did, however many replicas send it with the same values; an upsert that adds to what the row
holds, or a plain insert, does not."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

JOB = """
    import schedule

    from sqlalchemy import create_engine

    from quotes.saving import save_prices

    engine = create_engine("postgresql://quotes@db/quotes")


    def pull_prices() -> None:
        with engine.begin() as conn:
            save_prices(conn, [{"sku": "A-1", "day": "2024-05-01", "price": 12}])


    schedule.every(10).minutes.do(pull_prices)
    """

SAVING = """
    from sqlalchemy import Column, Date, Integer, MetaData, Numeric, String, Table, UniqueConstraint
    {imports}

    prices = Table(
        "prices", MetaData(),
        Column("id", Integer, primary_key=True),
        Column("sku", String, nullable=False),
        Column("day", Date, nullable=False),
        Column("price", Numeric, nullable=False),
        Column("hits", Integer, nullable=False, default=0),
        UniqueConstraint("sku", "day"),
    )


    def save_prices(conn, rows) -> None:
        {body}
    """

NAMED = """
        stmt = insert(prices).values(rows)
        stmt = stmt.on_conflict_do_update(index_elements=[prices.c.sku, prices.c.day], set_={set_})
        conn.execute(stmt)"""

CHAINED = """
        fresh = insert(prices).values(rows)
        conn.execute(fresh.on_conflict_do_update(index_elements=["sku", "day"], set_={set_}))"""

PG_IMPORT = "from sqlalchemy.dialects.postgresql import insert"
MODULE_IMPORT = "from sqlalchemy.dialects import sqlite"


def _project(tmp_path, body, set_, imports=PG_IMPORT):
    text = SAVING.format(imports=imports, body=body.format(set_=set_).strip())
    write(tmp_path, {"quotes/__init__.py": "", "quotes/jobs.py": JOB, "quotes/saving.py": text})
    return findings(tmp_path, "quotes/jobs.py")


@pytest.mark.parametrize("body", [NAMED, CHAINED])
@pytest.mark.parametrize("set_", ['{"price": stmt.excluded.price}', "dict(price=stmt.excluded.price)"])
def test_an_upsert_to_the_given_values_repeats_to_the_same_table(tmp_path, body, set_):
    if body is CHAINED:
        set_ = set_.replace("stmt.", "fresh.")
    assert _project(tmp_path, body, set_) == []


def test_the_dialect_insert_imported_through_its_module(tmp_path):
    body = NAMED.replace("insert(prices)", "sqlite.insert(prices)")
    assert _project(tmp_path, body, '{"price": stmt.excluded.price}', imports=MODULE_IMPORT) == []


@pytest.mark.parametrize("set_", ['{"hits": prices.c.hits + 1}', '{"price": prices.c.price + stmt.excluded.price}'])
def test_an_upsert_that_adds_to_the_row_runs_once_per_replica(tmp_path, set_):
    assert _project(tmp_path, NAMED, set_) == [(11, "OG201")]


def test_a_plain_insert_adds_a_row_per_replica(tmp_path):
    body = "\n    conn.execute(insert(prices).values(rows))"
    assert _project(tmp_path, body, "") == [(11, "OG201")]
