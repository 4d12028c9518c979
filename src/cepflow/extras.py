"""cepflow's optional parts and the pip extras that install them.

``pip install cepflow`` gives the language, the in-process engine, live models and the CLI;
the Spark pipeline (``cepflow.spark``, ``run --engine spark``, ``stream``, ``demo gesture
--engine spark``) needs PySpark (491 MB, and a JVM): ``pip install "cepflow[spark]"``. Nothing
outside ``cepflow.spark`` imports PySpark when it is imported, and whatever needs it says how
to get it in one line instead of a traceback.
"""

from __future__ import annotations

import importlib.util

#: the command that installs the Spark pipeline's dependencies
SPARK_INSTALL = 'pip install "cepflow[spark]"'


class MissingExtra(ImportError):
    """An optional part of cepflow whose dependencies are not installed; the message says
    which and the command that installs them."""


def require_spark(what: str = "cepflow's Spark pipeline") -> None:
    """Raise :class:`MissingExtra` unless PySpark can be imported."""
    if importlib.util.find_spec("pyspark") is None:
        raise MissingExtra(f"{what} needs PySpark, which is not installed: {SPARK_INSTALL}",
                           name="pyspark")
