"""The one piece of build configuration pyproject.toml cannot express: the repository's
``examples/`` folder ships inside the package as ``cepflow.examples`` — one copy in the
repository, found by an installed ``cepflow demo`` as by a checkout. Everything else is in
pyproject.toml; docs/packaging.md explains the layout."""

from setuptools import find_namespace_packages, find_packages, setup

#: each case-study folder is a package of cepflow.examples: its .py files ship as modules, its
#: pattern, event, model, query and README files as package data (pyproject.toml lists them)
CASES = [f"cepflow.examples.{name}"
         for name in find_namespace_packages("examples", exclude=["*__pycache__*"])]

setup(
    packages=[*find_packages("src"), "cepflow.examples", *CASES],
    package_dir={"": "src", "cepflow.examples": "examples"},
)
