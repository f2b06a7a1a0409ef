"""OG608 for tallies handed out through a request: per-key counts in process memory that request or job code adds
to, and that a request reads out and empties (``report = dict(_counts)`` … ``_counts.clear()`` … ``return
report``).

Counts kept per process are fine for metrics a scraper reads from every process in turn, and that never reset. A
drain is another use: whoever asks takes the counts away as the whole of them (usage to bill, events to export).
The request lands on one replica, and one worker process of it, which answers with what it alone counted; the
other copies keep theirs until a drain happens to land there, or a restart drops them.  A drain a job of each
process runs (every replica flushing its own counts to a shared store) is each copy handing on its own share, and
is left alone.
"""
from __future__ import annotations

import ast
from typing import List, Optional, Set

from ..analysis.facts import ModuleFacts, walk_no_nested_functions
from ..project import process_state as state
from ..project.reach import Reach
from ..project.request_code import RequestCode
from .work_in_flight import _empties_all


def drained_by_a_request(found: state.Accesses, counters: List[state.Access], binding: state.Binding,
                         facts: ModuleFacts, request: RequestCode, receivers: Set[str]) -> Optional[state.Access]:
    """The emptying of the counts by a function that reads them first and hands back a value (``return report``
    after ``_counts.clear()``), when a request runs it and request or job code counts up: None otherwise."""
    writers = {id(a.function) for a in counters if a.function is not None}
    drains = [a for a in found.of_kind("unmark") if a.function is not None and id(a.function) not in writers
              and _empties_all(a) and _hands_back_what_it_read(a, binding, facts)]
    if not drains:
        return None
    if not any(request.runs(a.function, receivers, binding=binding) for a in counters):
        return None  # (counted only at start-up, or by nothing that serves requests or runs jobs)
    for drain in drains:
        if request.reach.per_request(drain.function) or request.runs(
                drain.function, receivers, binding=binding, answer=_served_per_request) is not None:
            return drain
    return None


def _hands_back_what_it_read(emptied: state.Access, binding: state.Binding, facts: ModuleFacts) -> bool:
    """The function reads the state before it empties it, and returns a value."""
    function = emptied.function
    matcher = state.StateMatcher(binding, facts)
    names = matcher.aliases(function)
    returns = any(isinstance(node, ast.Return) and node.value is not None
                  for node in walk_no_nested_functions(function))
    return returns and any(statement.lineno < emptied.node.lineno and matcher.touches(statement, names, function)
                           for statement in function.body)


def _served_per_request(call: ast.Call, facts: ModuleFacts) -> bool:
    """The caller of the drain is a request handler, or what one calls in its module: it runs on the replica
    the load balancer picks, not on each in turn."""
    caller = facts.enclosing_function(call)
    return caller is not None and Reach.of_module(facts).per_request(caller)
