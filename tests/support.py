"""Helpers shared by the engine tests: build small programs from ASTs and run streams."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from cepflow.compiler.program import Program, compile_module
from cepflow.events.event import ComplexEvent, Event
from cepflow.language import ast as A
from cepflow.runtime.engine import Engine


def atoms(*names: str, arity: int = 0) -> list[A.AtomicEventDecl]:
    return [A.AtomicEventDecl(n, tuple(A.Param(f"p{i}") for i in range(arity))) for n in names]


def program(
    body: A.Pattern,
    *,
    params: Sequence[str] = (),
    context: str | None = None,
    types: Iterable[str] = ("a", "b", "c", "d"),
    arity: int = 0,
    partition_by: Sequence[str] = (),
    extra: Sequence[A.Decl] = (),
) -> Program:
    decls: list[A.Decl] = [*atoms(*types, arity=arity), *extra]
    decls.append(A.ComplexEventDecl("P", tuple(A.Param(p) for p in params), body, context,
                                    tuple(partition_by)))
    return compile_module(A.Module(tuple(decls)))


def stream(spec: str, arity: int = 0) -> list[Event]:
    """``"a b@5 c(1)@7"``: type, optional params in parentheses, optional @timestamp.

    Without a timestamp an event gets its position. Ids are ``type#k`` (k-th of that type).
    """
    out: list[Event] = []
    seen: dict[str, int] = {}
    for i, tok in enumerate(spec.split()):
        ts: float = i
        if "@" in tok:
            tok, t = tok.split("@")
            ts = float(t)
        params: tuple[Any, ...] = ()
        if "(" in tok:
            tok, ps = tok[:-1].split("(")
            params = tuple(int(x) if x.lstrip("-").isdigit() else x for x in ps.split(","))
        elif arity:
            params = (None,) * arity
        seen[tok] = seen.get(tok, 0) + 1
        out.append(Event(tok, params, ts, id=f"{tok}{seen[tok]}"))
    return out


def run(prog: Program, events: Sequence[Event], close: bool = False, **kw: Any
        ) -> list[ComplexEvent]:
    eng = Engine(prog, **kw)
    out: list[ComplexEvent] = []
    for e in events:
        out.extend(eng.process(e))
    out.extend(eng.finish(close_windows=close))
    return out


def full(matches: Iterable[ComplexEvent]) -> list[tuple]:
    """Matches as everything they carry: type, parameters, time, bindings, parts, id."""
    return [(ce.type, ce.params, ce.ts, dict(ce.bindings),
             [(p.type, p.params, p.ts) for p in ce.parts], ce.match_id) for ce in matches]


def run_against_token_path(prog: Program, events: Sequence[Event], cuts: Iterable[int],
                           at: int, end: float) -> list[ComplexEvent]:
    """``Engine.run`` in batches cut at ``cuts``, a JSON save/restore at ``at``, then time
    passed to ``end`` (advance_to) gives the token path's matches (same order, ids, parts,
    bindings, times) and its saved state; returns those matches."""
    import json
    from itertools import pairwise

    from cepflow.runtime.state import restore_state, save_state

    ref = Engine(prog, start=0, fast_path=False)
    want = [ce for e in events for ce in ref.process(e)]
    want += ref.advance_to(end)
    engine = Engine(prog, start=0)
    got: list[ComplexEvent] = []
    bounds = sorted({0, *(c for c in cuts if c <= len(events)), len(events)})
    for lo, hi in pairwise(bounds):
        if lo <= at < hi:
            got += engine.run(events[lo:at])
            state = json.loads(json.dumps(save_state(engine)))
            engine = restore_state(Engine(prog, start=0), state)
            lo = at
        got += engine.run(events[lo:hi])
    got += engine.advance_to(end)
    assert full(got) == full(want)
    assert json.dumps(save_state(engine), sort_keys=True) == json.dumps(save_state(ref),
                                                                        sort_keys=True)
    return got


def refs(matches: Iterable[ComplexEvent]) -> list[list[Any]]:
    return [m.event_refs for m in matches]


a, b, c, d = (A.Atom(n) for n in "abcd")


def at(name: str, *args: str | None) -> A.Atom:
    return A.Atom(name, tuple(args))


def seq(*items: A.Pattern) -> A.Pattern:
    out = items[-1]
    for it in reversed(items[:-1]):
        out = A.Fol(it, out)
    return out


def tokens_form(state: dict[str, Any] | None) -> dict[str, Any] | None:
    """A saved engine state with its chain rows (``"rows"``, version 3) written as the tokens
    they stand for (docs/state-format.md, "Rows") — what the per-event engine saves for the
    same partial matches. Pure data: an oracle independent of Matcher.materialize."""
    if state is None or "rows" not in state:
        return state
    out = {k: v for k, v in state.items() if k != "rows"}
    patterns = out["patterns"] = {n: list(toks) for n, toks in state["patterns"].items()}
    for name, r in state["rows"].items():
        for tid, st, key, evs in zip(r["ids"], r["states"], r["keys"], r["events"], strict=True):
            events = [e if isinstance(e, dict) else dict(zip(
                ("type", "params", "ts", "id", "seq"), [e[0], list(e[1]), *e[2:]], strict=True))
                for e in evs]
            ts = events[0]["ts"]
            patterns[name].append({
                "id": tid, "part": None, "created": ts,
                "threads": [{"state": st, "bindings": {r["var"]: key},
                             "zones": {} if r["zone"] is None else {str(r["zone"]): ts},
                             "events": events}]})
    return out


def keyed_chains(filters: Sequence[str], windows: Sequence[float | None]) -> Any:
    """A hypothesis strategy of keyed sequences over ``A(s, _)`` and ``B(s, _)`` (1 to 3
    stages, each with one of ``filters`` or none, in one of ``windows`` or none): the shape the
    engine's chain kernel runs (runtime.shapes.chain_of)."""
    from hypothesis import strategies as st

    @st.composite
    def chains(draw: st.DrawFn) -> str:
        stages = draw(st.lists(st.tuples(st.sampled_from("AB"), st.sampled_from(filters)),
                               min_size=1, max_size=3))
        body = " -> ".join(f"{t}(s, _)" + (f" where {f}" if f else "") for t, f in stages)
        window = draw(st.sampled_from(list(windows)))
        return body if window is None else f"({body})[{window} ms]"

    return chains()


def load_script(path: Path, name: str, register: bool = False) -> Any:
    """A script of the repository (an example's generator, a benchmark, a tool under
    scripts/) as a module; its own folder is importable while it loads (a benchmark imports
    its common.py), and ``register`` keeps it in ``sys.modules`` (dataclasses look their
    module up)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    if register:
        sys.modules[name] = module
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


def graph_each_and_analyze(tmp_path: Path, schemas: str, bodies: Sequence[str]) -> Any:
    """``cepflow graph`` on each EPL pattern of ``bodies`` (statements ``P0``, ``P1``, …,
    ``select *`` over ``schemas``) draws it; the result of ``cepflow analyze`` on them all."""
    from typer.testing import CliRunner

    from cepflow.cli.main import app

    path = tmp_path / "g.epl"
    path.write_text(schemas + "".join(f"@Name('P{i}') select * from pattern [{b}];\n"
                                      for i, b in enumerate(bodies)))
    runner = CliRunner()
    for i in range(len(bodies)):
        res = runner.invoke(app, ["graph", str(path), f"P{i}"])
        assert res.exit_code == 0 and res.output.startswith(f'digraph "P{i}"'), res.output
    return runner.invoke(app, ["analyze", str(path)])


def reads_back(text: str, file: str = "case.epl") -> tuple[Any, str]:
    """The module of the EPL ``text`` and how the EPL printer writes it, asserting that the
    printed text reads back as the same statements (the printer's flat form of each)."""
    from cepflow.language.epl import parse_epl
    from cepflow.language.epl_printer import _flat, format_epl

    module = parse_epl(text, file)
    printed = format_epl(module)
    again = parse_epl(printed, "again.epl")
    assert [_flat(d) for d in again.decls] == [_flat(d) for d in module.decls], printed
    return module, printed
