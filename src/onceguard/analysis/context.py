"""What kind of code a file (and a function within it) is: test, migration, start-up, one-off command."""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property

from ..config import Config

_TEST_DIRS = {"tests", "test", "testing"}
_MIGRATION_DIRS = ("migrations", "alembic/versions", "alembic")
_SCRIPT_DIRS = {"scripts", "bin", "tools", "deploy", "ops"}
#: Modules whose whole name says they are the migration entrypoint.
_RUNNER_FILENAMES = frozenset({"migrate.py", "migrations.py", "run_migrations.py", "run_migrate.py"})


@dataclass(frozen=True)
class FileContext:
    path: str
    config: Config
    #: True in the CLI, which may read other files of the project (a job registered here and
    #: defined elsewhere); False under flake8, which sees one file and reports only what it proves.
    cross_file: bool = False

    @cached_property
    def rel_path(self) -> str:
        return self.config.relative(self.path) if self.path else ""

    @cached_property
    def parts(self) -> tuple:
        return tuple(p for p in self.rel_path.split("/") if p)

    @cached_property
    def filename(self) -> str:
        return self.parts[-1] if self.parts else ""

    @cached_property
    def package(self) -> str:
        """Dotted package of the file, as far as ``__init__.py`` files show it (for relative imports)."""
        if not self.path:
            return ""
        directory = os.path.dirname(os.path.abspath(self.path))
        names = []
        while os.path.isfile(os.path.join(directory, "__init__.py")):
            names.append(os.path.basename(directory))
            directory = os.path.dirname(directory)
        return ".".join(reversed(names))

    @cached_property
    def is_test(self) -> bool:
        name = self.filename
        if name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py":
            return True
        return any(part in _TEST_DIRS for part in self.parts[:-1])

    @cached_property
    def is_operator_entrypoint(self) -> bool:
        """A management command or a script a person (or a deploy step) runs, not a module the server imports."""
        parts = self.parts[:-1]
        if any(parts[i] == "management" and parts[i + 1] == "commands" for i in range(len(parts) - 1)):
            return True
        return any(part in _SCRIPT_DIRS for part in parts)

    @cached_property
    def is_named_runner(self) -> bool:
        """Named for the migrate verb (``migrate.py``, ``run_migrations.py``, ``migrate_db.py``): a runner module,
        which may be a one-off script or a helper that start-up code calls; its callers say which."""
        lowered = self.filename.lower()
        return lowered in _RUNNER_FILENAMES or lowered.startswith("migrate_")

    @cached_property
    def is_migration(self) -> bool:
        """Alembic env.py, files under migrations/ or alembic/versions/, a runner module named for what it
        is (``migrate.py``, ``run_migrations.py``), or config paths.

        A name that merely contains "migrat" (``migration_pause.py``, ``data_migration_report.py``) is not
        migration code: what makes code migration code is being a migration runner or living where
        migrations live."""
        name = self.filename
        if self.is_named_runner:
            return True  # named for the verb: the migrate entrypoint (``migrate_db.py``), not ``migration_pause.py``
        if "migrat" in name.lower() and self.is_operator_entrypoint:
            return True  # ``manage.py migrate_locked``, ``scripts/run_migrations_once.py``
        if name == "env.py" and any(p in ("alembic", "migrations") for p in self.parts[:-1]):
            return True
        directories = "/" + "/".join(self.parts[:-1]) + "/"
        if any(f"/{d}/" in directories for d in _MIGRATION_DIRS):
            return True
        return bool(self.path) and self.config.is_migration_path(self.path)
