"""The SparkSession the tests share (Kafka source and Delta Lake on its classpath).

Import the ``spark`` fixture where it is needed (``from tests.spark_fixtures import spark``).
It is session-scoped and ``build_session`` returns the running session if there is one, so a
test run starts one local[2] JVM however many modules import the fixture.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from spark_jobs.session import build_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_session("canal-bridge-tests", master="local[2]")
    yield session
    session.stop()
