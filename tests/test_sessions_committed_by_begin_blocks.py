"""A row loaded through the session a helper is handed and changed there is written back by the caller's
``with factory.begin() as session:`` (or ``with session.begin():``) block, which commits when it ends, as surely as by
an explicit ``session.commit()``."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """
    from sqlalchemy import Integer, create_engine
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, sessionmaker


    class Base(DeclarativeBase):
        pass


    class Member(Base):
        __tablename__ = "members"
        id: Mapped[int] = mapped_column(Integer, primary_key=True)
        points: Mapped[int] = mapped_column(Integer, default=0)


    Session = sessionmaker(create_engine("postgresql://db/loyalty"))
    """

POINTS = """
    from sqlalchemy.orm import Session

    from .models import Member


    def award(session: Session, member_id: int, earned: int) -> None:
        member = session.get(Member, member_id)
        member.points = member.points + earned
    """

CALLERS = {
    "factory": """
        from .models import Session
        from .points import award


        def order_paid(member_id, earned):
            with Session.begin() as session:
                award(session, member_id, earned)
        """,
    "session": """
        from .models import Session
        from .points import award


        def order_paid(member_id, earned):
            with Session() as session, session.begin():
                award(session, member_id, earned)
        """,
    "no commit": """
        from .models import Session
        from .points import award


        def order_paid(member_id, earned):
            with Session() as session:
                award(session, member_id, earned)
        """,
}


@pytest.mark.parametrize("caller, expected", [("factory", [(9, "OG301")]), ("session", [(9, "OG301")]),
                                              ("no commit", [])])
def test_a_handed_session_committed_when_its_block_ends(tmp_path, caller, expected):
    write(tmp_path, {"loyalty/__init__.py": "", "loyalty/models.py": MODELS, "loyalty/points.py": POINTS,
                     "loyalty/actors.py": CALLERS[caller]})
    assert findings(tmp_path, "loyalty/points.py", codes=("OG301",)) == expected
