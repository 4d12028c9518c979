"""One local SparkSession for the whole test run, for the tests that need Spark
(start-up costs about 6 s on a 2-core machine; docs/spark.md, "Settings"), and hypothesis
without its per-example deadline: on a shared 2-core machine an example's time says how busy
the machine is, not whether the code is right (a first example at 447 ms under load failed a
reader's property test that takes 2 ms when rerun)."""

import pytest
from hypothesis import settings

settings.register_profile("cepflow", deadline=None)
settings.load_profile("cepflow")


@pytest.fixture(scope="session")
def spark():
    from cepflow.spark import spark_session

    session = spark_session("local[2]", app_name="cepflow-tests", quiet_jvm=True,
                            conf={"spark.sql.shuffle.partitions": "2"})
    yield session
    session.stop()
