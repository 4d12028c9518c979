"""From the language's :class:`~cepflow.language.ast.WindowDecl` to a runnable statement.

Both front ends — the EPL reader (``insert into X select … from T(…)#time(…) group by …``) and
the cepflow syntax (``complexEvent X { from a = T where … window time(…) select … }``) — produce
the same ``WindowDecl``; this module turns it into the :class:`WindowStatement` the runtime
executes (docs/windows.md), so both syntaxes run exactly the same code.
"""

from __future__ import annotations

from cepflow.language import ast
from cepflow.windows.statement import SelectItem, WindowError, WindowSpec, WindowStatement


def window_spec(window: ast.DataWindow) -> WindowSpec:
    """The runtime window of an AST data window (WindowError if its size is invalid)."""
    size = window.size
    if isinstance(size, float) and size.is_integer():
        size = int(size)  # whole milliseconds: rows at expiry instants keep integer times
    try:
        return WindowSpec(window.kind, size, per_group=window.per_group)
    except WindowError as e:
        raise WindowError(str(e), window.loc) from None


def statement_of(decl: ast.WindowDecl) -> WindowStatement:
    """The :class:`WindowStatement` a window declaration describes."""
    src = decl.source
    if src.args is not None:
        raise WindowError(f"statement '{decl.name}': the input stream '{src.name}' takes no "
                          "parameter list; name its fields through an alias (a = "
                          f"{src.name}) or directly", src.loc or decl.loc)
    return WindowStatement(
        name=decl.name,
        input_type=src.name,
        window=window_spec(decl.window),
        select=tuple(SelectItem(expr, name) for name, expr in decl.select),
        filter=src.where,
        group_by=decl.group_by,
        having=decl.having,
        alias=src.alias,
        loc=decl.loc,
        more_inputs=tuple(decl.more_inputs),
    )
