"""The case studies, shipped inside the installed package as ``cepflow.examples``.

This folder is the one copy: setup.py maps it to ``cepflow.examples`` and pyproject.toml lists
its data files, so ``cepflow demo cps`` and ``cepflow demo gesture`` find their files in a
wheel install as in this repository (``cepflow demo path`` prints where they are).
"""
