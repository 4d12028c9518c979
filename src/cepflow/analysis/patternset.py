"""The pattern set an analysis reads: one or more pattern files (VEPL, cepflow syntax, EPL)
merged into one module, checked, and compiled into the program the engine would run.

Files may share declarations of the same input event (``create schema TemperatureEvent`` in two
EPL files): identical declarations are merged, different ones are an error, as are two
complex events, statements or rules of one name. Each file is checked with the other files'
declarations known, so every diagnostic names its own file. A set whose complex events form a
cycle does not compile (cepflow refuses cycles); it is still analysed — its graph and cycles
need only the declarations — and :attr:`PatternSet.program` is None.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cepflow.compiler.automata import CompileError
from cepflow.compiler.normalize import NormalizationError
from cepflow.compiler.program import Program, compile_module
from cepflow.language import ast
from cepflow.language.checker import check
from cepflow.language.diagnostics import Diagnostic, PatternSyntaxError, sort_diagnostics
from cepflow.language.parser import parse, parse_warnings
from cepflow.loader import parse_path

#: the start of the checker's and compiler's messages about cycles: an analysis reports
#: cycles itself (with whether they can fire at one instant), so they do not stop it
CYCLE_MESSAGES = ("cyclic reference between complex events",
                  "complex events reference each other in a cycle")

Origin = tuple[str, str]  # ("decl" | "rule", name)


@dataclass
class PatternSet:
    """Pattern files merged for analysis.

    ``module`` holds every declaration once (in file order); ``origin`` maps
    ``("decl", name)`` / ``("rule", name)`` to the file that declares it; ``program`` is the
    compiled module (None when it has a cycle); ``diagnostics`` are the parser's, checker's
    and compiler's messages (errors other than cycles make :attr:`ok` false); ``emits`` maps
    rule action names to the event types their registered Python action says it emits.
    """

    files: list[str]
    module: ast.Module
    origin: dict[Origin, str]
    program: Program | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    emits: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: per file, its module as read (the fix rewrites each file)
    modules: dict[str, ast.Module] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """No error except cycles: the analysis can go on."""
        return not any(d.severity == "error" and not d.message.startswith(CYCLE_MESSAGES)
                       for d in self.diagnostics)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"
                and not d.message.startswith(CYCLE_MESSAGES)]

    def file_of(self, decl: ast.Decl) -> str:
        kind = "rule" if isinstance(decl, ast.RuleDecl) else "decl"
        return self.origin.get((kind, decl.name), self.files[0] if self.files else "<string>")

    def decls(self) -> dict[str, ast.Decl]:
        """Every non-rule declaration by name."""
        return {d.name: d for d in self.module.decls if not isinstance(d, ast.RuleDecl)}


def _known(decl: ast.Decl) -> Any:
    """What the checker of another file needs to know about ``decl`` (checker.known_events)."""
    if isinstance(decl, ast.WindowDecl):
        return [name or f"col{i}" for i, (name, _) in enumerate(decl.select)]
    if isinstance(decl, ast.ComplexEventDecl) and not decl.params and decl.select:
        return [name for name, _ in decl.select]
    return decl


def _same(a: ast.Decl, b: ast.Decl) -> bool:
    return type(a) is type(b) and a == b


def read(paths: Sequence[str | Path], actions: Mapping[str, Callable[..., Any]] | None = None,
         context: str | None = None) -> PatternSet:
    """Read, merge, check and compile pattern files (never raises on bad patterns: problems
    are :attr:`PatternSet.diagnostics`; an unreadable file raises ``OSError``)."""
    modules: dict[str, ast.Module] = {}
    diags: list[Diagnostic] = []
    for p in paths:
        name = str(p)
        try:
            modules[name] = parse_path(p)
        except PatternSyntaxError as e:
            diags.extend(e.diagnostics)
    return _assemble([str(p) for p in paths], modules, diags, actions, context)


def from_text(text: str, source: str = "<string>", epl: bool = False,
              context: str | None = None) -> PatternSet:
    """A pattern set from pattern text (tests, the Python API)."""
    diags: list[Diagnostic] = []
    modules: dict[str, ast.Module] = {}
    try:
        if epl:
            from cepflow.language.epl import parse_epl

            modules[source] = parse_epl(text, source)
        else:
            modules[source] = parse(text, source)
    except PatternSyntaxError as e:
        diags.extend(e.diagnostics)
    return _assemble([source], modules, diags, None, context)


def _assemble(files: list[str], modules: dict[str, ast.Module], diags: list[Diagnostic],
              actions: Mapping[str, Callable[..., Any]] | None, context: str | None
              ) -> PatternSet:
    origin: dict[Origin, str] = {}
    merged: list[ast.Decl] = []
    first: dict[Origin, ast.Decl] = {}
    for fname, module in modules.items():
        for d in module.decls:
            kind = "rule" if isinstance(d, ast.RuleDecl) else "decl"
            key = (kind, d.name)
            if key in first:
                if origin[key] != fname and isinstance(
                        d, ast.AtomicEventDecl | ast.QueryEventDecl | ast.Trait) \
                        and _same(first[key], d):
                    continue  # the same input declared in two files
                if origin[key] != fname:
                    line, col = d.loc or (1, 1)
                    what = ("declared differently in" if isinstance(
                        d, ast.AtomicEventDecl | ast.QueryEventDecl | ast.Trait)
                        else "also declared in")
                    diags.append(Diagnostic(fname, line, col,
                                            f"'{d.name}' is {what} {origin[key]}"))
                    continue
                # a duplicate inside one file: its checker reports it
            else:
                first[key] = d
                origin[key] = fname
            merged.append(d)
    # each file checked with the others' declarations known, so messages name their file
    for fname, module in modules.items():
        others = {d.name: _known(d) for other, m in modules.items() if other != fname
                  for d in m.decls if not isinstance(d, ast.RuleDecl | ast.Trait)}
        own = {d.name for d in module.decls}
        known = {k: v for k, v in others.items() if k not in own}
        diags.extend(parse_warnings(module))
        diags.extend(check(module, known))
    first_module = next(iter(modules.values()), None)
    module = ast.Module(tuple(merged), source=files[0] if files else "<string>",
                        context=first_module.context if first_module else None)
    pset = PatternSet(files, module, origin, None, [], {}, modules)
    program = None
    if not any(d.severity == "error" for d in diags):
        try:
            program = compile_module(module, None, context)
        except (CompileError, NormalizationError) as e:
            who = getattr(e, "pattern", None)
            fname = origin.get(("decl", who), files[0]) if who else files[0]
            line, col = e.loc or (1, 1)
            msg = f"in {who}: {e.args[0]}" if who else str(e.args[0])
            diags.append(Diagnostic(fname, line, col, msg))
    pset.program = program
    pset.diagnostics = _dedupe(sort_diagnostics(diags))
    pset.emits = _emits(actions)
    return pset


def _dedupe(diags: list[Diagnostic]) -> list[Diagnostic]:
    seen: set[tuple[str, int, int, str]] = set()
    out = []
    for d in diags:
        key = (d.file, d.line, d.col, d.message)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def _emits(actions: Mapping[str, Callable[..., Any]] | None) -> dict[str, tuple[str, ...]]:
    """What registered actions say they emit (``@cepflow.action(name, emits=(...))``)."""
    out: dict[str, tuple[str, ...]] = {}
    for name, fn in (actions or {}).items():
        emits = getattr(fn, "cepflow_emits", None)
        if emits:
            out[name] = tuple(emits)
    return out
