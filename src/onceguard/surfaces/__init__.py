"""Surfaces: the command line, the language server and the flake8 plugin, and the report formats.

Each is thin: it reads its own input (arguments, LSP messages, flake8's tree), asks the engine, and
prints or sends what comes back.  Nothing below this layer imports from it.
"""
