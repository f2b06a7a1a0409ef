"""What the project's deployment sets an environment variable to.

Configuration read from the environment (``CACHE_TYPE = os.environ.get("CACHE_TYPE", "SimpleCache")``) takes,
in each deployed process, the value its container or service is given: a compose service's ``environment``, a
Kubernetes container's ``env`` (a literal, or the Secret or ConfigMap entry it names) or a whole ConfigMap or
Secret it takes with ``envFrom``.  Only what the deployment files write down is known: a variable they never
set (a Helm value, a platform's dashboard) has no deployed value here, and the code's default is not assumed.
"""
from __future__ import annotations

import ast
from typing import Dict, List, Optional, Tuple

from ..analysis.facts import ModuleFacts
from ..knowledge.schema import ENV_GETTERS
from . import index as project
from .deployment import deployment_bases
from .deployment_files import _get, _mapping_items, is_deployment_file
from .helm_values import yaml_documents
from .kubernetes_values import Given, container_environment

_scans: Dict = {}
project.on_clear(_scans.clear)


def environment_read(node: ast.AST, facts: ModuleFacts) -> Optional[str]:
    """The variable ``node`` reads: ``os.environ.get("NAME", ...)``, ``os.getenv("NAME")``, ``os.environ["NAME"]``."""
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
            and isinstance(node.args[0].value, str) and (facts.callee(node) or "") in ENV_GETTERS:
        return node.args[0].value
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
            and isinstance(node.slice.value, str) and (facts.qualify(node.value) or "") == "os.environ":
        return node.slice.value
    return None


def deployed_values(variable: str, facts: ModuleFacts) -> Given:
    """(value, path, line) for each value the project's deployment files give ``variable``; empty when they set
    it nowhere (or outside the command line, where no deployment file is read)."""
    if not facts.context.cross_file:
        return []
    return _environment(facts).get(variable, [])


def _environment(facts: ModuleFacts) -> Dict[str, Given]:
    config, root = facts.config, project.search_root(facts)

    def scan() -> Tuple[Dict[str, Given], Tuple[str, ...]]:
        read: List[str] = []
        for base in deployment_bases(config, root):
            read.extend(path for path in project.files_named(base, is_deployment_file, config, key="environment-values")
                        if path not in read and path.lower().endswith((".yaml", ".yml")))
        texts = [(path, project.read_bytes(path).decode("utf-8", "replace")) for path in read]
        given = container_environment(texts)
        for path, text in texts:  # compose services' ``environment``
            if "services" not in text:
                continue
            documents = yaml_documents(text, path)
            from .service_settings import _environment as compose_environment

            for document in documents:
                for _, service in _mapping_items(_get(document, "services")):
                    for variable, (value, line) in compose_environment(_get(service, "environment")).items():
                        given.setdefault(variable, []).append((value, path, line))
        return given, tuple(read)

    return project.scan_once(_scans, (config.root or "", root), scan)
