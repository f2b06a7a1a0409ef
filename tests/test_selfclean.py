"""The project lints itself: onceguard finds nothing in its own tree (fixtures and the benchmark corpus are
excluded in pyproject.toml), and pyflakes finds no unused or undefined names in its code."""
from __future__ import annotations


def test_onceguard_is_clean_on_its_own_tree(onceguard):
    result = onceguard("check", ".", "--no-cache")
    assert result.returncode == 0, result.stdout


def test_pyflakes_is_clean_on_the_code(flake8):
    result = flake8("--isolated", "--select", "F", "src", "tests", "bench/run.py")
    assert result.returncode == 0, result.stdout
