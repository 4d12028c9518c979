"""cepflow — complex event processing over live models and event streams.

The stages are visible in the package layout: ``language`` (the pattern DSL, its AST, parser,
printer, checker and Python builder) → ``compiler`` (algebraic normalisation and compilation to
automata) → ``automaton`` (the compiled form, Graphviz export) → ``runtime`` (the token engine,
contexts, rules, explanations, saved state); ``inputs``/``outputs`` read and write events.

    import cepflow
    program = cepflow.load("patterns.vepl")
    engine = cepflow.Engine(program)
    for event in cepflow.read_events("events.jsonl", program.schemas):
        for match in engine.process(event):
            print(match.to_dict())

``cepflow.replay.replay(inputs, program, output)`` is the whole file job of ``cepflow run``.
"""

from cepflow.runtime.collector import gc_paused

# (the imports make some 10^5 objects and no garbage: the cyclic collector, left running, walks
# them a hundred times over — a tenth of the imports' CPU; docs/cli.md, "The process's start")
with gc_paused():
    from cepflow.compiler.program import Program, compile_module
    from cepflow.events.event import ComplexEvent, Event, EventType, ParamSpec, SideChannel
    from cepflow.inputs import read_events, reorder
    from cepflow.language.diagnostics import Diagnostic, PatternSyntaxError
    from cepflow.language.parser import parse, parse_file
    from cepflow.loader import load, load_module
    from cepflow.runtime.actions import Activation, action, register
    from cepflow.runtime.engine import Engine, EngineError, run_patterns
    from cepflow.runtime.state import restore_state, save_state

__version__ = "0.1.0"

__all__ = [
    "Activation",
    "ComplexEvent",
    "Diagnostic",
    "Engine",
    "EngineError",
    "Event",
    "EventType",
    "ParamSpec",
    "PatternSyntaxError",
    "Program",
    "SideChannel",
    "action",
    "compile_module",
    "load",
    "load_module",
    "parse",
    "parse_file",
    "read_events",
    "register",
    "reorder",
    "restore_state",
    "run_patterns",
    "save_state",
]
