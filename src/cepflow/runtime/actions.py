"""Rule actions are Python callables registered by name; pattern files only name them.

A pattern file can never supply code: ``rule R on P action some.name`` looks ``some.name`` up
in a registry filled by Python code the user runs (``@action("some.name")``, or a module given
to ``cepflow run --actions``). Nothing read from a pattern file is executed.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from cepflow.events.model import ComplexEvent, Event, EventType
from cepflow.language import ast

_REGISTRY: dict[str, Callable[[Any], Any]] = {}


@dataclass(slots=True)
class Activation:
    """What an action receives: the rule, the triggering event and its bindings."""

    rule: ast.RuleDecl
    event: Event
    engine: Any

    @property
    def bindings(self) -> dict[str, Any]:
        return event_bindings(self.event, self.engine.program.schemas)

    def emit(self, event: Event) -> None:
        """Publish a new event into the stream (processed after the current one)."""
        self.engine.emit(event)



def event_bindings(event: Event, schemas: Mapping[str, EventType]) -> dict[str, Any]:
    """An event's parameters by name: a complex event's output bindings, an atomic event's
    parameters under its schema's names (none for a type without a schema)."""
    if isinstance(event, ComplexEvent):
        return event.bindings_for_output()
    schema = schemas.get(event.type)
    if schema is None:
        return {}
    return dict(zip(schema.param_names, event.params, strict=False))


def register(name: str, fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Register ``fn`` as the action called ``name`` (replacing an earlier one)."""
    _REGISTRY[name] = fn
    return fn


def action(name: str) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    """Decorator form of :func:`register`."""
    return lambda fn: register(name, fn)


def registered() -> dict[str, Callable[[Any], Any]]:
    """A snapshot of the registry."""
    return dict(_REGISTRY)


def import_actions(spec: str) -> ModuleType:
    """Import a Python module (dotted name or .py path) whose import registers actions."""
    path = Path(spec)
    if spec.endswith(".py") and path.is_file():
        name = f"cepflow_actions_{path.stem}"
        mod_spec = importlib.util.spec_from_file_location(name, path)
        if mod_spec is None or mod_spec.loader is None:
            raise ImportError(f"cannot load actions from {spec}")
        module = importlib.util.module_from_spec(mod_spec)
        sys.modules[name] = module
        mod_spec.loader.exec_module(module)
        return module
    return importlib.import_module(spec)


@action("log")
def _log(activation: Any) -> None:
    """Built-in action: print the triggering event and its bindings."""
    print(f"{activation.rule.name}: {activation.event!r}")
