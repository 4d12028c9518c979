"""``cepflow.simulation`` imports its names on first use (PEP 562, so that a command start does
not load the runner): every name it exports resolves, to its module's own object, and a name it
does not have is an AttributeError as for any module."""

import importlib

import pytest

import cepflow.simulation as simulation


def test_every_exported_name_resolves_to_its_modules_object() -> None:
    assert sorted(simulation._HOMES) == sorted(simulation.__all__)
    for name in simulation.__all__:
        home = importlib.import_module(f"cepflow.simulation.{simulation._HOMES[name]}")
        assert getattr(simulation, name) is getattr(home, name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        simulation.nothing  # noqa: B018
