"""What OG608 says of the state it reports: the sentence and the reason for each kind of use, and what to write
instead."""
from __future__ import annotations

from typing import Tuple

from ..project import process_state as state

SUGGESTION = ("Keep it where every replica reads and writes the same copy: a Redis key per item (`SET key 1 NX EX "
              "<ttl>` for once-only work, `INCR` then `EXPIRE` for counts and lockouts, a hash with a TTL for a "
              "registry) or a database row with a unique key; keep in memory only what each process may "
              "derive again")

#: What to write instead, per use, to copy by hand.
SNIPPETS = {
    "counter": "count in Redis: `n = redis.incr(f\"attempts:{key}\")`, `if n == 1: redis.expire(f\"attempts:{key}\", window)`, "
               "then compare `n` with the limit",
    "drained": "count in a shared store: `redis.hincrby(f\"usage:{day}\", key, 1)`, read and reset with one "
               "`MULTI` of `HGETALL` and `DEL` (or rows summed per period)",
    "clock": "claim the period in Redis: `if not redis.set(f\"sent:{key}\", 1, nx=True, ex=period): continue` before "
             "doing the work",
    "mark": "mark it once for every replica: `if not redis.set(f\"seen:{key}\", 1, nx=True, ex=ttl): return`",
    "in flight": "hold the work with a lease every replica sees: `if not redis.set(f\"running:{key}\", token, nx=True, "
                 "ex=ttl): return` and delete the key (comparing the token) when the work ends",
    "stale": "read the value from the shared store each time, or cache it where every replica reads it "
             "(`redis.set(key, value, ex=60)`), or give each process's copy an expiry",
    "registry": "keep the entry in a shared store: a row keyed by the id, or `redis.hset(f\"status:{key}\", mapping=...)` "
                "with `redis.expire(...)`",
}


def describe(finding, binding: state.Binding) -> Tuple[str, str]:
    """The finding's one sentence, and why it happens, for the help."""
    name = f"`{binding.name}`"
    where = {state.MODULE: "a module-level", state.CLASS: "a class-level", state.INSTANCE: "an instance's"}[binding.scope]
    decider = getattr(finding.decision.function, "name", "?") if finding.decision else "?"
    writer = getattr(finding.write.function, "name", "?")
    if finding.kind == "counter":
        return (f"{name} ({where} container in process memory) counts per key and {decider}() decides from the "
                "count, so N copies allow N times a limit.",
                "Each replica, and each worker process, counts only what it served itself, and a lockout or choice "
                "made on one is not seen by the others. ")
    if finding.kind == "drained":
        return (f"{name} ({where} container in process memory) counts per key and {decider}() takes the counts "
                "away, so a request drains one replica's share and misses the rest.",
                "The drain is served by one worker process of one replica, which knows only what it counted "
                "itself; the other copies keep theirs, and a restart drops them. ")
    if finding.kind == "clock":
        return (f"{name} ({where} container in process memory) remembers when something was last done and "
                f"{decider}() skips it while recent, so every replica does the work again.",
                "Every other replica has its own watermark, and a restart forgets it. ")
    if finding.kind == "in flight":
        return (f"{name} ({where} container in process memory) holds work in flight and {decider}() turns a "
                "second request away, so another replica starts the same work again.",
                "While the work runs, a second request for it is refused only by the replica running it: another "
                "replica has no such entry, and the work acts outside the process. ")
    if finding.kind == "stale":
        return (f"{name} ({where} cache in process memory) is filled by {decider}() and refreshed by {writer}() "
                "after a shared write, so other processes and replicas keep the old value.",
                "Only the process that served the change updates its copy; every other one answers with what it "
                "cached before, for as long as it runs. ")
    if finding.kind == "mark" and finding.answered:
        return (f"{name} ({where} container in process memory) remembers what was handled and {decider}() "
                "answers from it whether to do the work, so another replica does it again.",
                "Another replica, or this one after a restart, has no such entry. ")
    if finding.kind == "mark":
        return (f"{name} ({where} container in process memory) remembers what was handled and {decider}() skips "
                "it, so another replica handles it again.",
                "Another replica, or this one after a restart, has no such entry. ")
    return (f"{name} ({where} container in process memory) is written by {writer}() and read by {decider}(), so a "
            "request on another replica never sees the write.",
            "Behind a load balancer the reading request can land on a replica that never saw the write. ")
