"""Esper ``every`` forms that are, by Esper's own state nodes, the same pattern as a form the
lowering already runs exactly — rewritten by the EPL reader before it places the statement's
start (docs/esper.md, "`every` around a guard or `not`").

Each rewrite is an equality of Esper's state-node trees, local to the node it rewrites, so it
holds wherever the node stands (what the result is then taken or reported as is the lowering's
business):

* ``every ((every X) where timer:within(Δ))`` is ``every (every X)`` (X one event, or
  alternatives of events). Under the outer every (EvalEveryStateNode) each child is a guard
  over ``every X``; ``every X`` over a filter keeps no state and never quits, so the guard's
  child is the same at any moment. When the guard ends (EvalGuardStateNode.guardQuit: false,
  restartable) the outer every starts a fresh child at once, and that child is again ``every X``
  under a guard — the same future. A result of the child starts a fresh child (it is no bare
  filter) and keeps the one that gave it, which is exactly what ``every (every X)`` does. So the
  guard changes nothing.
* ``every (every X and not N1 and not N2 …)`` is ``every (every X')``, where ``X'`` is ``X``
  with ``and not g`` added for each ``N`` of ``X``'s event type (``g`` its filter; ``false``
  when it has none) and the ``N`` of other types dropped. The ``and`` (EvalAndStateNode) keeps
  the ``not``'s start report and pairs each result of ``every X`` with it; it quits when the
  ``not`` turns false (EvalNotStateNode: its event came), and the outer every then starts a
  fresh ``and`` (restartable) that does not see that event — the same future as the one that
  quit. So an ``N`` of another type changes nothing, and an event that fits ``N`` gives no
  result of ``X`` (cepflow's decision "the ending wins a tie", which Esper's reference answer
  for ``every (every b=B and not B(id='B2'))`` shows); every other result is as ``every (every
  X)``'s. Taken when ``X`` is one event, each ``N`` one untagged event whose filter names only
  its own fields (a tag there would be another operand's, not bound yet in Esper).
* ``b=B(f) and b=B(f)`` — one tag on two operands that are the same event with the same
  filter — is ``b=B(f)``: both operands start with the ``and`` and take the first event that
  passes ``f``, the same one, and EvalAndStateNode's result merges the two bindings of ``b``
  (MatchedEventMapImpl.merge: the operand that reported first, stored, overwrites the one that
  completes the ``and``), which are that event.
* ``(every X) where timer:within(Δ) and Q …`` is ``(every X and Q …) where timer:within(Δ)``
  (several such operands: the guards nest). The guard quits false at Δ and the ``and`` with it
  (EvalAndStateNode.evaluateFalse); until then it passes each result. ``every X`` never quits,
  so the guard never stops early, and the and, started with its operands, is true at the same
  events: a guard around the and, started with it, gives the same results and ends at the same
  instant.
"""

from __future__ import annotations

from dataclasses import replace

from cepflow.compiler.normalize import and_items, or_items
from cepflow.language import ast
from cepflow.language.walk import names


def _plain(p: ast.Pattern) -> bool:
    """``every`` without distinct keys or expiry."""
    return isinstance(p, ast.Every) and not p.distinct and p.expiry is None


def _events(p: ast.Pattern) -> bool:
    """One event: an atom or an or of atoms."""
    return all(isinstance(i, ast.Atom) for i in or_items(p))


def _guarded_every(p: ast.Pattern) -> bool:
    """``(every X) where timer:within(Δ)`` as the EPL reader gives it, X one event (not
    ``timer:withinmax`` counting results: its count is no plain guard's)."""
    return (isinstance(p, ast.Window) and p.guard and p.kind == "within" and p.most is None
            and _plain(p.pattern) and _events(p.pattern.pattern))  # type: ignore[attr-defined]


def _and_of(items: list[ast.Pattern], loc: ast.Loc) -> ast.Pattern:
    out = items[0]
    for it in items[1:]:
        out = ast.And(out, it, loc)
    return out


def _forbidden(n: ast.Pattern) -> ast.Atom | None:
    """The event of ``not N`` that the second rewrite takes: untagged, its filter naming its
    own fields only."""
    if not isinstance(n, ast.Not) or not isinstance(n.pattern, ast.Atom):
        return None
    a = n.pattern
    if a.alias is not None or a.args is not None:
        return None
    if a.where is not None and any(x.path for x in names(a.where)):
        return None
    return a


def _every_and_not(p: ast.And) -> ast.Pattern | None:
    """``every X and not N …`` as ``every X'`` (see the module docstring), or None."""
    items = and_items(p)
    every = [o for o in items if not isinstance(o, ast.Not)]
    negs = [_forbidden(o) for o in items if isinstance(o, ast.Not)]
    if (len(every) != 1 or not negs or not _plain(every[0])
            or not isinstance(every[0].pattern, ast.Atom)  # type: ignore[attr-defined]
            or any(n is None for n in negs)):
        return None
    x: ast.Atom = every[0].pattern  # type: ignore[attr-defined]
    where = x.where
    for n in negs:
        assert n is not None
        if n.name != x.name:
            continue
        cut: ast.Expr = (ast.Const(False, loc=n.loc) if n.where is None
                         else ast.Unary("not", n.where, n.loc))
        where = cut if where is None else ast.Binary("and", where, cut, n.loc)
    return replace(every[0], pattern=replace(x, where=where))


def _distinct_tags(items: list[ast.Pattern]) -> list[ast.Pattern]:
    """The operands of an ``and`` with each tagged event that is written twice the same (same
    tag, type and filter: ``b=B and b=B``) kept once."""
    out: list[ast.Pattern] = []
    for o in items:
        if not (isinstance(o, ast.Atom) and o.alias is not None and o in out):
            out.append(o)
    return out


def every_equivalents(p: ast.Pattern) -> ast.Pattern:
    """``p`` with the four rewrites of the module docstring applied, innermost first."""
    if isinstance(p, ast.Atom | ast.Interval | ast.At):
        return p
    if isinstance(p, ast.Fol | ast.Or):
        return replace(p, left=every_equivalents(p.left), right=every_equivalents(p.right))
    if isinstance(p, ast.Until):
        return replace(p, pattern=every_equivalents(p.pattern),
                       until=every_equivalents(p.until))
    if isinstance(p, ast.And):
        items = _distinct_tags([every_equivalents(o) for o in and_items(p)])
        if len(items) == 1:
            return items[0]
        guards = [o for o in items if _guarded_every(o)]
        out = _and_of([o.pattern if _guarded_every(o) else o  # type: ignore[attr-defined]
                       for o in items], p.loc)
        for g in guards:
            assert isinstance(g, ast.Window)
            out = replace(g, pattern=out)
        return out
    inner = every_equivalents(p.pattern)  # type: ignore[attr-defined]
    if _plain(p):
        if _guarded_every(inner):
            inner = inner.pattern  # type: ignore[attr-defined]
        elif isinstance(inner, ast.And):
            inner = _every_and_not(inner) or inner
    return replace(p, pattern=inner)  # type: ignore[call-arg]
