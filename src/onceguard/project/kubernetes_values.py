"""Values a Kubernetes container's environment takes from a Secret or a ConfigMap.

``env: [{name: DATABASE_URL, valueFrom: {secretKeyRef: {name: app-db, key: pooled-url}}}]`` sets the variable to
the ``pooled-url`` entry of the Secret ``app-db`` (``stringData``, or ``data`` base64-encoded), or of a ConfigMap
for ``configMapKeyRef``, when the project's manifests hold it.  What is read is the manifests' text: a value
written elsewhere (a sealed or external secret, a Helm value) is not known and gives nothing.
"""
from __future__ import annotations

import base64
import binascii
from typing import Dict, Iterable, List, Tuple

from .deployment_files import _get, _line, _mapping_items, _scalar, _sequence

#: (kind, name, key) -> (value, line)
Entries = Dict[Tuple[str, str, str], Tuple[str, int]]
#: (variable, kind, name, key, line of the env entry)
References = List[Tuple[str, str, str, str, int]]

_REFERENCE_KINDS = {"secretKeyRef": "Secret", "configMapKeyRef": "ConfigMap"}


def read(texts: Iterable[Tuple[str, str]]) -> Tuple[Entries, Dict[str, References]]:
    """The Secret and ConfigMap entries of the manifests (path, text) and, per path, the env entries that take
    their value from one."""
    import yaml  # (imported here, as the deployment files' reader does: the plugin's import stays cheap)

    entries: Entries = {}
    references: Dict[str, References] = {}
    for path, text in texts:
        try:
            documents = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
        except (yaml.YAMLError, RecursionError):
            continue
        for document in documents:
            kind = _scalar(_get(document, "kind")) if isinstance(document, yaml.MappingNode) else None
            if kind in ("Secret", "ConfigMap"):
                name = _scalar(_get(_get(document, "metadata"), "name")) or ""
                for field, encoded in (("stringData", False), ("data", kind == "Secret")):
                    for key, value in _mapping_items(_get(document, field)):
                        text_value = _scalar(value)
                        if text_value is not None and _scalar(key) is not None:
                            decoded = _decoded(text_value) if encoded else text_value
                            entries[(kind, name, _scalar(key))] = (decoded, _line(value))
            elif isinstance(document, yaml.MappingNode):
                found = list(_env_references(document))
                if found:
                    references.setdefault(path, []).extend(found)
    return entries, references


def _decoded(value: str) -> str:
    try:
        return base64.b64decode(value.encode("ascii"), validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError, UnicodeEncodeError):
        return ""


def _env_references(node):
    """Every ``env`` entry under ``node`` (its containers, at any depth) with a ``valueFrom`` reference."""
    import yaml

    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                if _scalar(key) == "env":
                    for item in _sequence(value):
                        variable = _scalar(_get(item, "name"))
                        source = _get(item, "valueFrom")
                        for reference, kind in _REFERENCE_KINDS.items():
                            ref = _get(source, reference)
                            name, entry = _scalar(_get(ref, "name")), _scalar(_get(ref, "key"))
                            if variable and name and entry:
                                yield variable, kind, name, entry, _line(item)
                else:
                    pending.append(value)
        elif isinstance(current, yaml.SequenceNode):
            pending.extend(current.value)
