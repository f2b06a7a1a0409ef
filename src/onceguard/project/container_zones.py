"""Whether the replicas of a project share one local time zone: they run containers of the project's image
(a Dockerfile, compose or Kubernetes files), and no deployment file sets ``TZ`` for some of them.  An image
without ``TZ`` runs in UTC wherever it is scheduled, so a wall-clock schedule fires at the same instant in
every replica.  Without such files the processes run on hosts whose zones nobody shows."""
from __future__ import annotations

import os
import re

from ..analysis.facts import ModuleFacts
from ..knowledge import deployment as known
from . import index as project
from .deployment import deployment_bases, is_deployment_file, launches, project_directory

#: ``TZ`` set as an environment variable: ``ENV TZ=...``, ``TZ: ...``, ``- TZ=...``, ``name: TZ``.
_SETS_TZ = re.compile(rb"(?<![A-Za-z0-9_])TZ\s*[=:]|name:\s*[\"']?TZ[\"']?\s*$", re.MULTILINE)


def one_zone_everywhere(facts: ModuleFacts) -> bool:
    """The project's replicas run its image in containers and nothing gives them a zone of their own."""
    config = facts.config
    root = project.search_root(facts)
    # The deployment files of this project or service, in its directory or in one above it (a Dockerfile at
    # the repository's root that builds ``app/``); a monorepo's others, beside it, run other programs.
    own = project_directory(facts.context.path or "", config, root) + os.sep

    def ours(path: str) -> bool:
        return path.startswith(own) or own.startswith(os.path.dirname(path) + os.sep)

    containers = [launch for launch in launches(config, root) if ours(launch.path)
                  and launch.where.split(" ", 1)[0].lower().startswith(known.CONTAINER_FILE_WORDS)]
    if not containers:
        return False
    for base in deployment_bases(config, root):
        for path in project.files_named(base, is_deployment_file, config, key="deployment"):
            if not ours(path) or os.path.basename(path).lower().startswith("procfile"):
                continue
            if _SETS_TZ.search(project.read_bytes(path)):
                return False
    return True
