"""OG301: instances changed one by one and written back together.

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
