"""Every rule class registers itself by decorator; no hand-kept list of codes."""
from __future__ import annotations

import importlib
import pkgutil
from typing import Dict, List, Tuple, Type

from .base import Rule

#: Codes the engine itself reports; they have no rule class and cannot be disabled.
ENGINE_CODES = {
    "OG000": ("cannot-parse", "the file could not be read or parsed, so it was not checked"),
    "OG001": ("internal-error", "a rule failed on this file; the other rules still ran"),
}

#: modules of the rules package that hold no rule family
_NOT_FAMILIES = {"base", "registry", "fix_plans", "next_numbers"}

_RULES: Dict[str, Type[Rule]] = {}
_loaded = False


def register(cls: Type[Rule]) -> Type[Rule]:
    if cls.code in _RULES and _RULES[cls.code] is not cls:
        raise RuntimeError(f"two rules claim {cls.code}")
    _RULES[cls.code] = cls
    return cls


def _load() -> None:
    global _loaded
    if _loaded:
        return
    from .. import rules as package

    for module in pkgutil.iter_modules(package.__path__):
        if module.name not in _NOT_FAMILIES:
            importlib.import_module(f"{package.__name__}.{module.name}")
    _loaded = True


def rule_classes() -> List[Type[Rule]]:
    _load()
    return [_RULES[code] for code in sorted(_RULES)]


def all_codes() -> Tuple[str, ...]:
    _load()
    return tuple(sorted(_RULES))


def rule_name(code: str) -> str:
    _load()
    if code in _RULES:
        return _RULES[code].name
    return ENGINE_CODES.get(code, ("unknown", ""))[0]
