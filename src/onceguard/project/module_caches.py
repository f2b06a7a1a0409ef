"""Module-level caches other modules import: ``cache = Cache()`` in ``extensions.py``, then ``from .extensions
import cache`` where records are kept in it.  Found by text once per project, for the prefilter: the cache's
kind is judged when the importing module is checked.
"""
from __future__ import annotations

import os
import re
from typing import Dict, Optional, Tuple

import ahocorasick_rs

from . import index as project


#: ``name = SomeCache(`` at the start of a line (``TTLCache``, ``SimpleCache``, Flask-Caching's ``Cache``): a
#: module-level cache a module may hand to others by import.
_MODULE_CACHE = re.compile(rb"^([A-Za-z_][A-Za-z0-9_]*)[ \t]*(?::[^=\n]+)?=[ \t]*[A-Za-z0-9_.]*Cache[ \t]*\(",
                           re.MULTILINE)
_importers_by_root: Dict[str, Optional[Tuple["ahocorasick_rs.BytesAhoCorasick", "re.Pattern[bytes]"]]] = {}
project.on_clear(_importers_by_root.clear)


def imports_a_module_cache(config, path: str) -> bool:
    """Whether the file imports a module-level cache another file of the project makes (``cache = Cache()`` in
    ``extensions.py``, then ``from .extensions import cache`` or ``extensions.cache``): a module that may keep its
    records there.  The caches are found once per project; the cache's kind is judged when the module is checked."""
    root = config.root or ""
    if not root:
        return False
    if root not in _importers_by_root:
        _importers_by_root[root] = _importing_pattern(root)
    found = _importers_by_root[root]
    if found is None:
        return False
    names, pattern = found
    source = project.read_bytes(path)
    # (every match spells one of the names: the automaton's one pass over the bytes rules most files out, the
    # pattern's alternation is tried at every position)
    return bool(names.find_matches_as_indexes(source)) and pattern.search(source) is not None


def _importing_pattern(root: str) -> Optional[Tuple["ahocorasick_rs.BytesAhoCorasick", "re.Pattern[bytes]"]]:
    names, modules = set(), set()
    for word in ("Cache(", "Cache ("):
        for path in project.files_mentioning(word, root):
            module = os.path.splitext(os.path.basename(path))[0]
            if module == "__init__":
                module = os.path.basename(os.path.dirname(path))
            for match in _MODULE_CACHE.finditer(project.read_bytes(path)):
                names.add(match.group(1))
                modules.add(re.escape(module.encode()))
    if not names:
        return None
    name_group = b"|".join(re.escape(name) for name in sorted(names))
    module_group = b"|".join(sorted(modules))
    return ahocorasick_rs.BytesAhoCorasick(sorted(names)), re.compile(
        rb"from[ \t]+[\w.]*\b(?:" + module_group + rb")[ \t]+import[^\n]*\b(?:" + name_group + rb")\b"
        rb"|\b(?:" + module_group + rb")\.(?:" + name_group + rb")\b")

