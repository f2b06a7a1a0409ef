"""A JSON document read with a plain SELECT, merged in Python (``{**doc, **change}``, a copy changed in place, or
a project def that does either and returns it) and sent back whole by an UPDATE: two requests merging at once
each put back their own copy.  Reported at the SELECT, where ``FOR UPDATE`` belongs."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LAYOUT = """
    import json

    from boards import pg
    from boards.layering import {merge_import}


    def save_layout(board_id, change):
        with pg.connect() as conn:
            cur = conn.cursor()
            cur.execute("SELECT layout FROM boards WHERE id = %s{lock}", (board_id,))
            current = cur.fetchone()[0]
            combined = {merge}
            cur.execute("UPDATE boards SET layout = %s WHERE id = %s", (json.dumps(combined), board_id))
        return combined
    """

LAYERING = """
    def overlay(base, extra):
        result = dict(base or {})
        for key, value in extra.items():
            result[key] = value
        return result


    def replaced(base, extra):
        return dict(extra)
    """

PG = """
    import psycopg2


    def connect():
        return psycopg2.connect("dbname=boards")
    """


def _project(tmp_path, merge, lock="", merge_import="overlay"):
    write(tmp_path, {"boards/__init__.py": "", "boards/pg.py": PG, "boards/layering.py": LAYERING,
                     "boards/layout.py": LAYOUT.format(merge=merge, lock=lock, merge_import=merge_import)})


@pytest.mark.parametrize("merge", ["overlay(current, change)", "{**current, **change}", "current | change"])
def test_a_document_merged_in_python_and_written_whole_is_flagged(tmp_path, merge):
    _project(tmp_path, merge)
    assert findings(tmp_path, "boards/layout.py", codes=("OG301",)) == [(11, "OG301")]


def test_the_merging_def_reached_through_its_module(tmp_path):
    _project(tmp_path, "layering.overlay(current, change)", merge_import="overlay")
    source = (tmp_path / "boards/layout.py").read_text().replace(
        "from boards.layering import overlay", "from boards import layering")
    (tmp_path / "boards/layout.py").write_text(source)
    assert findings(tmp_path, "boards/layout.py", codes=("OG301",)) == [(11, "OG301")]


def test_a_document_read_for_update_is_clean(tmp_path):
    _project(tmp_path, "overlay(current, change)", lock=" FOR UPDATE")
    assert findings(tmp_path, "boards/layout.py", codes=("OG301",)) == []


def test_a_document_replaced_not_merged_is_clean(tmp_path):
    _project(tmp_path, "replaced(current, change)", merge_import="replaced")
    assert findings(tmp_path, "boards/layout.py", codes=("OG301",)) == []
