"""Metamorphic tests: rewrite an example so that it means the same, and demand the same findings."""
