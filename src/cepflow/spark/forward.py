"""Events from any Spark streaming source (Kafka on a cluster that has the connector) into the
folder ``cepflow stream`` reads: one JSON event per record, written as JSON Lines files by
Spark's file sink, which commits each micro-batch's files exactly once (docs/spark.md, "Kafka").

The records' texts are parsed with Spark's ``from_json`` against the union of the events'
fields; Spark's JSON writer leaves out null fields, so each event is written with the fields
it had. A record that does not parse keeps its text in the field :data:`RAW`; cepflow's reader
then rejects it (an unknown field, or no ``type``) and its side output shows the text — a bad
record is reported, never dropped. Fields outside ``fields`` are not written (``from_json``
keeps only the schema's fields): list every field the events may carry.
"""

from __future__ import annotations

import os

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.types import DataType, StringType, StructField, StructType

#: the field that holds the text of a record ``from_json`` could not parse
RAW = "_raw"


def forward_json(records: DataFrame, folder: str | os.PathLike[str],
                 checkpoint: str | os.PathLike[str], fields: str | StructType, *,
                 column: str = "value", processing_time: str | None = None,
                 available_now: bool = False) -> StreamingQuery:
    """Start a streaming query that writes the JSON events in ``records[column]`` (text or
    bytes, e.g. Kafka's ``value``) to ``folder`` as JSON Lines files, checkpointed in
    ``checkpoint``. ``fields``: the events' fields as a DDL string or a struct type (``"type
    string, ts long, id string, B string"``), without :data:`RAW`."""
    schema = fields if isinstance(fields, StructType) else DataType.fromDDL(fields)
    if not isinstance(schema, StructType):
        raise ValueError(f"fields: expected a struct of the events' fields, got {fields!r}")
    if RAW in schema.fieldNames():
        raise ValueError(f"fields: {RAW} is the field of records that do not parse")
    schema = StructType([*schema.fields, StructField(RAW, StringType())])
    text = F.col(column).cast("string")
    parsed = F.from_json(text, schema, {"mode": "PERMISSIVE",
                                        "columnNameOfCorruptRecord": RAW})
    events = records.select(parsed.alias("e")).select("e.*")
    writer = (events.writeStream.format("json").option("path", str(folder))
              .option("checkpointLocation", str(checkpoint)))
    if available_now:
        writer = writer.trigger(availableNow=True)
    elif processing_time is not None:
        writer = writer.trigger(processingTime=processing_time)
    return writer.start()
