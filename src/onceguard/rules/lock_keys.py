"""OG104: a lock every replica must agree on, keyed on a value that differs from one process to the next.

An advisory lock's key (its parameters and f-string holes), or the name of a lock library's lock, is followed
through names, settings objects and the project's small functions (``project.process_values``); a built-in
``hash()`` of text, ``id()``, a random value, a uuid4, a process id or a host name there makes each replica lock
its own key, and all of them run the guarded work.
"""
from __future__ import annotations

import ast
import os
from typing import Iterator, List, NamedTuple, Optional, Set

import ahocorasick_rs

from ..analysis.facts import FunctionNode, ModuleFacts
from ..analysis.handed import argument_for, parameter_names
from ..analysis.names import dotted
from ..knowledge import advisory_locks as known
from ..knowledge import lock_libraries as lock_known
from ..model import Diagnostic, Fix, Related
from ..project import index as project_index
from ..project.fixed_arguments import callers_of
from ..project.advisory_names import lock_helper_names, shares_lock_names
from ..project.prefilter_words import returning_defs
from ..project.lock_libraries import library_locks, spells_lock_library
from ..project.process_values import (RETURNED_TRIGGERS, calling_modules, returned_unstable, same_place,
                                      unstable_call, unstable_parts)
from .advisory_lock_discipline import _short_path, key_expressions
from ..project.summaries import resolve
from .advisory_locks import LockUse, lock_uses
from .base import Rule
from .registry import register


unstable_key_call = unstable_call
_RETURNED_WORDS = ahocorasick_rs.BytesAhoCorasick(list(RETURNED_TRIGGERS))
_STABLE_KEY = ("Derive the key with a stable digest: a constant, `zlib.crc32(name.encode())`, or "
               "`int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), 'big', signed=True)`")


@register
class UnstableLockKey(Rule):
    code = "OG104"
    name = "unstable-lock-key"
    summary = "advisory lock key computed with hash(), id(), random or uuid4: every replica locks a different key"
    # (a lock library's words admit the same files OG103 reads: they are parsed for it already)
    triggers = known.TRIGGERS + lock_known.TRIGGERS

    @staticmethod
    def project_files(config, path: str) -> bool:
        """A module with no lock of its own that computes a per-process value where a lock's key may come from it:
        a def of it that returns one is called where a key is handed, or it hands a lock helper a key."""
        source = project_index.read_bytes(path)
        if not _RETURNED_WORDS.find_matches_as_indexes(source):
            return False
        return shares_lock_names(config.root or "", source,
                                 lambda text, named: returning_defs(text, _RETURNED_WORDS, named))

    def check(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        reported: Set = set()
        for site in key_sites(facts):
            # The key's parts, through the names and the project's functions that compute it; a part computed
            # in another module is reported there (``_returned_here``), where it can be mended.  A lock helper
            # keyed on its parameter (``def try_xact_lock(lock_id)``) is keyed on what its callers hand it.
            handed = _handed_by_callers(site.use, facts) if site.use is not None else []
            for part in [*unstable_parts(site.keys, facts), *handed]:
                node = part.call
                # (a part reached through a caller is read in that caller's copy of this module: same place)
                if part.facts is not facts and not _same_file(part.facts, facts):
                    continue
                if id(node) in reported or (node.lineno, node.col_offset) in reported:
                    continue
                reported.update((id(node), (node.lineno, node.col_offset)))
                fix = None
                if isinstance(node.func, ast.Name) and node.func.id == "hash" and len(node.args) == 1:
                    fix = Fix("stable-lock-key", "replace hash() with zlib.crc32() of the encoded value", "unsafe")
                via = f" in `{part.helper.name}`, which computes it" if part.helper is not None else ""
                yield self.finding(
                    node,
                    f"the key of `{site.lock}` (line {site.call.lineno}) comes from "
                    f"`{dotted(node.func) or 'a call'}(...)`{via}, so each replica locks a different key and all run "
                    "the guarded work.",
                    f"The key is not the same in every process: {part.why}. " + _STABLE_KEY, fix,
                )
        # (after the module's own keys: a part both read is reported as the key of the lock here)
        yield from self._returned_here(facts, reported)
        yield from self._library_lock_keys(facts, reported)

    def _library_lock_keys(self, facts: ModuleFacts, reported: Set[int]) -> Iterator[Diagnostic]:
        """A lock library's lock (a Redis lock, a django-pglocks key) named from a per-process value: the same
        hazard under another API.  Reported where the value is computed, in this module or another."""
        if not spells_lock_library(facts):
            return  # no lock library's words: finding its locks would resolve every call of the module for nothing
        for lock in library_locks(facts):
            if lock.key is None:
                continue
            for part in unstable_parts([lock.key], facts):
                if id(part.call) in reported:
                    continue
                reported.add(id(part.call))
                here = part.facts is facts
                where = "" if here else f" ({_short_path(part.facts)}:{part.call.lineno})"
                yield self.finding(
                    part.call if here else lock.made,
                    f"the name of this {lock.api.library} lock (line {lock.made.lineno}) comes from "
                    f"`{dotted(part.call.func) or 'a call'}(...)`{where}, so each replica locks a different name and "
                    "all run the guarded work.",
                    f"The name is not the same in every process: {part.why}. Build it from constants and the job's "
                    "own name only (keep per-host values for the lock's token, not its name)",
                    related=[] if here else [Related(part.facts.context.path, part.call.lineno,
                                                     part.call.col_offset + 1, "the per-process value is computed here")],
                )

    def _returned_here(self, facts: ModuleFacts, reported: Set[int]) -> Iterator[Diagnostic]:
        """A def of this module returning an unstable value that a lock of another module is keyed on."""
        for part in returned_unstable(facts):
            for other in calling_modules(part.helper, facts):
                site = next((u for u in key_sites(other) for p in unstable_parts(u.keys, other)
                             if same_place(p, part)), None)
                place = (part.call.lineno, part.call.col_offset)
                if site is None or id(part.call) in reported or place in reported:
                    continue
                reported.update((id(part.call), place))
                yield self.finding(
                    part.call,
                    f"`{part.helper.name}` returns a value computed with `{dotted(part.call.func) or 'a call'}(...)`, "
                    f"and the lock `{site.lock}` is keyed on it, so each replica locks a different key and "
                    "all run the guarded work.",
                    f"The key is not the same in every process: {part.why}. " + _STABLE_KEY,
                    related=[Related(other.context.path, site.call.lineno, site.call.col_offset + 1,
                                     f"`{site.lock}` is keyed on it here")],
                )


class KeySite(NamedTuple):
    """Where a module hands an advisory lock its key: its own lock call, or a call of a lock helper."""
    call: ast.Call
    lock: str  # the advisory function, or the helper as called
    keys: List[ast.AST]  # the key's expressions, as written here
    use: Optional[LockUse]  # the module's own lock (None for a helper's call)


def key_sites(facts: ModuleFacts) -> List[KeySite]:
    """The module's own advisory locks, and (the whole project read) its calls of lock helpers of other modules
    keyed on a parameter, with what each call hands that parameter: ``try_slot(hash(name))`` keys the lock in
    ``try_slot``'s module on ``hash(name)`` computed here."""

    def build(_facts: ModuleFacts) -> List[KeySite]:
        sites = [KeySite(use.call, use.function.name, key_expressions(use), use) for use in lock_uses(facts)
                 if use.function.name != "pg_advisory_unlock_all"]
        if facts.context.cross_file:
            sites.extend(_helper_sites(facts))
        return sites

    return facts.cached("lock_keys:sites", build)


def _helper_sites(facts: ModuleFacts) -> List[KeySite]:
    helpers = lock_helper_names(project_index.search_root(facts))
    sites = []
    for name in sorted(helpers & set(facts.calls_by_name)):
        for call in facts.calls_by_name[name]:
            for target, where in resolve(call, facts, facts.enclosing_function(call)):
                if where is facts or _same_file(where, facts):
                    continue  # (this module's own helper: its lock is read here, keyed through its callers)
                for use in lock_uses(where):
                    if use.scope is not target:
                        continue
                    keyed = _keyed_parameters(use, target)
                    keys = [handed for parameter in keyed for handed in [argument_for(call, target, parameter)]
                            if handed is not None]
                    if keys:
                        sites.append(KeySite(call, dotted(call.func) or name, keys, None))
    return sites


def _keyed_parameters(use: LockUse, function: FunctionNode) -> List[str]:
    """The parameters of ``function`` (the lock's scope) its key is computed from, in name order."""
    own = set(parameter_names(function, receiver=False))
    return sorted({n.id for key in key_expressions(use) for n in ast.walk(key) if isinstance(n, ast.Name)} & own)


def _handed_by_callers(use, facts: ModuleFacts) -> list:
    """The per-process parts of the values the callers of a lock helper hand it for the key's parameters
    (``try_xact_lock(allocation_lock_id(code, period))`` where ``allocation_lock_id`` returns ``hash(...)``)."""
    scope = use.scope
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) or not facts.context.cross_file:
        return []
    found = []
    for name in _keyed_parameters(use, scope):
        for call, other in callers_of(scope, facts):
            handed = argument_for(call, scope, name)
            if handed is not None and not other.context.is_test:
                found.extend(unstable_parts([handed], other))
    return found


def _same_file(one: ModuleFacts, other: ModuleFacts) -> bool:
    return bool(one.context.path and other.context.path) and \
        os.path.abspath(one.context.path) == os.path.abspath(other.context.path)
