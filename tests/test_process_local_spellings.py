"""Process-local state spelled the way teams write it.

- OG605: a broadcast that gathers the sends of a list built from the registry (``targets = [ws for ... in
  registry.get(room, ())]`` ... ``asyncio.gather(*(ws.send_json(m) for ws in targets))``) is a broadcast to
  this process's connections, as a ``for`` loop over the registry is.
- OG607: a per-process cache tested for a key and then given it (``if key in seen: return False`` ...
  ``seen[key] = ...``, or ``if key not in seen: seen[key] = ...``) is an ``add`` written out: a once-only marker
  each replica keeps for itself.  A memo (the value read back and returned) is not.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

ROOMS = """\
    import asyncio
    from collections import defaultdict

    from starlette.websockets import WebSocket

    _members: dict[str, set[WebSocket]] = defaultdict(set)


    def join(room: str, ws: WebSocket) -> None:
        _members[room].add(ws)


    async def announce(rooms: list[str], note: dict) -> int:
        targets = [ws for room in rooms for ws in list(_members.get(room, ()))]
        sent = await asyncio.gather(*(ws.send_json(note) for ws in targets), return_exceptions=True)
        return sum(1 for result in sent if not isinstance(result, Exception))
"""


@pytest.mark.parametrize("rooms", [
    ROOMS,
    # one comprehension, no list in between
    ROOMS.replace("""        targets = [ws for room in rooms for ws in list(_members.get(room, ()))]
        sent = await asyncio.gather(*(ws.send_json(note) for ws in targets), return_exceptions=True)""",
                  """        sent = await asyncio.gather(*(ws.send_json(note) for room in rooms for ws in _members.get(room, ())),
                                    return_exceptions=True)"""),
], ids=["group-then-gather", "one-comprehension"])
def test_sends_gathered_over_the_registrys_members_are_a_local_broadcast(tmp_path, rooms):
    write(tmp_path, {"board/__init__.py": "", "board/rooms.py": rooms})
    assert [code for _, code in findings(tmp_path, "board/rooms.py", codes=("OG605",))] == ["OG605"]


def test_a_send_to_sockets_handed_in_is_no_registry_broadcast(tmp_path):
    handed = ROOMS.replace("targets = [ws for room in rooms for ws in list(_members.get(room, ()))]",
                           "targets = list(sockets)").replace(
        "async def announce(rooms: list[str], note: dict) -> int:",
        "async def announce(sockets: list[WebSocket], note: dict) -> int:")
    write(tmp_path, {"board/__init__.py": "", "board/rooms.py": handed})
    assert findings(tmp_path, "board/rooms.py", codes=("OG605",)) == []


REPLAYS = """\
    from cachetools import TTLCache

    _used = TTLCache(maxsize=50_000, ttl=900)


    def first_delivery(event_id: str) -> bool:
        if event_id in _used:
            return False
        _used[event_id] = True
        return True
"""


@pytest.mark.parametrize("replays, line", [
    (REPLAYS, 9),
    (REPLAYS.replace("""        if event_id in _used:
            return False
        _used[event_id] = True
        return True""", """        if event_id not in _used:
            _used[event_id] = True
            return True
        return False"""), 8),
], ids=["in-then-leave", "not-in-then-set"])
def test_a_per_process_cache_tested_then_given_the_key_is_a_once_only_marker(tmp_path, replays, line):
    write(tmp_path, {"hooks/__init__.py": "", "hooks/replays.py": replays})
    assert findings(tmp_path, "hooks/replays.py", codes=("OG607",)) == [(line, "OG607")]


def test_a_memo_that_hands_back_what_it_holds_is_no_marker(tmp_path):
    memo = """\
    from cachetools import TTLCache

    _rates = TTLCache(maxsize=1_000, ttl=60)


    def rate(currency: str, fetch) -> float:
        if currency in _rates:
            return _rates[currency]
        _rates[currency] = fetch(currency)
        return _rates[currency]
"""
    write(tmp_path, {"fx/__init__.py": "", "fx/rates.py": memo})
    assert findings(tmp_path, "fx/rates.py", codes=("OG607",)) == []
