"""onceguard: find the code that breaks when a Python service runs as two or more replicas.

The packages, top to bottom; a module imports only from its own layer or the layers below it
(``tests/test_layers.py`` holds the code to this):

- ``surfaces``  the command line, the language server, the flake8 plugin, the report formats
- ``engine``    file discovery, one check per file, the parallel runner, cache, noqa, baseline, fixer
- ``rules``     one rule family per module, the registry, the base class
- ``project``   the project model: module index, call resolution and function summaries, claims,
  start-up reach
- ``analysis``  what one file says: its context, facts, SQL, pooled handles
- ``knowledge``, ``config``, ``docs``, ``noqa``, ``model``  framework facts as data, settings, rule
  docs, suppression comments, the values every layer exchanges

``guards`` is the runtime library a service imports (claims and leases on Redis or PostgreSQL);
``testing`` helps tests check a source file the way the rule docs do.
"""
__version__ = "0.1.0"
