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
from .helm_values import yaml_documents

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
        documents = yaml_documents(text, path)
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
    for key, item in _container_env_items(node):
        if key != "env":
            continue
        variable = _scalar(_get(item, "name"))
        source = _get(item, "valueFrom")
        for reference, kind in _REFERENCE_KINDS.items():
            ref = _get(source, reference)
            name, entry = _scalar(_get(ref, "name")), _scalar(_get(ref, "key"))
            if variable and name and entry:
                yield variable, kind, name, entry, _line(item)


#: (value, path, line) of each value a container's environment gives a variable.
Given = List[Tuple[str, str, int]]


def container_environment(texts: Iterable[Tuple[str, str]]) -> Dict[str, Given]:
    """Every value the manifests' containers give each environment variable: an ``env`` entry's literal
    ``value``, the Secret or ConfigMap entry its ``valueFrom`` names, and each entry of a Secret or ConfigMap the
    container takes whole (``envFrom: [{configMapRef: {name: ...}}]``, with its ``prefix``).  A reference to an
    object the manifests do not hold gives nothing."""
    import yaml

    texts = list(texts)
    entries, references = read(texts)
    given: Dict[str, Given] = {}
    for path, found in references.items():
        for variable, kind, name, key, line in found:
            if (kind, name, key) in entries:
                given.setdefault(variable, []).append((entries[(kind, name, key)][0], path, line))
    for path, text in texts:
        if "env" not in text:
            continue
        documents = yaml_documents(text, path)
        for document in documents:
            if not isinstance(document, yaml.MappingNode) or _scalar(_get(document, "kind")) in ("Secret", "ConfigMap"):
                continue
            for key, item in _container_env_items(document):
                if key == "env":
                    variable, value = _scalar(_get(item, "name")), _scalar(_get(item, "value"))
                    if variable and value is not None and "$(" not in value:
                        given.setdefault(variable, []).append((value, path, _line(item)))
                    continue
                prefix = _scalar(_get(item, "prefix")) or ""
                for reference, kind in _WHOLE_REFERENCE_KINDS.items():
                    name = _scalar(_get(_get(item, reference), "name"))
                    for (held_kind, held_name, entry), (value, _) in entries.items() if name else ():
                        if held_kind == kind and held_name == name:
                            given.setdefault(prefix + entry, []).append((value, path, _line(item)))
    return given


_WHOLE_REFERENCE_KINDS = {"configMapRef": "ConfigMap", "secretRef": "Secret"}


def _container_env_items(node):
    """(``env`` or ``envFrom``, item) for every item of such a list under ``node``, at any depth."""
    import yaml

    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                if _scalar(key) in ("env", "envFrom"):
                    yield from ((_scalar(key), item) for item in _sequence(value))
                else:
                    pending.append(value)
        elif isinstance(current, yaml.SequenceNode):
            pending.extend(current.value)
