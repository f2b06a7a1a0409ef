"""OG609: a collection read whole and cleared in a second command, and the shapes that make it one step."""
from __future__ import annotations

import textwrap

import pytest

from onceguard.config import Config
from onceguard.engine.check import check_source


def codes(source: str, path: str = "jobs/drain.py"):
    source = textwrap.dedent(source)
    return sorted((d.line, d.code) for d in check_source(source.encode(), path, Config()) if d.code == "OG609")


def marked(source: str):
    """The lines marked ``# here``: where the finding must be."""
    return [(n, "OG609") for n, line in enumerate(textwrap.dedent(source).splitlines(), 1) if "# here" in line]


HEAD = """\
import redis
r = redis.Redis()
"""


@pytest.mark.parametrize("read", ["r.lrange(KEY, 0, -1)", "r.smembers(KEY)", "r.hgetall(KEY)", "r.hkeys(KEY)",
                                  "r.zrange(KEY, 0, -1)", "list(r.sscan_iter(KEY))"])
@pytest.mark.parametrize("clear", ["r.delete(KEY)", "r.unlink(KEY)"])
def test_every_whole_read_then_clear_is_reported_at_the_clear(read, clear):
    source = HEAD + f"""
KEY = "buffer"
def drain(handle):
    items = {read}
    handle(items)
    {clear}  # here
"""
    assert codes(source) == marked(source)


def test_a_clear_before_the_read_or_of_another_key_is_silent():
    assert codes(HEAD + """
def reset_then_read():
    r.delete("a")
    return r.lrange("a", 0, -1)

def two_keys():
    items = r.lrange("a", 0, -1)
    r.delete("b")
    return items
""") == []


def test_a_key_built_from_a_parameter_is_one_key_within_the_function():
    source = HEAD + """
def drain(team):
    key = f"pending:{team}"
    items = r.lrange(key, 0, -1)
    r.delete(key)  # here
    return items
"""
    assert codes(source) == marked(source)


def test_ltrim_that_empties_is_a_clear_and_ltrim_of_what_was_read_is_not():
    source = HEAD + """
def emptied():
    items = r.lrange("q", 0, -1)
    r.ltrim("q", 1, 0)  # here
    return items

def kept_tail():
    items = r.lrange("q", 0, 49)
    r.ltrim("q", len(items), -1)
    return items
"""
    assert codes(source) == marked(source)


def test_watch_pipeline_and_rename_make_it_one_step():
    assert codes(HEAD + """
def watched():
    with r.pipeline() as pipe:
        pipe.watch("q")
        items = r.lrange("q", 0, -1)
        pipe.multi()
        pipe.delete("q")
        pipe.execute()
    return items

def renamed(token):
    private = "q:" + token
    r.rename("q", private)
    items = r.lrange(private, 0, -1)
    r.delete(private)
    return items
""") == []


def test_receiver_whose_origin_is_not_visible_is_silent():
    assert codes("""
def drain(client):
    items = client.lrange("q", 0, -1)
    client.delete("q")
    return items
""") == []


def test_async_client_and_test_code():
    source = """
import redis.asyncio as aioredis
r = aioredis.from_url("redis://localhost")
async def drain():
    items = await r.lrange("q", 0, -1)
    await r.delete("q")  # here
    return items
"""
    assert codes(source) == marked(source) != []
    assert codes(source, path="tests/test_drain.py") == []


def test_finding_offers_only_a_display_only_suggestion_fitting_the_collection():
    source = textwrap.dedent(HEAD + """
def drain():
    members = r.smembers("s")
    r.delete("s")
    return members
""")
    (finding,) = [d for d in check_source(source.encode(), "jobs/drain.py", Config()) if d.code == "OG609"]
    assert finding.fix is not None and finding.fix.applicability == "display-only"
    assert "spop" in finding.fix.description
