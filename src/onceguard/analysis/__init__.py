"""Per-module analysis: what one parsed file says on its own.

``context`` (where the file sits: tests, migrations), ``names`` (dotted names), ``facts`` (one walk
of the tree: imports, calls, assignments, functions), ``sql`` and ``executed_sql`` (the SQL a call
runs, parsed with pglast), ``handles`` (which names hold pooled connections, sessions, Redis
clients).  It reads the knowledge tables and the settings, and nothing above them.
"""
