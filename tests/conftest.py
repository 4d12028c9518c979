"""One local SparkSession for the whole test run, for the tests that need Spark
(start-up costs about 6 s on a 2-core machine; docs/spark.md, "Settings")."""

import pytest


@pytest.fixture(scope="session")
def spark():
    from cepflow.spark import spark_session

    session = spark_session("local[2]", app_name="cepflow-tests", quiet_jvm=True,
                            conf={"spark.sql.shuffle.partitions": "2"})
    yield session
    session.stop()
