"""How much one micro-batch may hold: the default cap per trigger, taken from the memory the
job has, and how a batch that ran out of that memory is recognised.

The Kafka source reads a whole backlog in one micro-batch unless ``maxOffsetsPerTrigger``
caps it, and what a batch needs (decoding, ranking the changes per key, the MERGE) grows with
its records. So the streaming jobs always cap a batch: ``--max-offsets-per-trigger`` when
given, else ``RECORDS_PER_GIB`` records per GiB of the heap that runs the batch's tasks (the
driver's in local mode, an executor's on a cluster), at least ``MIN_RECORDS``. The figure is
measured on the mirror job (docs/spark.md, "Memory"): a batch of that many records of about
0.5 KiB peaks well under the heap.
"""

from __future__ import annotations

import re

from pyspark.sql import SparkSession

GIB = 1 << 30
RECORDS_PER_GIB = 100_000
MIN_RECORDS = 10_000
MIN_SLICE_RECORDS = 1_000
DEFAULT_HEAP = "1g"  # Spark's own default for spark.driver.memory and spark.executor.memory

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_OUT_OF_MEMORY = re.compile(r"OutOfMemoryError|Java heap space|GC overhead limit exceeded")


def parse_size(text: str) -> int:
    """A JVM memory size (``512m``, ``4g``, ``2048``: MiB when there is no unit, as Spark reads
    ``spark.driver.memory``) in bytes; ValueError when it is not one."""
    match = re.fullmatch(r"\s*(\d+)\s*([bkmgt]?)(?:i?b)?\s*", text.lower())
    if not match:
        raise ValueError(f"not a memory size: {text!r}")
    number, unit = match.groups()
    return int(number) * (_UNITS[unit] if unit else 1 << 20)


def task_heap(spark: SparkSession) -> int:
    """Bytes of heap the batch's tasks run in: the driver's in local mode, else an
    executor's."""
    conf = spark.sparkContext.getConf()
    local = (conf.get("spark.master") or "local").startswith("local")
    key = "spark.driver.memory" if local else "spark.executor.memory"
    return parse_size(conf.get(key) or DEFAULT_HEAP)


def default_max_offsets(heap_bytes: int) -> int:
    """The records per micro-batch a heap of ``heap_bytes`` takes by default."""
    return max(MIN_RECORDS, heap_bytes * RECORDS_PER_GIB // GIB)


def out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` (a Py4J or PySpark error carrying the JVM's) is the JVM running out of
    heap: a java.lang.OutOfMemoryError anywhere in its text or its causes."""
    seen: BaseException | None = exc
    while seen is not None:
        if _OUT_OF_MEMORY.search(str(seen)):
            return True
        seen = seen.__cause__
    return False


class BatchTooLarge(Exception):
    """A micro-batch ran out of memory even cut into slices of ``MIN_SLICE_RECORDS`` records,
    or even reading its offsets (``records`` None): only more heap helps (the batch's offsets
    are fixed in the checkpoint)."""

    def __init__(self, batch_id: int, records: int | None, slices: int) -> None:
        self.batch_id = batch_id
        self.records = records
        self.slices = slices
        if records is None:
            what = f"batch {batch_id} runs out of memory even reading its offsets"
        else:
            what = (
                f"batch {batch_id} ({records} records) runs out of memory even in {slices} "
                f"slices of about {records // max(slices, 1)} records"
            )
        super().__init__(
            f"{what}: give the job more heap (--driver-memory, or spark.executor.memory on a "
            "cluster); --max-offsets-per-trigger only sizes the batches planned after it"
        )


def failure_line(text: str) -> str | None:
    """One line saying why a query failed for memory, from its error's (long) text; None
    when it failed for something else."""
    too_large = re.search(r"BatchTooLarge: (.+)", text)
    if too_large:
        return too_large.group(1).strip()
    if _OUT_OF_MEMORY.search(text):
        return (
            "a micro-batch ran out of memory: give the job more heap (--driver-memory, or "
            "spark.executor.memory on a cluster) or smaller batches (--max-offsets-per-trigger)"
        )
    return None
