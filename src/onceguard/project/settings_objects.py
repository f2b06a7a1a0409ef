"""What a setting read off a settings object is made of.

``settings.run_tickers`` where ``settings = config.load()`` and ``load`` returns ``Settings(...,
run_tickers=os.environ.get("RUN_TICKERS", "0") == "1")``: the setting is that expression, in the module that
writes it.  A field of a pydantic ``BaseSettings`` class (``run_tickers: bool = False``) is read from the
environment variable of its name (after the class's ``env_prefix``), parsed as pydantic parses it.  A key of an
application's config mapping filled from a class (``app.config.from_object(Config)`` then
``app.config["RUN_SCHEDULER"]``) is that class's attribute.  Gates on such settings are gates on those variables
(``process_roles``).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import List, Optional, Tuple, Union

from ..analysis.facts import ModuleFacts, walk_no_nested_functions
from ..knowledge import process_state as known
from . import index as project
from .definitions import top_level
from .instance_lifetimes import _top_level_statements

#: The base classes that read their fields from the environment.
_SETTINGS_BASES = ("BaseSettings",)
#: What pydantic reads as true and false in a boolean field's variable.
_TRUE_WORDS = frozenset({"1", "true", "t", "yes", "y", "on"})
_FALSE_WORDS = frozenset({"0", "false", "f", "no", "n", "off"})


@dataclass(frozen=True)
class EnvironmentField:
    """A field of a settings class filled from an environment variable."""

    variable: str
    boolean: bool  # annotated ``bool``: the variable's text is parsed as pydantic parses it

    def truth(self, text: str) -> Optional[bool]:
        lowered = text.strip().lower()
        if not self.boolean:
            return bool(text)
        return True if lowered in _TRUE_WORDS else False if lowered in _FALSE_WORDS else None


#: (expression, its module), or a field of the environment
Derived = Union[Tuple[ast.AST, ModuleFacts], EnvironmentField]


def derived_setting(node: Union[ast.Attribute, ast.Subscript], facts: ModuleFacts, bound_once) -> Optional[Derived]:
    """What ``node`` (``settings.run_tickers``) is computed from, when the object it is read off is made by a call
    of the project: a settings loader or a settings class; or what a config mapping's key (``app.config["X"]``)
    holds when the mapping is filled from a class.  ``bound_once(name, facts)`` gives the value a name is bound
    to once."""
    if not facts.context.cross_file:
        return None
    if isinstance(node, ast.Subscript):
        return _loaded_config_key(node, facts)
    if (facts.qualify(node.value) or "") == _DJANGO_SETTINGS:
        return _django_setting(node.attr, facts)
    if isinstance(node.value, ast.Name) and facts.imports.is_imported(node.value.id) \
            and bound_once(node.value, facts) is None:
        # ``settings.RUN_SCHEDULER`` of ``from app import settings``: the settings module's own assignment
        found = project.find_assignment(facts.qualify(node) or "", facts.config, project.roots_for(facts))
        if found is not None:
            return found
    made, where = _object_made(node.value, facts, bound_once)
    if made is None:
        return None
    return _field_of(made, node.attr, where)


#: Django's settings object: ``settings.NAME`` is the settings module's top-level ``NAME``.
_DJANGO_SETTINGS = "django.conf.settings"


def django_settings_modules(facts: ModuleFacts) -> List[ModuleFacts]:
    """The project's Django settings modules: those that assign ``INSTALLED_APPS`` at module level (under a
    top-level ``if``/``try`` too), tests aside."""
    found = []
    for path in project.files_mentioning(known.DJANGO_APPS_SETTING, project.search_root(facts)):
        other = project.module_facts(path, facts.config)
        if other is not None and not other.context.is_test and any(
                isinstance(target, ast.Name) and target.id == known.DJANGO_APPS_SETTING
                for statement in _top_level_statements(other.tree) if isinstance(statement, ast.Assign)
                for target in statement.targets):
            found.append(other)
    return found


def _django_setting(name: str, facts: ModuleFacts) -> Optional[Tuple[ast.AST, ModuleFacts]]:
    """The value the project's Django settings modules give ``name``: one expression, when every settings module
    that assigns it at its top level assigns the same text."""
    found = []
    for where in django_settings_modules(facts):
        values = [statement.value for statement in where.tree.body if isinstance(statement, ast.Assign)
                  for target in statement.targets if isinstance(target, ast.Name) and target.id == name]
        if values:
            found.append((values[-1], where))
    if not found or len({ast.dump(value) for value, _ in found}) != 1:
        return None
    return found[0]


def _object_made(value: ast.AST, facts: ModuleFacts, bound_once) -> Tuple[Optional[ast.Call], ModuleFacts]:
    """The call that makes the object ``value`` names (a local or module-level name bound once, a name imported
    from the module that makes it, or the call itself)."""
    if isinstance(value, ast.Name):
        bound = bound_once(value, facts)
        if bound is None and facts.imports.is_imported(value.id):
            found = project.find_assignment(facts.qualify(value) or "", facts.config, project.roots_for(facts))
            if found is not None:
                bound, facts = found
        value = bound
    if isinstance(value, ast.Await):
        value = value.value
    return (value, facts) if isinstance(value, ast.Call) else (None, facts)


def _field_of(call: ast.Call, attribute: str, facts: ModuleFacts, depth: int = 0) -> Optional[Derived]:
    for keyword in call.keywords:
        if keyword.arg == attribute:
            return keyword.value, facts  # ``Settings(run_tickers=<expr>)`` written here
    qualified = facts.callee(call) or ""
    if not qualified or depth > 2:
        return None
    if "." not in qualified:  # a class or loader of this module
        local = top_level(facts, qualified)
        found_class = (local, facts) if isinstance(local, ast.ClassDef) else None
        found = (local, facts) if isinstance(local, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    else:
        roots = project.roots_for(facts)
        found_class = project.find_class(qualified, facts.config, roots)
        found = project.find_function(qualified, facts.config, roots) if found_class is None else None
    if found_class is not None:
        field = _environment_field(found_class[0], attribute, found_class[1])
        if field is None and not call.args and not any(k.arg is None for k in call.keywords):
            return _field_default(found_class[0], attribute, found_class[1])
        return field
    if found is None:
        return None
    function, where = found
    for node in walk_no_nested_functions(function):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
            # ``return Settings(...)`` (a loader); the first return that makes one speaks for the loader
            return _field_of(node.value, attribute, where, depth + 1)
    return None


#: ``dataclasses.field``: a field's default is its ``default`` or what its ``default_factory`` returns.
_FIELD_FUNCTION = "dataclasses.field"


def _field_default(cls: ast.ClassDef, attribute: str, facts: ModuleFacts) -> Optional[Tuple[ast.AST, ModuleFacts]]:
    """The value an instance made without that field's argument holds: the class body's default
    (``migrate_on_start: bool = field(default_factory=lambda: _flag(os.environ.get("MIGRATE_ON_START")))``),
    when no method assigns ``self.<attribute>``."""
    from .process_state import CLASS, class_attribute_binding

    binding = class_attribute_binding(cls, attribute, facts)
    if binding is None or binding.scope != CLASS or any(
            isinstance(t, ast.Attribute) and t.attr == attribute and isinstance(t.value, ast.Name)
            and t.value.id == "self" for n in ast.walk(cls) if isinstance(n, (ast.Assign, ast.AnnAssign))
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target])):
        return None
    value = binding.value
    if isinstance(value, ast.Call) and (facts.callee(value) or "") == _FIELD_FUNCTION:
        keywords = {k.arg: k.value for k in value.keywords}
        if "default" in keywords:
            return keywords["default"], facts
        factory = keywords.get("default_factory")
        if isinstance(factory, ast.Lambda) and not factory.args.args:
            return factory.body, facts
        return None
    return value, facts


#: The method that fills a config mapping from an object's upper-case attributes (Flask, Quart).
_FROM_OBJECT = "from_object"
#: The attribute an application keeps its config mapping in.
_CONFIG_ATTRIBUTE = "config"
#: How many base classes up a config class's attribute is looked for.
_MAX_BASES = 3


def _loaded_config_key(node: ast.Subscript, facts: ModuleFacts) -> Optional[Tuple[ast.AST, ModuleFacts]]:
    """``app.config["RUN_SCHEDULER"]`` in a function that fills ``app.config`` only with
    ``app.config.from_object(<class>)``: the class's ``RUN_SCHEDULER`` (its own or a base's), in its module.
    The class is named there, or is the default of a parameter that no call outside the tests fills.  Any other
    write of the mapping in the function (another loader, ``update``, an assigned key) leaves it unknown."""
    key = node.slice
    mapping = node.value
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str) and isinstance(mapping, ast.Attribute)
            and mapping.attr == _CONFIG_ATTRIBUTE):
        return None
    function = facts.enclosing_function(node)
    if function is None:
        return None
    spelled = ast.dump(mapping)
    loaded: List[ast.AST] = []
    for inner in walk_no_nested_functions(function):
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) \
                and ast.dump(inner.func.value) == spelled:
            if inner.func.attr != _FROM_OBJECT or len(inner.args) != 1 or inner.keywords:
                if inner.func.attr not in ("get", "__getitem__"):
                    return None  # (filled some other way too: ``update``, ``from_pyfile``, ``from_envvar``)
                continue
            loaded.append(inner.args[0])
        elif isinstance(inner, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = inner.targets if isinstance(inner, (ast.Assign, ast.Delete)) else [inner.target]
            if any(isinstance(t, ast.Subscript) and ast.dump(t.value) == spelled for t in targets):
                return None
    if len(loaded) != 1:
        return None
    found = _config_class(loaded[0], function, facts)
    if found is None:
        return None
    return _class_setting(found[0], key.value, found[1], 0)


def _config_class(value: ast.AST, function: ast.AST, facts: ModuleFacts) -> Optional[Tuple[ast.ClassDef, ModuleFacts]]:
    from ..analysis.handed import argument_for, parameter_defaults
    from .declared_types import class_of
    from .fixed_arguments import callers_of

    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        # ``from_object("digest.config.Config")``: an import path
        return project.find_class(value.value.replace(":", "."), facts.config, project.roots_for(facts))
    if isinstance(value, ast.Name) and value.id in parameter_defaults(function):
        for call, other in callers_of(function, facts):
            if not other.context.is_test and (argument_for(call, function, value.id) is not None or any(
                    isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)):
                return None  # (a caller hands its own class)
        value = parameter_defaults(function)[value.id]
    elif isinstance(value, ast.Name) and any(a.arg == value.id for a in ast.walk(function.args)
                                             if isinstance(a, ast.arg)):
        return None  # a parameter every caller fills: the class is the caller's
    return class_of(value, facts) if isinstance(value, (ast.Name, ast.Attribute)) else None


def _class_setting(cls: ast.ClassDef, name: str, facts: ModuleFacts, depth: int) -> Optional[Tuple[ast.AST, ModuleFacts]]:
    """The value the class body (or, failing that, a base's) gives ``name``."""
    from .declared_types import base_classes

    values = [s.value for s in cls.body if getattr(s, "value", None) is not None and (
        (isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in s.targets))
        or (isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.target.id == name))]
    if values:
        return (values[0], facts) if len(values) == 1 else None
    if depth >= _MAX_BASES:
        return None
    for base, where in base_classes(cls, facts):
        found = _class_setting(base, name, where, depth + 1)
        if found is not None:
            return found
    return None


def _environment_field(cls: ast.ClassDef, attribute: str, facts: ModuleFacts) -> Optional[EnvironmentField]:
    if not any((facts.qualify(base) or "").rsplit(".", 1)[-1] in _SETTINGS_BASES for base in cls.bases):
        return None
    annotation = next((s.annotation for s in cls.body if isinstance(s, ast.AnnAssign)
                       and isinstance(s.target, ast.Name) and s.target.id == attribute), None)
    if annotation is None:
        return None
    boolean = isinstance(annotation, ast.Name) and annotation.id == "bool"
    return EnvironmentField((_env_prefix(cls) + attribute).upper(), boolean)


def _env_prefix(cls: ast.ClassDef) -> str:
    """``model_config = SettingsConfigDict(env_prefix="FLEET_")`` or ``class Config: env_prefix = "FLEET_"``."""
    for statement in cls.body:
        value = statement.value if isinstance(statement, (ast.Assign, ast.AnnAssign)) else None
        if isinstance(value, ast.Call):
            for keyword in value.keywords:
                if keyword.arg == "env_prefix" and isinstance(keyword.value, ast.Constant):
                    return str(keyword.value.value)
        if isinstance(statement, ast.ClassDef) and statement.name == "Config":
            for inner in statement.body:
                if isinstance(inner, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "env_prefix"
                                                         for t in inner.targets) \
                        and isinstance(inner.value, ast.Constant):
                    return str(inner.value.value)
    return ""


def replaced_where_extended(name: str, facts: ModuleFacts) -> bool:
    """``name`` of this settings module is a base value: other settings modules build on it (``from .base import
    *``), every one of them that is no development settings assigns ``name`` itself, and no module of the project
    names this one as the settings to run (``DJANGO_SETTINGS_MODULE``, ``--settings``).  Command line only."""
    from ..knowledge import process_local as local
    from .bindings import own_module_name, own_module_names

    if not facts.context.cross_file:
        return False
    names = own_module_names(facts)
    root = project.search_root(facts)
    for dotted_name in names:
        quoted = (f'"{dotted_name}"'.encode(), f"'{dotted_name}'".encode(), f"={dotted_name}".encode())
        for path in project.files_mentioning(dotted_name, root):
            data = project.read_bytes(path) if path != facts.context.path else b""
            if any(text in data for text in quoted):
                return False  # (named as a settings module to run: its own value is what runs there)
    extending = []
    for path in project.files_mentioning("import *", root):
        other = project.module_facts(path, facts.config) if path != facts.context.path else None
        if other is None or other.context.is_test:
            continue
        package = own_module_name(other).split(".")
        for statement in other.tree.body:
            if isinstance(statement, ast.ImportFrom) and any(alias.name == "*" for alias in statement.names):
                base = package[:len(package) - statement.level] if statement.level else []
                if ".".join(base + ([statement.module] if statement.module else [])) in names:
                    extending.append(other)
    deployed = [other for other in extending
                if other.context.filename[:-3] not in local.DEVELOPMENT_SETTINGS_NAMES]
    return bool(deployed) and all(any(isinstance(target, ast.Name) and target.id == name
                                      for statement in other.tree.body if isinstance(statement, ast.Assign)
                                      for target in statement.targets) for other in deployed)
