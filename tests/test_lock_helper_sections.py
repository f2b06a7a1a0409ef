"""OG301: a read-modify-write inside the block of a project context manager that waits for a blocking advisory
lock before it yields is serialised (every caller waits for the one before it); a helper that only tries the
lock, or unlocks before it yields, holds nothing over the block."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LOCKS = """\
    from contextlib import asynccontextmanager

    from sqlalchemy import text


    @asynccontextmanager
    async def tab_lock(session, tab_id):
        await session.execute(text("{sql}"), {{"k": tab_id}})
        {after}
        yield
"""

SERVICE = """\
    from sqlalchemy import select

    from bar.locks import tab_lock
    from bar.models import Tab


    async def add_round(session, tab_id: int, cents: int) -> int:
        async with tab_lock(session, tab_id):
            tab = await session.scalar(select(Tab).where(Tab.id == tab_id))
            tab.total_cents = tab.total_cents + cents
            await session.commit()
        return tab.total_cents
"""

MODELS = """\
    from sqlalchemy import Integer
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class Tab(Base):
        __tablename__ = "tabs"
        id: Mapped[int] = mapped_column(Integer, primary_key=True)
        total_cents: Mapped[int] = mapped_column(Integer)
"""


@pytest.mark.parametrize("sql, after, expected", [
    ("SELECT pg_advisory_xact_lock(:k)", "pass", []),
    ("SELECT pg_try_advisory_xact_lock(:k)", "pass", [(10, "OG301")]),
    ("SELECT pg_advisory_lock(:k)", 'await session.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": tab_id})',
     [(10, "OG301")]),
])
def test_a_section_a_lock_helper_holds(tmp_path, sql, after, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'bar'\n", "bar/__init__.py": "",
                     "bar/models.py": MODELS, "bar/locks.py": LOCKS.format(sql=sql, after=after),
                     "bar/service.py": SERVICE})
    assert findings(tmp_path, "bar/service.py", codes=("OG301",)) == expected
