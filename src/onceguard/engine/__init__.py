"""The engine: which files, which rules, one check of one file (``check``), many files in parallel
(``runner``), the result cache, ``noqa`` and baselines, and the fixer (``fixes`` with its plans and
libcst transforms).  It runs the rules and never analyses code itself.
"""
