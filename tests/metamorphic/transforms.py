"""Rewrites that keep a program's meaning, each a small named class.

Every transformation takes a :class:`Project` (the files of an example) and returns the rewritten project,
or ``None`` when it has nothing to rewrite there (no project name to rename, no function that can move).
The ``# expect:`` comments ride along with the code they sit on, so the expected findings of a rewritten
project are read from its own annotations: a finding follows its line wherever the rewrite puts it.

A rewrite must never change what the program does at run time; where that cannot be shown (a name that a
string, a deployment file or a framework convention may refer to, an import whose binding another statement
shares), the transformation leaves that spot alone.
"""
from __future__ import annotations

import builtins
import keyword
import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import (
    Assignment,
    ClassScope,
    GlobalScope,
    ImportAssignment,
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
    ScopeProvider,
)

_EXPECT = re.compile(r"#\s*expect(?:-cli|-file)?:")
_REFERENCE_TEXT = re.compile(r"^[\w.:]+$")
_WORD = re.compile(r"\w+")
_BUILTINS = set(dir(builtins))
# Module files a framework finds by their name or place; renaming or emptying them changes the program.
_CONVENTIONAL_STEMS = {
    "models", "apps", "tasks", "admin", "signals", "settings", "urls", "wsgi", "asgi", "conftest", "manage",
    "env", "celery", "__main__", "gunicorn", "gunicorn.conf", "serializers", "receivers",
}
_CONVENTIONAL_DIRS = {"migrations", "versions", "commands"}
# Decorators that change what a def is, not only who calls it.
_DESCRIPTOR_DECORATORS = {"property", "staticmethod", "classmethod", "overload", "abstractmethod",
                          "cached_property", "contextmanager", "asynccontextmanager", "wraps"}


@dataclass(frozen=True)
class Project:
    """The files of one example: ``(posix path, text)`` pairs, Python and deployment files alike."""

    files: Tuple[Tuple[str, str], ...]
    #: module names follow ``__init__.py`` chains (an application) rather than the path (a doc example)
    package_modules: bool = True

    def text(self, path: str) -> str:
        return dict(self.files)[path]

    @property
    def python_paths(self) -> List[str]:
        return [path for path, _ in self.files if path.endswith(".py")]

    def with_files(self, changes: Dict[str, str]) -> "Project":
        merged = dict(self.files)
        merged.update(changes)
        return Project(tuple(sorted(merged.items())), self.package_modules)

    def module_of(self, path: str) -> str:
        parts = path[:-3].split("/")
        if not self.package_modules:
            return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        paths = set(self.python_paths)
        directory = parts[:-1]
        names = [] if parts[-1] == "__init__" else [parts[-1]]
        while directory and "/".join(directory + ["__init__.py"]) in paths:
            names.insert(0, directory[-1])
            directory = directory[:-1]
        return ".".join(names)

    def package_of(self, path: str) -> str:
        module = self.module_of(path)
        if path.endswith("/__init__.py") or path == "__init__.py":
            return module
        return module.rpartition(".")[0]

    def modules(self) -> Dict[str, str]:
        return {self.module_of(path): path for path in self.python_paths}

    def is_project_module(self, dotted_name: str) -> bool:
        return any(module == dotted_name or module.startswith(dotted_name + ".") for module in self.modules())

    def absolute_module(self, path: str, node: cst.ImportFrom) -> str:
        module = dotted_of(node.module) if node.module is not None else ""
        level = len(node.relative)
        if not level:
            return module
        package = self.package_of(path).split(".") if self.package_of(path) else []
        base = package[: len(package) - (level - 1)] if level - 1 <= len(package) else []
        return ".".join(base + ([module] if module else []))


def dotted_of(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{dotted_of(node.value)}.{node.attr.value}"
    return ""


def expression(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


def statement(text: str) -> cst.BaseStatement:
    return cst.parse_statement(text)


class Analysed:
    """One file parsed with the metadata the rewrites need."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.text = text
        self.lines = text.splitlines()
        self.wrapper = MetadataWrapper(cst.parse_module(text))
        self.module = self.wrapper.module
        self.scopes = self.wrapper.resolve(ScopeProvider)
        self.parents = self.wrapper.resolve(ParentNodeProvider)
        self.positions = self.wrapper.resolve(PositionProvider)
        self.global_scope = next(scope for scope in self.scopes.values() if isinstance(scope, GlobalScope))

    def line_of(self, node: cst.CSTNode) -> int:
        return self.positions[node].start.line

    def annotated(self, line: int) -> bool:
        return 0 < line <= len(self.lines) and bool(_EXPECT.search(self.lines[line - 1]))

    def all_scopes(self):
        seen = []
        for scope in self.scopes.values():
            if scope is not None and all(scope is not other for other in seen):
                seen.append(scope)
        return seen

    def bindings(self, name: str) -> List[Assignment]:
        """Every binding of ``name`` in any scope of the file."""
        found = []
        for scope in self.all_scopes():
            if name in scope.assignments:
                found.extend(scope.assignments[name])
        return found

    def bound_anywhere(self, name: str) -> bool:
        return bool(self.bindings(name))

    def top_level_imports(self) -> List[cst.SimpleStatementLine]:
        return [statement for statement in self.module.body if isinstance(statement, cst.SimpleStatementLine)
                and any(isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body)]


_analysed: Dict[Tuple[str, str], Optional[Analysed]] = {}


def analyse(project: Project) -> Dict[str, Analysed]:
    """Each file parsed once for all transformations (the trees are only read: rewrites build new ones)."""
    found = {}
    for path in project.python_paths:
        key = (path, project.text(path))
        if key not in _analysed:
            try:
                _analysed[key] = Analysed(*key)
            except cst.ParserSyntaxError:
                _analysed[key] = None
        if _analysed[key] is not None:
            found[path] = _analysed[key]
    return found


def is_future(node: cst.ImportFrom) -> bool:
    return node.module is not None and dotted_of(node.module) == "__future__"


def words_text_may_refer_to(project: Project, files: Dict[str, Analysed]) -> Set[str]:
    """Words a string or a deployment file could use to name a project object (``"app.jobs:run"``)."""
    words: Set[str] = set()
    for path, text in project.files:
        if not path.endswith(".py"):
            words.update(_WORD.findall(text))
    for analysed in files.values():
        for node in _walk(analysed.module):
            if isinstance(node, cst.SimpleString):
                try:
                    value = node.evaluated_value
                except Exception:  # bytes or odd prefixes: treat every word as possible
                    value = node.value
                if isinstance(value, bytes):
                    value = value.decode("latin-1")
                if _REFERENCE_TEXT.match(value.strip()):
                    words.update(_WORD.findall(value))
    return words


def _walk(node: cst.CSTNode) -> Iterable[cst.CSTNode]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


def in_conventional_place(path: str) -> bool:
    parts = path[:-3].split("/")
    return parts[-1] in _CONVENTIONAL_STEMS or any(part in _CONVENTIONAL_DIRS for part in parts[:-1])


class Transformation:
    name = ""
    #: the rewritten code spreads over more files, so only the whole-project analysis can see it
    cross_file = False

    def apply(self, project: Project) -> Optional[Project]:
        raise NotImplementedError


# --- rename -----------------------------------------------------------------------------------------------


class RenameProjectNames(Transformation):
    """Give the project's own module-level functions, classes and variables other names, everywhere they are
    used (library names, methods, parameters and names a string or a deployment file may spell stay)."""

    name = "rename_project_names"

    def apply(self, project: Project) -> Optional[Project]:
        files = analyse(project)
        if not files:
            return None
        mapping = self._mapping(project, files)
        if not mapping:
            return None
        changes = {}
        for path, analysed in files.items():
            rewritten = analysed.module.visit(_Renamer(mapping, _project_module_names(project, analysed)))
            if rewritten.code != analysed.text:
                changes[path] = rewritten.code
        return project.with_files(changes) if changes else None

    def _mapping(self, project: Project, files: Dict[str, Analysed]) -> Dict[str, str]:
        defined: Dict[str, str] = {}  # name -> "function" | "class" | "variable"
        referenced: Set[str] = set()
        excluded: Set[str] = set(words_text_may_refer_to(project, files))
        excluded.update(part for module in project.modules() for part in module.split("."))
        for path, analysed in files.items():
            module_names = _project_module_names(project, analysed)
            for statement_node in analysed.module.body:
                if isinstance(statement_node, cst.FunctionDef):
                    defined.setdefault(statement_node.name.value, "function")
                    if statement_node.decorators:
                        referenced.add(statement_node.name.value)
                elif isinstance(statement_node, cst.ClassDef):
                    defined.setdefault(statement_node.name.value, "class")
                elif isinstance(statement_node, cst.SimpleStatementLine):
                    for small in statement_node.body:
                        targets = []
                        if isinstance(small, cst.Assign):
                            targets = [t.target for t in small.targets]
                        elif isinstance(small, cst.AnnAssign):
                            targets = [small.target]
                        for target in targets:
                            if isinstance(target, cst.Name):
                                defined.setdefault(target.value, "variable")
            for node in _walk(analysed.module):
                if isinstance(node, cst.Param):
                    excluded.add(node.name.value)
                elif isinstance(node, cst.Arg) and node.keyword is not None:
                    excluded.add(node.keyword.value)
                elif isinstance(node, cst.Attribute):
                    if dotted_of(node.value) not in module_names:
                        excluded.add(node.attr.value)
                    else:
                        referenced.add(node.attr.value)
                elif isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node not in analysed.module.body:
                    excluded.add(node.name.value)  # methods and nested defs keep their names
                elif isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):
                    source = project.absolute_module(path, node)
                    for alias in node.names:
                        name = dotted_of(alias.name)
                        if project.is_project_module(source) and not project.is_project_module(f"{source}.{name}"):
                            referenced.add(name)
                        else:
                            excluded.add(name)
                        if alias.asname is not None:
                            excluded.add(dotted_of(alias.asname.name))
                elif isinstance(node, cst.Import):
                    for alias in node.names:
                        excluded.update(dotted_of(alias.name).split("."))
                        if alias.asname is not None:
                            excluded.add(dotted_of(alias.asname.name))
            for scope in analysed.all_scopes():
                if isinstance(scope, ClassScope):
                    excluded.update(assignment.name for assignment in scope.assignments)  # fields, hooks
                for access in scope.accesses:
                    if isinstance(access.node, cst.Name):
                        referenced.add(access.node.value)
        mapping = {}
        for index, name in enumerate(sorted(defined)):
            if (name in excluded or name not in referenced or name in _BUILTINS or keyword.iskeyword(name)
                    or (name.startswith("__") and name.endswith("__"))):
                continue
            mapping[name] = _new_name(name, defined[name], index)
        return mapping


def _new_name(name: str, kind: str, index: int) -> str:
    private = "_" if name.startswith("_") else ""
    if kind == "class" or name[:1].isupper() and not name.isupper():
        return f"{private}Zq{index}Kind"
    if name.isupper():
        return f"{private}ZQ{index}_VALUE"
    return f"{private}zq{index}_item"


def _project_module_names(project: Project, analysed: Analysed) -> Set[str]:
    """Local spellings of project modules in this file (``jobs`` after ``from app import jobs``)."""
    spellings = set()
    for node in _walk(analysed.module):
        if isinstance(node, cst.Import):
            for alias in node.names:
                module = dotted_of(alias.name)
                if project.is_project_module(module):
                    spellings.add(dotted_of(alias.asname.name) if alias.asname else module)
        elif isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):
            source = project.absolute_module(analysed.path, node)
            for alias in node.names:
                name = dotted_of(alias.name)
                if project.is_project_module(f"{source}.{name}" if source else name):
                    spellings.add(dotted_of(alias.asname.name) if alias.asname else name)
    return spellings


class _Renamer(cst.CSTTransformer):
    def __init__(self, mapping: Dict[str, str], module_names: Set[str]) -> None:
        self.mapping = mapping
        self.module_names = module_names
        self.keep: Set[int] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if dotted_of(node.value) not in self.module_names:
            self.keep.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.keep.add(id(node.keyword))

    def visit_Param(self, node: cst.Param) -> None:
        self.keep.add(id(node.name))

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if isinstance(node.name, cst.Attribute):
            for part in _walk(node.name):
                self.keep.add(id(part))

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            for part in _walk(alias.name):
                self.keep.add(id(part))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.module is not None:
            for part in _walk(node.module):
                self.keep.add(id(part))  # a module's name, even where a project variable shares it

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        if id(original) in self.keep or original.value not in self.mapping:
            return updated
        return updated.with_changes(value=self.mapping[original.value])


class RenameLocalVariables(Transformation):
    """Give every local variable of every function another name (parameters keep theirs: a caller may pass
    them by keyword)."""

    name = "rename_local_variables"

    def apply(self, project: Project) -> Optional[Project]:
        from libcst.metadata import FunctionScope

        changes = {}
        for path, analysed in analyse(project).items():
            replacements: Dict[int, cst.CSTNode] = {}
            for scope in analysed.all_scopes():
                if not isinstance(scope, FunctionScope):
                    continue
                for assignment in scope.assignments:
                    name = assignment.name
                    if not isinstance(assignment, Assignment) or isinstance(assignment, ImportAssignment):
                        continue
                    node = assignment.node
                    if not isinstance(node, cst.Name) or isinstance(analysed.parents.get(node), cst.Param):
                        continue
                    bindings = scope.assignments[name]
                    if any(not isinstance(b.node, cst.Name) or isinstance(analysed.parents.get(b.node), cst.Param)
                           for b in bindings):
                        continue  # a parameter, a nested def or an import of that name
                    if any(isinstance(inner, (cst.Global, cst.Nonlocal)) and any(
                            n.name.value == name for n in inner.names) for inner in _walk(scope.node)):
                        continue
                    new = f"{name.strip('_')}_v{len(replacements) % 97}"
                    if analysed.bound_anywhere(new) or new in _BUILTINS:
                        continue
                    references = [r.node for b in bindings for r in b.references]
                    if not all(isinstance(r, cst.Name) for r in references):
                        continue
                    if any(_enclosed_scope_binds(analysed, r, name, scope) for r in references):
                        continue
                    for b in bindings:
                        replacements[id(b.node)] = cst.Name(new)
                    for r in references:
                        replacements[id(r)] = cst.Name(new)
            if replacements:
                changes[path] = _replace_nodes(analysed.module, replacements).code
        return project.with_files(changes) if changes else None


class RenameOwnMethods(Transformation):
    """Rename the methods of a class with no base class (so no framework calls them by name) that only the
    class itself calls, through ``self``."""

    name = "rename_own_methods"

    def apply(self, project: Project) -> Optional[Project]:
        files = analyse(project)
        referred = words_text_may_refer_to(project, files)
        changes = {}
        for path, analysed in files.items():
            others = [set(_WORD.findall(a.text)) for other, a in files.items() if other != path]
            replacements: Dict[int, cst.CSTNode] = {}
            for cls in _walk(analysed.module):
                if not isinstance(cls, cst.ClassDef) or cls.bases or cls.keywords:
                    continue
                methods = [node for node in cls.body.body if isinstance(node, cst.FunctionDef)]
                for method in methods:
                    name = method.name.value
                    if (name.startswith("__") or name in referred or any(name in words for words in others)
                            or sum(m.name.value == name for m in methods) != 1):
                        continue
                    uses = [node for node in _walk(analysed.module)
                            if isinstance(node, (cst.Attribute, cst.Name)) and (
                                node.attr.value == name if isinstance(node, cst.Attribute) else node.value == name)]
                    attributes = [node for node in uses if isinstance(node, cst.Attribute)]
                    names = [node for node in uses if isinstance(node, cst.Name)]
                    # every other spelling of the name: the def's own and the attributes' (``x.attr``)
                    if len(names) != 1 + len(attributes) or not attributes:
                        continue
                    if not all(isinstance(a.value, cst.Name) and a.value.value == "self" and _inside(analysed, a, cls)
                               for a in attributes):
                        continue
                    new = f"{name}_renamed"
                    if new in analysed.text:
                        continue
                    replacements[id(method.name)] = cst.Name(new)
                    for attribute in attributes:
                        replacements[id(attribute.attr)] = cst.Name(new)
            if replacements:
                changes[path] = _replace_nodes(analysed.module, replacements).code
        return project.with_files(changes) if changes else None


def _enclosed_scope_binds(analysed: Analysed, node: cst.CSTNode, name: str, scope) -> bool:
    """Whether ``node`` sits in a nested scope that binds ``name`` itself (then it is another variable)."""
    inner = analysed.scopes.get(node)
    while inner is not None and inner is not scope:
        if name in inner.assignments:
            return True
        inner = getattr(inner, "parent", None)
    return False


# --- move a function to another module --------------------------------------------------------------------


class MoveFunctions(Transformation):
    """Move the module-level functions that need nothing of their module but its imports into a new sibling
    module, and import them back where they were (so other modules' imports of them still work)."""

    cross_file = True

    def __init__(self, relative: bool) -> None:
        self.relative = relative
        self.name = "move_function_relative_import" if relative else "move_function_absolute_import"

    def apply(self, project: Project) -> Optional[Project]:
        files = analyse(project)
        referred = words_text_may_refer_to(project, files)
        changes: Dict[str, str] = {}
        for path, analysed in files.items():
            if path.endswith("__init__.py") or in_conventional_place(path):
                continue
            module = project.module_of(path)
            if self.relative and "." not in module:
                continue  # a top-level module has no package to import relatively from
            if any(isinstance(small, cst.ImportFrom) and isinstance(small.names, cst.ImportStar)
                   for line in analysed.top_level_imports() for small in line.body):
                continue  # names a star import brings could not be copied to the new module
            movable = [node for node in analysed.module.body if isinstance(node, cst.FunctionDef)
                       and self._movable(analysed, node, referred)]
            movable = self._closed(analysed, movable)
            if not movable:
                continue
            stem = path.rsplit("/", 1)[-1][:-3]
            new_stem = f"{stem}_parts"
            new_path = path[: len(path) - len(stem) - 3] + new_stem + ".py"
            if new_path in dict(project.files) or new_path in changes:
                continue
            needed = self._needed_imports(analysed, movable)
            if needed is None:
                continue
            names = ", ".join(node.name.value for node in movable)
            if self.relative:
                back = statement(f"from .{new_stem} import {names}\n")
            else:
                back = statement(f"from {module.rpartition('.')[0] + '.' if '.' in module else ''}{new_stem} import {names}\n")
            body = []
            inserted = False
            for node in analysed.module.body:
                if any(node is moved for moved in movable):
                    if not inserted:
                        body.append(back.with_changes(leading_lines=node.leading_lines))
                        inserted = True
                    continue
                body.append(node)
            changes[path] = analysed.module.with_changes(body=body).code
            header = [statement("from __future__ import annotations\n")] if _has_future_annotations(analysed) else []
            new_body = header + needed + [node.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
                                          if i or header or needed else node.with_changes(leading_lines=[])
                                          for i, node in enumerate(movable)]
            changes[new_path] = cst.Module(body=new_body).code
        return project.with_files(changes) if changes else None

    def _movable(self, analysed: Analysed, node: cst.FunctionDef, referred: Set[str]) -> bool:
        name = node.name.value
        if node.decorators or name in referred or analysed.annotated(analysed.line_of(node.name)):
            return False
        if len(analysed.global_scope.assignments[name]) != 1:
            return False
        for inner in _walk(node):
            if isinstance(inner, (cst.Global, cst.Nonlocal)):
                return False
            if isinstance(inner, cst.Name) and inner.value in ("globals", "locals", "vars", "__name__", "__file__"):
                return False
        return True

    def _closed(self, analysed: Analysed, movable: List[cst.FunctionDef]) -> List[cst.FunctionDef]:
        """The candidates whose module-level names are imports or other candidates (they move together)."""
        kept = list(movable)
        changed = True
        while changed:
            changed = False
            for node in list(kept):
                for assignment in self._globals_used(analysed, node):
                    if isinstance(assignment, ImportAssignment) or any(assignment.node is other for other in kept):
                        continue
                    kept.remove(node)
                    changed = True
                    break
        return kept

    def _globals_used(self, analysed: Analysed, node: cst.FunctionDef) -> List[Assignment]:
        used = []
        for assignment in analysed.global_scope.assignments:
            for access in assignment.references:
                if _inside(analysed, access.node, node):
                    used.append(assignment)
                    break
        return used

    def _needed_imports(self, analysed: Analysed, movable: List[cst.FunctionDef]) -> Optional[List[cst.BaseStatement]]:
        wanted: Dict[int, Set[str]] = {}
        top = analysed.top_level_imports()
        for node in movable:
            for assignment in self._globals_used(analysed, node):
                if not isinstance(assignment, ImportAssignment):
                    continue
                owner = analysed.parents[assignment.node]
                if not any(owner is statement_line for statement_line in top):
                    return None  # imported under an `if` or `try`: copying it out would change the import
                wanted.setdefault(id(assignment.node), set()).add(assignment.name)
        statements = []
        for line in top:
            for small in line.body:
                if id(small) not in wanted:
                    continue
                names = wanted[id(small)]
                if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                    kept = [alias for alias in small.names if _bound_name(alias) in names]
                    kept = [alias.with_changes(comma=cst.MaybeSentinel.DEFAULT) for alias in kept]
                    statements.append(cst.SimpleStatementLine(body=[small.with_changes(
                        names=kept, lpar=None, rpar=None)]))
                elif isinstance(small, cst.Import):
                    kept = [alias.with_changes(comma=cst.MaybeSentinel.DEFAULT) for alias in small.names
                            if _bound_name(alias) in names or dotted_of(alias.name) in names]
                    statements.append(cst.SimpleStatementLine(body=[small.with_changes(names=kept)]))
                else:
                    return None
        return statements


def _bound_name(alias: cst.ImportAlias) -> str:
    if alias.asname is not None:
        return dotted_of(alias.asname.name)
    return dotted_of(alias.name)


def _has_future_annotations(analysed: Analysed) -> bool:
    for line in analysed.top_level_imports():
        for small in line.body:
            if isinstance(small, cst.ImportFrom) and is_future(small):
                return True
    return False


def _inside(analysed: Analysed, node: cst.CSTNode, container: cst.CSTNode) -> bool:
    current = node
    while current is not None:
        if current is container:
            return True
        current = analysed.parents.get(current)
    return False


# --- import forms -----------------------------------------------------------------------------------------


def _single_binding(analysed: Analysed, name: str) -> bool:
    return len(analysed.bindings(name)) == 1


def _replace_nodes(module: cst.Module, replacements: Dict[int, cst.CSTNode],
                   statement_replacements: Optional[Dict[int, List[cst.BaseSmallStatement]]] = None) -> cst.Module:
    return module.visit(_NodeReplacer(replacements, statement_replacements or {}))


class _NodeReplacer(cst.CSTTransformer):
    def __init__(self, replacements: Dict[int, cst.CSTNode], statements: Dict[int, List[cst.BaseSmallStatement]]):
        self.replacements = replacements
        self.statements = statements

    def on_leave(self, original, updated):
        if id(original) in self.replacements:
            return self.replacements[id(original)]
        if id(original) in self.statements:
            return cst.FlattenSentinel(self.statements[id(original)])
        return updated


def _module_level_import_froms(analysed: Analysed) -> List[cst.ImportFrom]:
    return [small for line in analysed.top_level_imports() for small in line.body
            if isinstance(small, cst.ImportFrom) and not is_future(small) and not isinstance(small.names, cst.ImportStar)]


def _module_level_imports(analysed: Analysed) -> List[cst.Import]:
    return [small for line in analysed.top_level_imports() for small in line.body if isinstance(small, cst.Import)]


def _name_accesses(analysed: Analysed, import_node: cst.CSTNode, name: str) -> Optional[List[cst.Name]]:
    """The Name nodes reading what ``import_node`` bound to ``name``; None when some reads are not plain
    names (a string annotation) or the name has other bindings."""
    if not _single_binding(analysed, name):
        return None
    accesses = []
    for assignment in analysed.global_scope.assignments[name]:
        if assignment.node is not import_node:
            return None
        for access in assignment.references:
            if not isinstance(access.node, cst.Name):
                return None
            accesses.append(access.node)
    return accesses


class FromImportToModuleAttribute(Transformation):
    """``from m import f`` ... ``f()`` becomes ``import m`` ... ``m.f()`` (``from .m import f`` becomes
    ``from . import m``), for library and project modules alike."""

    name = "from_import_to_module_attribute"

    def apply(self, project: Project) -> Optional[Project]:
        files = analyse(project)
        changes = {}
        for path, analysed in files.items():
            replacements: Dict[int, cst.CSTNode] = {}
            statements: Dict[int, List[cst.BaseSmallStatement]] = {}
            bound_heads: Set[str] = set()
            for node in _module_level_import_froms(analysed):
                source = project.absolute_module(path, node)
                if node.relative:
                    if node.module is None:
                        continue  # `from . import m` already imports a module
                    parent, _, last = dotted_of(node.module).rpartition(".")
                    new_import = cst.ImportFrom(module=expression(parent) if parent else None,
                                                relative=node.relative, names=[cst.ImportAlias(cst.Name(last))])
                    spelled, head = last, last
                else:
                    spelled = dotted_of(node.module)
                    head = spelled.split(".")[0]
                    new_import = cst.Import(names=[cst.ImportAlias(expression(spelled))])
                if head in bound_heads or not self._head_free(analysed, head, node.relative):
                    continue
                kept, moved = [], []
                for alias in node.names:
                    local = _bound_name(alias)
                    name = dotted_of(alias.name)
                    accesses = _name_accesses(analysed, node, local)
                    if (accesses is None or not accesses or project.is_project_module(f"{source}.{name}")
                            or not project.is_project_module(source) and _may_be_submodule(analysed, name, accesses)):
                        kept.append(alias)
                        continue
                    moved.append(alias)
                    for access in accesses:
                        replacements[id(access)] = expression(f"{spelled}.{name}")
                if not moved:
                    continue
                bound_heads.add(head)
                new_statements: List[cst.BaseSmallStatement] = [new_import]
                if kept:
                    kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                    new_statements.insert(0, node.with_changes(names=kept, lpar=None, rpar=None))
                statements[id(node)] = new_statements
            if statements:
                changes[path] = _replace_nodes(analysed.module, replacements, statements).code
        return project.with_files(changes) if changes else None

    @staticmethod
    def _head_free(analysed: Analysed, head: str, relative) -> bool:
        for assignment in analysed.bindings(head):
            if relative or not isinstance(assignment, ImportAssignment) or not isinstance(assignment.node, cst.Import):
                return False
        return True


def _may_be_submodule(analysed: Analysed, name: str, accesses: List[cst.Name]) -> bool:
    """A lowercase name imported from a library may be a submodule (``from redis import asyncio``), which
    importing the package alone would not bind; one that every use calls is a function."""
    if not name.islower():
        return False
    for access in accesses:
        parent = analysed.parents.get(access)
        if not (isinstance(parent, cst.Call) and parent.func is access) and not isinstance(parent, cst.Decorator):
            return True
    return False


class ModuleAttributeToFromImport(Transformation):
    """``import m`` ... ``m.f()`` becomes ``from m import f`` ... ``f()`` when every use of ``m`` is such an
    attribute and the names it brings in are free."""

    name = "module_attribute_to_from_import"

    def apply(self, project: Project) -> Optional[Project]:
        files = analyse(project)
        changes = {}
        for path, analysed in files.items():
            replacements: Dict[int, cst.CSTNode] = {}
            statements: Dict[int, List[cst.BaseSmallStatement]] = {}
            taken: Set[str] = set()
            for node in _module_level_imports(analysed):
                if len(node.names) != 1:
                    continue
                alias = node.names[0]
                module = dotted_of(alias.name)
                key = dotted_of(alias.asname.name) if alias.asname else module
                assignments = analysed.global_scope.assignments[key]
                head = key.split(".")[0]
                if len(assignments) != 1 or len(analysed.bindings(head)) != 1 and alias.asname is None:
                    continue
                if alias.asname is not None and not _single_binding(analysed, key):
                    continue
                uses = []
                for access in next(iter(assignments)).references:
                    chain = access.node
                    if dotted_of(chain) != key:
                        uses = None
                        break
                    parent = analysed.parents.get(chain)
                    if not isinstance(parent, cst.Attribute) or parent.value is not chain:
                        uses = None
                        break
                    uses.append(parent)
                if not uses:
                    continue
                brought = {use.attr.value for use in uses}
                if any(analysed.bound_anywhere(name) or name in taken or name in _BUILTINS for name in brought):
                    continue
                if self._assigned_to(analysed, uses):
                    continue
                taken.update(brought)
                for use in uses:
                    replacements[id(use)] = cst.Name(use.attr.value)
                statements[id(node)] = [cst.ImportFrom(module=expression(module),
                                                       names=[cst.ImportAlias(cst.Name(name)) for name in sorted(brought)])]
            if statements:
                module_node = _replace_nodes(analysed.module, replacements, statements)
                changes[path] = _fix_commas(module_node).code
        return project.with_files(changes) if changes else None

    @staticmethod
    def _assigned_to(analysed: Analysed, uses: List[cst.Attribute]) -> bool:
        for use in uses:
            parent = analysed.parents.get(use)
            if isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.Del)):
                return True
            if isinstance(parent, cst.AnnAssign) and parent.target is use:
                return True
        return False


def _fix_commas(module: cst.Module) -> cst.Module:
    return cst.parse_module(module.code)


class ImportUnderAlias(Transformation):
    """``from m import f`` becomes ``from m import f as f_alias`` and ``import m`` becomes ``import m as
    m_alias``, every use following."""

    name = "import_under_alias"

    def apply(self, project: Project) -> Optional[Project]:
        files = analyse(project)
        changes = {}
        for path, analysed in files.items():
            replacements: Dict[int, cst.CSTNode] = {}
            for node in _module_level_import_froms(analysed):
                for alias in node.names:
                    if alias.asname is not None:
                        continue
                    local = dotted_of(alias.name)
                    new = f"{local}_alias"
                    accesses = _name_accesses(analysed, node, local)
                    if not accesses or analysed.bound_anywhere(new):
                        continue
                    replacements[id(alias)] = alias.with_changes(asname=cst.AsName(name=cst.Name(new)))
                    for access in accesses:
                        replacements[id(access)] = cst.Name(new)
            for node in _module_level_imports(analysed):
                for alias in node.names:
                    if alias.asname is not None:
                        continue
                    module = dotted_of(alias.name)
                    new = module.replace(".", "_") + "_alias"
                    assignments = analysed.global_scope.assignments[module]
                    if len(assignments) != 1 or analysed.bound_anywhere(new):
                        continue
                    if "." in module:
                        head = module.split(".")[0]
                        if len(analysed.bindings(head)) != 1:
                            continue  # `import a.b` and `import a.c` share `a`: a use of `a.c` still needs it
                    uses = [access.node for access in next(iter(assignments)).references]
                    if not uses or any(dotted_of(use) != module for use in uses):
                        continue
                    replacements[id(alias)] = alias.with_changes(asname=cst.AsName(name=cst.Name(new)))
                    for use in uses:
                        replacements[id(use)] = cst.Name(new)
            if replacements:
                changes[path] = _replace_nodes(analysed.module, replacements).code
        return project.with_files(changes) if changes else None


# --- a function becomes a method ---------------------------------------------------------------------------


class FunctionToMethod(Transformation):
    """A module-level function that only its own module uses becomes a method of a small class, and every
    use goes through one instance of it (``service.send_digest()``)."""

    name = "function_to_method"

    def apply(self, project: Project) -> Optional[Project]:
        files = analyse(project)
        referred = words_text_may_refer_to(project, files)
        other_words: Dict[str, Set[str]] = {
            path: set(_WORD.findall(analysed.text)) for path, analysed in files.items()}
        changes = {}
        for path, analysed in files.items():
            replacements: Dict[int, cst.CSTNode] = {}
            statements: Dict[int, List[cst.BaseStatement]] = {}
            for node in analysed.module.body:
                if not isinstance(node, cst.FunctionDef) or node.decorators:
                    continue
                name = node.name.value
                if name in referred or any(name in words for other, words in other_words.items() if other != path):
                    continue
                accesses = _name_accesses(analysed, node, name)
                if not accesses:
                    continue
                class_name = "".join(part.capitalize() for part in name.split("_") if part) + "Service"
                instance = f"{name.strip('_')}_service"
                if analysed.bound_anywhere(class_name) or analysed.bound_anywhere(instance):
                    continue
                if any(isinstance(inner, (cst.Global, cst.Nonlocal)) for inner in _walk(node)):
                    continue
                params = node.params
                self_param = cst.Param(name=cst.Name("self"))
                if params.posonly_params:
                    params = params.with_changes(posonly_params=[self_param, *params.posonly_params])
                else:
                    params = params.with_changes(params=[self_param, *params.params])
                method = node.with_changes(params=params, leading_lines=[])
                holder = cst.ClassDef(name=cst.Name(class_name), body=cst.IndentedBlock(body=[method]),
                                      leading_lines=node.leading_lines)
                made = statement(f"{instance} = {class_name}()\n")
                statements[id(node)] = [holder, made]
                for access in accesses:
                    replacements[id(access)] = expression(f"{instance}.{name}")
            if statements:
                module_node = analysed.module.visit(_StatementReplacer(replacements, statements))
                changes[path] = module_node.code
        return project.with_files(changes) if changes else None


class _StatementReplacer(cst.CSTTransformer):
    def __init__(self, replacements, statements):
        self.replacements = replacements
        self.statements = statements

    def on_leave(self, original, updated):
        if id(original) in self.replacements:
            return self.replacements[id(original)]
        if id(original) in self.statements:
            made = list(self.statements[id(original)])
            holder = made[0]
            # the method is the function as rewritten (its own uses of itself replaced)
            inner = updated.with_changes(params=holder.body.body[0].params, leading_lines=[])
            made[0] = holder.with_changes(body=cst.IndentedBlock(body=[inner]))
            return cst.FlattenSentinel(made)
        return updated


# --- decorator <-> explicit call ---------------------------------------------------------------------------


class DecoratorToCall(Transformation):
    """``@register(...)`` over ``def job`` becomes ``job = register(...)(job)`` after it: what Python does
    with a decorator, spelled out."""

    name = "decorator_to_call"

    def apply(self, project: Project) -> Optional[Project]:
        files = analyse(project)
        changes = {}
        for path, analysed in files.items():
            statements: Dict[int, List[cst.BaseStatement]] = {}
            for node in analysed.module.body:
                if not isinstance(node, cst.FunctionDef) or not node.decorators:
                    continue
                if any(analysed.annotated(analysed.line_of(decorator)) for decorator in node.decorators):
                    continue
                spelled = [cst.Module(body=[]).code_for_node(decorator.decorator) for decorator in node.decorators]
                if any(text.split("(")[0].split(".")[-1] in _DESCRIPTOR_DECORATORS for text in spelled):
                    continue
                name = node.name.value
                if len(analysed.global_scope.assignments[name]) != 1:
                    continue
                call = name
                for text in reversed(spelled):
                    call = f"({text})({call})" if not re.fullmatch(r"[\w.]+(\(.*\))?", text, re.DOTALL) else f"{text}({call})"
                try:
                    registration = statement(f"{name} = {call}\n")
                except cst.ParserSyntaxError:
                    continue
                first_line = node.decorators[0].leading_lines
                statements[id(node)] = [node.with_changes(decorators=[], leading_lines=first_line), registration]
            if statements:
                module_node = analysed.module.visit(_NodeReplacer({}, statements))
                changes[path] = module_node.code
        return project.with_files(changes) if changes else None


# --- a call behind a project helper ------------------------------------------------------------------------


class CallThroughHelper(Transformation):
    """A call in a function body to an imported name or a module-level function goes through a small helper
    the module defines (``def _send_mail_via(p0, subject): return mail.send_mail(p0, subject=subject)``)."""

    name = "call_through_helper"

    def apply(self, project: Project) -> Optional[Project]:
        files = analyse(project)
        changes = {}
        for path, analysed in files.items():
            replacements: Dict[int, cst.CSTNode] = {}
            helpers: List[cst.BaseStatement] = []
            used_names: Set[str] = set(_WORD.findall(analysed.text))
            for call in self._eligible_calls(analysed):
                callee = cst.Module(body=[]).code_for_node(call.func)
                positional = [arg for arg in call.args if arg.keyword is None]
                keywords = [arg.keyword.value for arg in call.args if arg.keyword is not None]
                params = [f"p{index}" for index in range(len(positional))] + keywords
                if len(set(params)) != len(params) or callee.split(".")[0] in params:
                    continue
                helper = f"_{callee.split('.')[-1].strip('_')}_via{len(helpers)}"
                if helper in used_names:
                    continue
                used_names.add(helper)
                forwarded = [f"p{index}" for index in range(len(positional))] + [f"{k}={k}" for k in keywords]
                helpers.append(statement(
                    f"def {helper}({', '.join(params)}):\n    return {callee}({', '.join(forwarded)})\n"))
                new_args = [arg for arg in call.args]
                replacements[id(call)] = call.with_changes(func=cst.Name(helper), args=new_args)
            if not helpers:
                continue
            module_node = _replace_nodes(analysed.module, replacements)
            body = list(module_node.body)
            position = 0
            for index, node in enumerate(body):
                if isinstance(node, cst.SimpleStatementLine) and all(
                        isinstance(small, (cst.Import, cst.ImportFrom)) for small in node.body):
                    position = index + 1
                elif index == 0 and isinstance(node, cst.SimpleStatementLine) and isinstance(
                        node.body[0], cst.Expr) and isinstance(node.body[0].value, cst.SimpleString):
                    position = 1  # a module docstring
                else:
                    break
            spaced = [helper.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()]) for helper in helpers]
            body[position:position] = spaced
            changes[path] = module_node.with_changes(body=body).code
        return project.with_files(changes) if changes else None

    def _eligible_calls(self, analysed: Analysed) -> List[cst.Call]:
        calls = []
        for function in _walk(analysed.module):
            if not isinstance(function, cst.FunctionDef):
                continue
            for line in _walk(function.body):
                if not isinstance(line, cst.SimpleStatementLine) or analysed.annotated(analysed.line_of(line)):
                    continue
                for small in line.body:
                    value = None
                    if isinstance(small, (cst.Expr, cst.Return)):
                        value = small.value
                    elif isinstance(small, cst.Assign):
                        value = small.value
                    if isinstance(value, cst.Await):
                        value = value.expression
                    if isinstance(value, cst.Call) and self._wrappable(analysed, value, line):
                        calls.append(value)
        unique = []
        for call in calls:
            if all(call is not other for other in unique):
                unique.append(call)
        return unique

    @staticmethod
    def _wrappable(analysed: Analysed, call: cst.Call, line: cst.CSTNode) -> bool:
        end = analysed.positions[line].end.line
        if any(analysed.annotated(number) for number in range(analysed.line_of(line), end + 1)):
            return False
        if any(arg.star for arg in call.args):
            return False
        root = call.func
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name) or not dotted_of(call.func):
            return False
        scope = analysed.scopes.get(root)
        if scope is None:
            return False
        # the name must mean the same inside the helper: a module-level import or function, not shadowed
        assignments = [a for a in scope.accesses if a.node is root]
        if not assignments:
            return False
        referents = list(assignments[0].referents)
        if len(referents) != 1:
            return False
        referent = referents[0]
        if referent.scope is not analysed.global_scope:
            return False
        return len(analysed.global_scope.assignments[root.value]) == 1


TRANSFORMATIONS: Tuple[Transformation, ...] = (
    RenameProjectNames(),
    RenameLocalVariables(),
    RenameOwnMethods(),
    MoveFunctions(relative=False),
    MoveFunctions(relative=True),
    FromImportToModuleAttribute(),
    ModuleAttributeToFromImport(),
    ImportUnderAlias(),
    FunctionToMethod(),
    DecoratorToCall(),
    CallThroughHelper(),
)
