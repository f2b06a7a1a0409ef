"""OG301: a list or mapping read from a MongoDB document, changed in place (or filtered) and set back whole.

``hooks = doc.get("webhooks", [])`` … ``hooks.append(hook)`` … ``update_one(..., {"$set": {"webhooks": hooks}})``: two
requests read the same list and the later ``$set`` drops the other's entry, as an arithmetic change of a number
would lose the other's update.  A ``$push`` (or a ``$set`` of a value not taken from the read) is no such write.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

REPOSITORY = """\
    from pymongo.collection import Collection


    class Settings:
        def __init__(self, collection: Collection) -> None:
            self._col = collection

        def get(self, wid):
            return self._col.find_one({"_id": wid}) or {"_id": wid, "webhooks": []}

        def change(self, wid, hook, gone):
            doc = self.get(wid)
            hooks = doc.get("webhooks", [])
            {change}
            self._col.update_one({"_id": wid}, {write})
"""


@pytest.mark.parametrize("change, write_, expected", [
    ("hooks.append(hook)", '{"$set": {"webhooks": hooks}}', [(15, "OG301")]),
    ("hooks[0] = hook", '{"$set": {"webhooks": hooks}}', [(15, "OG301")]),
    ('hooks = [h for h in hooks if h["id"] != gone]', '{"$set": {"webhooks": hooks}}', [(15, "OG301")]),
    ("pass", '{"$push": {"webhooks": hook}}', []),
    ("pass", '{"$set": {"webhooks": [hook]}}', []),
])
def test_a_list_read_changed_and_set_back(tmp_path, change, write_, expected):
    write(tmp_path, {"hooks/__init__.py": "",
                     "hooks/repository.py": REPOSITORY.replace("{change}", change).replace("{write}", write_)})
    assert findings(tmp_path, "hooks/repository.py", codes=("OG301",)) == expected
