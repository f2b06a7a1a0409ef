"""OG609: a Redis collection read whole and then cleared in a second command.

``items = r.lrange(key, 0, -1)`` … ``r.delete(key)``: between the two round trips another replica (or
another worker of this one) pushes to the key, and the delete drops what it pushed without anyone
having read it.  The read and the clear must be one step: pop what is processed (``LPOP key count``,
``SPOP``, ``ZPOPMIN``), ``GETDEL``, ``RENAME`` the key to a private name first, or a stream with a
consumer group.  Calls queued on a pipeline run in one MULTI/EXEC and are not judged here; a function
that ``WATCH``-es a key retries on a concurrent write.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterable, List, Optional

from ..analysis.facts import ModuleFacts, position, walk_no_nested_functions
from ..analysis.redis_arguments import has_spread, short
from ..knowledge import redis_clients as known
from ..model import Diagnostic, Fix
from ..project.forwarding import forwarded
from ..project.redis_clients import redis_call
from ..project.redis_keys import key_identity
from .base import Rule
from .registry import register

#: The clients whose commands are the server's own (a project wrapper is read by its verbs only).
_CLIENT_KINDS = (known.REDIS,)


@dataclass
class _KeyCall:
    call: ast.Call
    command: str
    key: ast.AST
    identity: tuple


def _key_calls(function: ast.AST, facts: ModuleFacts, commands: Iterable[str]) -> List[_KeyCall]:
    wanted = set(commands)
    found = []
    for node in walk_no_nested_functions(function):
        where = facts
        if isinstance(node, ast.Call) and not isinstance(node.func, ast.Attribute):
            through = forwarded(node, facts)  # a command behind a small helper, its arguments in place
            if through is not None:
                node, where = through.call, through.facts
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in wanted):
            continue
        if not node.args or has_spread(node) or isinstance(node.args[0], ast.Starred):
            continue
        handle = redis_call(node, where)
        if handle is None or handle.kind not in _CLIENT_KINDS:
            continue  # a pipeline's queued commands, or a receiver whose origin is not visible
        found.append(_KeyCall(node, node.func.attr, node.args[0], key_identity(node.args[0], facts)))
    return found


def _empties_list(call: ast.Call) -> bool:
    """``ltrim(key, 1, 0)``: a start past the end keeps nothing."""
    if len(call.args) != 3:
        return False
    start, end = call.args[1], call.args[2]
    return (isinstance(start, ast.Constant) and isinstance(end, ast.Constant)
            and isinstance(start.value, int) and isinstance(end.value, int)
            and start.value >= 0 and end.value >= 0 and start.value > end.value)


def _watches(function: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "watch"
               for n in walk_no_nested_functions(function))


def _renamed_into(read: _KeyCall, renames: List[_KeyCall], facts: ModuleFacts) -> bool:
    """``r.rename(shared, private)`` before the read of ``private``: nobody else pushes to that name."""
    for rename in renames:
        if len(rename.call.args) >= 2 and position(rename.call) < position(read.call):
            if key_identity(rename.call.args[1], facts) == read.identity:
                return True
    return False


def _fix(read: _KeyCall) -> Fix:
    kind = known.READ_KIND.get(read.command, "list")
    return Fix("atomic-drain", f"drain the key atomically: {known.ATOMIC_DRAIN[kind]}", "display-only")


@register
class ReadThenClear(Rule):
    code = "OG609"
    name = "redis-read-then-clear"
    summary = "a Redis list/set/hash read whole, then deleted in a second command: what others add in between is lost"
    triggers = known.READ_THEN_CLEAR_TRIGGERS
    skips_tests = True

    def check(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        if facts.context.is_test:
            return
        for functions in facts.functions_by_name.values():
            for function in functions:
                yield from self._in_function(function, facts)

    def _in_function(self, function: ast.AST, facts: ModuleFacts) -> Iterable[Diagnostic]:
        reads = _key_calls(function, facts, known.READ_ALL_COMMANDS)
        if not reads or _watches(function):
            return
        clears = _key_calls(function, facts, known.CLEAR_COMMANDS | {known.TRIM_COMMAND})
        clears = [c for c in clears if c.command != known.TRIM_COMMAND or _empties_list(c.call)]
        if not clears:
            return
        renames = _key_calls(function, facts, known.RENAME_COMMANDS)
        reported = set()
        for clear in clears:
            if len(clear.call.args) != 1 and clear.command != known.TRIM_COMMAND:
                continue  # ``delete(a, b)``: several keys, judged by hand
            read = self._read_before(clear, reads)
            if read is None or id(clear.call) in reported or _renamed_into(read, renames, facts):
                continue
            reported.add(id(clear.call))
            yield self.finding(
                clear.call,
                f"`{short(clear.call.func)}({short(clear.key, 40)})` clears the key read whole by "
                f"`{read.command}` on line {read.call.lineno}, so entries another replica added in between are lost "
                "unread.",
                "Whatever another replica adds between the two commands is deleted without ever being read. "
                "Make reading and clearing one step: pop what you process (`LPOP key count` / `SPOP` / "
                "`ZPOPMIN` in a loop), `GETDEL` for a string, `RENAME` the key to a private name and work on that, "
                "or a stream read by a consumer group (`XREADGROUP` + `XACK`); or queue both commands on "
                "`r.pipeline()` so they run in one MULTI/EXEC",
                fix=_fix(read),
            )

    @staticmethod
    def _read_before(clear: _KeyCall, reads: List[_KeyCall]) -> Optional[_KeyCall]:
        earlier = [r for r in reads if r.identity == clear.identity and position(r.call) < position(clear.call)]
        return max(earlier, key=lambda r: position(r.call)) if earlier else None
