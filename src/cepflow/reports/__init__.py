"""HTML reports: one module serves ``run``, ``analyze``, ``simulate`` and ``petri``
(docs/reports.md). :class:`Page` assembles a self-contained page; :mod:`.charts` draws plots
with matplotlib as inline SVG; automata and graphs are drawn by Graphviz
(:func:`cepflow.automaton.dot.to_svg`)."""

from cepflow.reports.page import Page, Section, json_for_script, static_text

__all__ = ["Page", "Section", "json_for_script", "static_text"]
