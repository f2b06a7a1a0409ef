"""A value computed from a row's field and handed, with the row, to a project def that sets that field to it
(``tiers.set_remaining(tier, tier.remaining - n)`` with ``tier.remaining = remaining`` in the repository): the field
is changed from its own value as surely as if the assignment were written in the caller, which writes it back."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """
    from sqlalchemy import Integer
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class Tier(Base):
        __tablename__ = "tiers"
        id: Mapped[int] = mapped_column(Integer, primary_key=True)
        remaining: Mapped[int] = mapped_column(Integer)
    """

REPOSITORY = """
    from sqlalchemy.orm import Session

    from .models import Tier


    class Tiers:
        def __init__(self, session: Session) -> None:
            self.session = session

        def get(self, tier_id: int) -> Tier | None:
            return self.session.get(Tier, tier_id)

        def set_remaining(self, tier: Tier, remaining: int) -> None:
            tier.remaining = remaining
            self.session.add(tier)
    """

SERVICE = """
    from sqlalchemy.orm import Session

    from .repository import Tiers


    def buy(session: Session, tier_id: int, quantity: int) -> None:
        tiers = Tiers(session)
        tier = tiers.get(tier_id)
        if tier is None or tier.remaining < quantity:
            raise ValueError("sold out")
        tiers.set_remaining({handed})
        session.commit()
    """


@pytest.mark.parametrize("handed, expected", [
    ("tier, tier.remaining - quantity", [(12, "OG301")]),
    ("tier=tier, remaining=tier.remaining - quantity", [(12, "OG301")]),
    # a value that is not computed from the field it replaces: no stale read behind it
    ("tier, 0", []),
    ("tier, quantity - 1", []),
])
def test_a_field_set_through_a_repository_setter(tmp_path, handed, expected):
    write(tmp_path, {"shop/__init__.py": "", "shop/models.py": MODELS, "shop/repository.py": REPOSITORY,
                     "shop/service.py": SERVICE.format(handed=handed)})
    assert findings(tmp_path, "shop/service.py", codes=("OG301",)) == expected


def test_a_setter_of_another_field_is_no_change_of_this_one(tmp_path):
    other = REPOSITORY.replace("tier.remaining = remaining", "tier.reserved = remaining")
    write(tmp_path, {"shop/__init__.py": "", "shop/models.py": MODELS, "shop/repository.py": other,
                     "shop/service.py": SERVICE.format(handed="tier, tier.remaining - quantity")})
    assert findings(tmp_path, "shop/service.py", codes=("OG301",)) == []
