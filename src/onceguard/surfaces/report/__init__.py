"""Output formats. Each module here defines ``FORMAT`` (its ``--format`` name) and
``render(diagnostics, options) -> str``; they are discovered, not listed."""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

from ...model import Diagnostic


@dataclass(frozen=True)
class ReportOptions:
    #: codes reported as errors rather than warnings (config ``error = [...]``)
    error_codes: Sequence[str] = field(default_factory=tuple)
    #: the closing count ("Found 3 findings.") of the human formats; off with ``--quiet``
    summary: bool = True
    #: ``--statistics``: [{code, name, count, fixable}]; the json and sarif formats carry it inside their
    #: own structure so that the artifact stays valid
    statistics: Optional[List[dict]] = None


Renderer = Callable[[List[Diagnostic], ReportOptions], str]


def renderers() -> Dict[str, Renderer]:
    found: Dict[str, Renderer] = {}
    for module in pkgutil.iter_modules(__path__):
        loaded = importlib.import_module(f"{__name__}.{module.name}")
        name = getattr(loaded, "FORMAT", None)
        if name:
            found[name] = loaded.render
    return found


def format_names() -> List[str]:
    return sorted(renderers())


def is_error(diagnostic: Diagnostic, options: ReportOptions) -> bool:
    return diagnostic.code in ("OG000", "OG001") or any(diagnostic.code.startswith(c) for c in options.error_codes)


def via(diagnostic: Diagnostic) -> str:
    """The finding's related places on one line, entry point first:
    ``app/main.py:12 lifespan → app/db/bootstrap.py:22 prepare_database``; empty when it has none."""
    return " \u2192 ".join(f"{place.path}:{place.line} {place.message}".rstrip() for place in diagnostic.related)
