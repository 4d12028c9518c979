"""Keep pyarrow from importing pandas in a ``cepflow run`` process that never hands it pandas
objects: pyarrow's first conversion of anything (``pa.array``, ``Array.to_numpy``) imports
pandas to learn whether the values are pandas objects, which costs about a third of a second of
CPU and 30 MiB at every start — a third of the process's start (docs/cli.md, "The process's
start").

:func:`skip_pandas_in_pyarrow` makes that first look find no pandas, once, and then lets
``import pandas`` work again: what asks pyarrow for pandas explicitly (``Table.to_pandas``,
``Table.from_pandas``, and so Spark's Arrow exchange) imports it then as usual; what stays
without pandas is only pyarrow's guess whether a value it converts is a pandas object.
``cepflow run`` calls it for the local engine without ``--actions`` only, where no code but
cepflow's runs in the process: not for Spark, whose Arrow exchange hands pyarrow pandas objects,
nor where the user's actions might.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType


class _NoPandas(MetaPathFinder):
    """Refuses ``import pandas`` while installed."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname == "pandas" or fullname.startswith("pandas."):
            raise ImportError("pandas is not imported by cepflow run", name=fullname)
        return None


def skip_pandas_in_pyarrow() -> bool:
    """Let pyarrow's first conversion find no pandas (so it never imports it on its own);
    false, and nothing done, where pandas or pyarrow's conversions were already loaded."""
    if "pandas" in sys.modules or "pyarrow.pandas_compat" in sys.modules:
        return False
    import pyarrow as pa

    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        pa.array([0]).to_numpy()
    finally:
        sys.meta_path.remove(finder)
    return True
