"""Rule actions are Python callables registered by name; pattern files only name them.

A pattern file can never supply code: ``rule R on P action some.name`` looks ``some.name`` up
in a registry filled by Python code the user runs (``@action("some.name")``, or a module given
to ``cepflow run --actions``). Nothing read from a pattern file is executed.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from cepflow.events.event import ComplexEvent, Event, EventType
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


def register(name: str, fn: Callable[[Any], Any], emits: tuple[str, ...] = ()
             ) -> Callable[[Any], Any]:
    """Register ``fn`` as the action called ``name`` (replacing an earlier one). ``emits``
    names the event types it may emit; ``cepflow analyze --actions`` draws them as edges of
    the dependency graph (nothing checks them at run time)."""
    _REGISTRY[name] = fn
    if emits:
        fn.cepflow_emits = tuple(emits)  # type: ignore[attr-defined]
    return fn


def action(name: str, emits: tuple[str, ...] = ()
           ) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    """Decorator form of :func:`register`."""
    return lambda fn: register(name, fn, emits)


def registered() -> dict[str, Callable[[Any], Any]]:
    """A snapshot of the registry."""
    return dict(_REGISTRY)


class ActionsError(ImportError):
    """An actions module that could not be imported, in one line: ``FILE:LINE: what`` (a
    syntax error, a missing module, an exception raised while the module ran)."""


def _where(error: BaseException, origin: str | None) -> str:
    """``FILE:LINE`` of the failure: the innermost line of the actions module itself (or, when
    the error came from elsewhere, the innermost line of user code) that was running."""
    if isinstance(error, SyntaxError) and error.filename:
        col = f":{error.offset}" if error.offset else ""
        return f"{error.filename}:{error.lineno}{col}"
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if not f.filename.startswith("<frozen ") and f.filename != __file__]
    mine = Path(origin).resolve() if origin else None
    own = [f for f in frames if Path(f.filename).resolve() == mine]
    if own or frames:
        frame = (own or frames)[-1]
        return f"{frame.filename}:{frame.lineno}"
    return origin or "?"


def _message(error: BaseException, origin: str | None) -> str:
    """``FILE:LINE: kind: message`` on one line."""
    what = error.msg if isinstance(error, SyntaxError) else str(error)
    what = " ".join(what.splitlines())
    kind = "syntax error" if isinstance(error, SyntaxError) else type(error).__name__
    return f"{_where(error, origin)}: {kind}: {what}"


def import_actions(spec: str) -> ModuleType:
    """Import a Python module (dotted name or .py path) whose import registers actions.

    This runs the module's code: actions files are trusted Python, unlike pattern files. Any
    failure — no such file or module, a syntax error, an exception at import — raises
    :class:`ActionsError` saying where, in one line."""
    path = Path(spec)
    if spec.endswith(".py") or "/" in spec or "\\" in spec:
        if not path.is_file():
            raise ActionsError(f"{spec}: no such file")
        name = f"cepflow_actions_{path.stem}"
        mod_spec = importlib.util.spec_from_file_location(name, path)
        if mod_spec is None or mod_spec.loader is None:
            raise ActionsError(f"{spec}: cannot load Python code from this file")
        module = importlib.util.module_from_spec(mod_spec)
        sys.modules[name] = module
        try:
            mod_spec.loader.exec_module(module)
        except Exception as e:
            del sys.modules[name]
            raise ActionsError(_message(e, str(path))) from e
        return module
    missing = ActionsError(f"{spec}: no such module (give a module on the Python path or a "
                           ".py file)")
    try:
        found = importlib.util.find_spec(spec)
    except Exception as e:  # a parent package is missing or failed to import
        if isinstance(e, ModuleNotFoundError) and e.name and f"{spec}.".startswith(f"{e.name}."):
            raise missing from e
        raise ActionsError(_message(e, None)) from e
    if found is None:
        raise missing
    try:
        return importlib.import_module(spec)
    except Exception as e:
        sys.modules.pop(spec, None)
        raise ActionsError(_message(e, found.origin)) from e


@action("log")
def _log(activation: Any) -> None:
    """Built-in action: print the triggering event and its bindings."""
    print(f"{activation.rule.name}: {activation.event!r}")
