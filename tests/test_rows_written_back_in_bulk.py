"""OG301: instances changed one by one and written back together, or through a copy merged back.

``Post.objects.bulk_update(posts, ["views"])`` writes each instance of the list with the value the caller
computed from the one it loaded, as ``post.save()`` would; so does a session's ``add_all(rows)`` before the
commit.  The list holds the instance when the function loops over it with the instance as its target, or
appends the instance to it.  A bulk write of other fields, or arithmetic left to the database, is no lost
update.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

DJANGO_FLUSH = """\
    from posts.models import Post


    def flush_view_counts(counts):
        posts = list(Post.objects.filter(pk__in=counts.keys()).only("id", "views"))
        for post in posts:
            post.views += counts[post.id]
        Post.objects.bulk_update(posts, {fields}, batch_size=500)
"""


@pytest.mark.parametrize("fields, expected", [
    ('["views"]', [(7, "OG301")]),
    ('fields=["views", "title"]', [(7, "OG301")]),
    ("FIELDS", [(7, "OG301")]),  # (not written out: every field may be written)
    ('["title"]', []),
])
def test_a_list_written_back_with_bulk_update(tmp_path, fields, expected):
    write(tmp_path, {"posts/__init__.py": "", "posts/tasks.py": DJANGO_FLUSH.replace("{fields}", fields)})
    assert findings(tmp_path, "posts/tasks.py", codes=("OG301",)) == expected


APPENDED = """\
    from posts.models import Post


    async def flush_view_counts(counts):
        changed = []
        async for post in Post.objects.filter(pk__in=counts.keys()):
            post.views = post.views + counts[post.id]
            {kept}
        await Post.objects.abulk_update(changed, fields=["views"])
"""


@pytest.mark.parametrize("kept, expected", [
    ("changed.append(post)", [(7, "OG301")]),
    ("print(post)", []),  # (the list written back never held it)
])
def test_a_list_the_changed_instances_are_appended_to(tmp_path, kept, expected):
    write(tmp_path, {"posts/__init__.py": "", "posts/tasks.py": APPENDED.replace("{kept}", kept)})
    assert findings(tmp_path, "posts/tasks.py", codes=("OG301",)) == expected


def test_arithmetic_left_to_the_database_is_no_lost_update(tmp_path):
    write(tmp_path, {"posts/__init__.py": "", "posts/tasks.py": """\
        from django.db.models import F

        from posts.models import Post


        def flush_view_counts(counts):
            for post_id, count in sorted(counts.items()):
                Post.objects.filter(pk=post_id).update(views=F("views") + count)
    """})
    assert findings(tmp_path, "posts/tasks.py", codes=("OG301",)) == []


SESSION = """\
    def bump(factory, rows):
        for row in rows:
            row.hits += 1
        with factory() as session:
            session.{add}
            session.commit()
"""


@pytest.mark.parametrize("add, expected", [("add_all(rows)", [(3, "OG301")]), ("add_all(others)", [])])
def test_a_list_added_to_a_session_and_committed(tmp_path, add, expected):
    write(tmp_path, {"shop/__init__.py": "", "shop/counters.py": SESSION.replace("{add}", add)})
    assert findings(tmp_path, "shop/counters.py", codes=("OG301",)) == expected


DTO = """\
    from pydantic import BaseModel
    from sqlalchemy.orm import Session

    from meter.models import Account


    class AccountDTO(BaseModel):
        id: int
        credits_used: int


    def load(session: Session, account_id: int, *, lock: bool = False) -> AccountDTO:
        row = session.get(Account, account_id, with_for_update=lock)
        return AccountDTO.model_validate(row, from_attributes=True)


    def consume(session: Session, account_id: int, credits: int) -> None:
        account = load(session, account_id{lock})
        account.credits_used += credits
        session.merge(Account(**account.model_dump()))
        session.commit()
"""


@pytest.mark.parametrize("lock, expected", [("", [(19, "OG301")]), (", lock=True", [])])
def test_a_copy_of_the_row_merged_back(tmp_path, lock, expected):
    write(tmp_path, {"meter/__init__.py": "", "meter/usage.py": DTO.replace("{lock}", lock)})
    assert findings(tmp_path, "meter/usage.py", codes=("OG301",)) == expected
