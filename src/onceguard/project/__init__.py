"""The project model: what a file cannot prove alone.

``index`` finds the project's source roots and module files and parses each once; ``summaries``
resolves a call to the function it reaches (through imports, ``self``, typed parameters) and
computes what functions do (their effects, to a bounded fixpoint) and who calls them; ``claims``
knows a claim when a function begins with one (itself or in a callee); ``startup`` knows what runs
at start-up on every replica; ``reach`` answers where code runs (every replica, an operator's command,
unknown) and the way there; ``deployment`` reads Dockerfiles, Procfiles, compose and Kubernetes files.
Rules ask it through ``facts.context.cross_file``: under flake8 there is no project, and the same rule
code says only what the one file proves.
"""
