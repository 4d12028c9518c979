"""The examples of Esper's reference documentation, with the outputs it documents.

Sources (Esper reference, docbook sources in espertechinc/esper,
``esper/doc/reference/src/main/docbook/en-US/modules/``):

* ``appendix_outputspec.xml`` — "Output Reference and Samples": one input table (MarketData
  events E1..E9 between 0.2 s and 5.9 s, a ``win:time(5.5 sec)`` window, time observed up to
  7.2 s) and, per query type, the insert and remove streams. cepflow outputs the insert stream
  (Esper's default), so the expected rows below are the "Insert Stream" column of the "No
  Output Rate Limiting" tables, in ms.
* ``processingmodel.xml`` — §3.3 "Insert and Remove Stream" (length window), §3.5 "Time
  Windows", §3.6 "Batch Windows", §3.7.2 "Output for Aggregation and Group-By".
"""

from __future__ import annotations

from windows_helpers import events, rows, run, schema, statement

from cepflow.windows import WindowSpec

SCHEMAS = {"MarketData": schema("MarketData", ("symbol", "str"), ("volume", "int"),
                                ("price", "float"))}
#: appendix_outputspec.xml, "Introduction and Sample Data" (symbols as in the output tables)
MARKET = events("MarketData", [
    (200, "IBM", 100, 25.0),      # E1
    (800, "MSFT", 5000, 9.0),     # E2
    (1500, "IBM", 150, 24.0),     # E3
    (1500, "YAH", 10000, 1.0),    # E4
    (2100, "IBM", 155, 26.0),     # E5
    (3500, "YAH", 11000, 2.0),    # E6
    (4300, "IBM", 150, 22.0),     # E7
    (4900, "YAH", 11500, 3.0),    # E8
    (5900, "YAH", 10500, 1.0),    # E9
])
WINDOW = WindowSpec.time(5500)
END = 7200  # the table's last time point


def market(select: list[str], group_by: tuple[str, ...] = ()) -> list[tuple]:
    stmt = statement(select, WINDOW, input_type="MarketData", group_by=group_by)
    return rows(run(stmt, SCHEMAS, MARKET, until=END))


def test_unaggregated_ungrouped_outputs_each_arriving_event() -> None:
    # appendix "Output for Un-aggregated and Un-grouped Queries", No Output Rate Limiting:
    # select irstream symbol, volume, price from MarketData.win:time(5.5 sec)
    assert market(["symbol", "volume", "price"]) == [
        (200, "IBM", 100, 25.0), (800, "MSFT", 5000, 9.0), (1500, "IBM", 150, 24.0),
        (1500, "YAH", 10000, 1.0), (2100, "IBM", 155, 26.0), (3500, "YAH", 11000, 2.0),
        (4300, "IBM", 150, 22.0), (4900, "YAH", 11500, 3.0), (5900, "YAH", 10500, 1.0)]


def test_fully_aggregated_ungrouped_outputs_on_arrival_and_on_expiry() -> None:
    # appendix "Output for Fully-aggregated and Un-grouped Queries":
    # select irstream sum(price) from MarketData.win:time(5.5 sec)
    # E1 leaves at 5.7 s, E2 at 6.3 s, E3 and E4 together at 7.0 s (one row)
    assert market(["sum(price)"]) == [
        (200, 25.0), (800, 34.0), (1500, 58.0), (1500, 59.0), (2100, 85.0), (3500, 87.0),
        (4300, 109.0), (4900, 112.0), (5700, 87.0), (5900, 88.0), (6300, 79.0), (7000, 54.0)]


def test_aggregated_ungrouped_outputs_a_row_per_arriving_event_only() -> None:
    # appendix "Output for Aggregated and Un-grouped Queries":
    # select irstream symbol, sum(price) from MarketData.win:time(5.5 sec)
    # (expiring events appear in the remove stream only)
    assert market(["symbol", "sum(price)"]) == [
        (200, "IBM", 25.0), (800, "MSFT", 34.0), (1500, "IBM", 58.0), (1500, "YAH", 59.0),
        (2100, "IBM", 85.0), (3500, "YAH", 87.0), (4300, "IBM", 109.0), (4900, "YAH", 112.0),
        (5900, "YAH", 88.0)]


def test_fully_aggregated_grouped_outputs_a_row_per_changed_group() -> None:
    # appendix "Output for Fully-aggregated and Grouped Queries":
    # select irstream symbol, sum(price) from MarketData.win:time(5.5 sec) group by symbol
    # MSFT's last event leaves at 6.3 s: [MSFT, null]; at 7.0 s IBM and YAH both change.
    assert market(["symbol", "sum(price)"], ("symbol",)) == [
        (200, "IBM", 25.0), (800, "MSFT", 9.0), (1500, "IBM", 49.0), (1500, "YAH", 1.0),
        (2100, "IBM", 75.0), (3500, "YAH", 3.0), (4300, "IBM", 97.0), (4900, "YAH", 6.0),
        (5700, "IBM", 72.0), (5900, "YAH", 7.0), (6300, "MSFT", None), (7000, "IBM", 48.0),
        (7000, "YAH", 6.0)]


def test_aggregated_grouped_outputs_a_row_per_arriving_event_with_its_group() -> None:
    # appendix "Output for Aggregated and Grouped Queries":
    # select irstream symbol, volume, sum(price) from MarketData.win:time(5.5 sec)
    # group by symbol
    assert market(["symbol", "volume", "sum(price)"], ("symbol",)) == [
        (200, "IBM", 100, 25.0), (800, "MSFT", 5000, 9.0), (1500, "IBM", 150, 49.0),
        (1500, "YAH", 10000, 1.0), (2100, "IBM", 155, 75.0), (3500, "YAH", 11000, 3.0),
        (4300, "IBM", 150, 97.0), (4900, "YAH", 11500, 6.0), (5900, "YAH", 10500, 7.0)]


def test_expiry_needs_time_to_pass() -> None:
    # without time advancing past 5.9 s nothing expires after E9 (the table's later rows are
    # caused by time passing, processingmodel §3.5.1 "Time Window")
    stmt = statement(["sum(price)"], WINDOW, input_type="MarketData")
    assert rows(run(stmt, SCHEMAS, MARKET))[-1] == (5900, 88.0)
    assert len(run(stmt, SCHEMAS, MARKET)) == 10


def test_length_window_pushes_out_the_oldest_event_on_arrival() -> None:
    # processingmodel §3.3: select * from Withdrawal.win:length(5); W1 leaves when W6 arrives.
    # With count(*) and sum (fully aggregated), the row of W6's update counts W2..W6.
    schemas = {"Withdrawal": schema("Withdrawal", "account", "amount")}
    amounts = [500, 100, 200, 300, 400, 250]
    evs = events("Withdrawal", [(i, "A", a) for i, a in enumerate(amounts)])
    stmt = statement(["count(*)", "sum(amount)"], WindowSpec.length(5),
                     input_type="Withdrawal")
    assert rows(run(stmt, schemas, evs)) == [
        (0, 1, 500), (1, 2, 600), (2, 3, 800), (3, 4, 1100), (4, 5, 1500), (5, 5, 1250)]


def test_filter_applies_before_the_window() -> None:
    # processingmodel §3.4: select * from Withdrawal(amount>=200).win:length(5) — events
    # below 200 never enter the window, so they neither count nor push others out.
    schemas = {"Withdrawal": schema("Withdrawal", "account", "amount")}
    evs = events("Withdrawal", [(i, "A", a) for i, a in
                                enumerate([500, 100, 200, 300, 150, 400, 250, 800])])
    stmt = statement(["count(*)", "sum(amount)"], WindowSpec.length(5),
                     input_type="Withdrawal", filter="amount >= 200")
    assert rows(run(stmt, schemas, evs)) == [
        (0, 1, 500), (2, 2, 700), (3, 3, 1000), (5, 4, 1400), (6, 5, 1650), (7, 5, 1950)]


def test_time_batch_posts_one_consolidated_row_at_the_end_of_each_interval() -> None:
    # processingmodel §3.6 "Batch Windows" and §3.7.2 "Fully Aggregated and Un-grouped":
    # select sum(amount) as mysum from Withdrawal.win:time_batch(1 sec) — one row per
    # interval; the engine starts posting one second after the first event (viewreference
    # "Time batch window": the first event's arrival is the reference point).
    schemas = {"Withdrawal": schema("Withdrawal", "account", "amount")}
    evs = events("Withdrawal", [(300, "A", 10), (900, "B", 20), (1200, "A", 5),
                                (1299, "A", 1), (1300, "B", 7)])
    stmt = statement([("sum(amount)", "mysum")], WindowSpec.time_batch(1000),
                     input_type="Withdrawal")
    # batches [300, 1300) and [1300, 2300): the event at 1300 opens the second batch
    assert rows(run(stmt, schemas, evs, until=2300)) == [(1300, 36), (2300, 7)]


def test_time_batch_grouped_rows_per_group_and_per_event() -> None:
    # processingmodel §3.7.2: "Fully Aggregated and Grouped": one row per account;
    # "Aggregated and Grouped" (accountName not grouped): one row per event, with the
    # aggregate of its account over the batch.
    schemas = {"Withdrawal": schema("Withdrawal", "account", "accountName", "amount")}
    evs = events("Withdrawal", [(0, 1, "a", 10), (100, 2, "b", 20), (200, 1, "c", 30)])
    per_group = statement(["account", "sum(amount)"], WindowSpec.time_batch(1000),
                          input_type="Withdrawal", group_by=["account"])
    assert rows(run(per_group, schemas, evs, until=1000)) == [(1000, 1, 40), (1000, 2, 20)]
    per_event = statement(["account", "accountName", "sum(amount)"],
                          WindowSpec.time_batch(1000), input_type="Withdrawal",
                          group_by=["account"])
    assert rows(run(per_event, schemas, evs, until=1000)) == [
        (1000, 1, "a", 40), (1000, 2, "b", 20), (1000, 1, "c", 40)]
    # "Aggregated and Un-grouped": one row per event, the aggregate over the whole batch
    ungrouped = statement(["account", "sum(amount)"], WindowSpec.time_batch(1000),
                          input_type="Withdrawal")
    assert rows(run(ungrouped, schemas, evs, until=1000)) == [
        (1000, 1, 60), (1000, 2, 60), (1000, 1, 60)]


def test_having_filters_rows() -> None:
    # processingmodel §3.7.1: select count(*) as mycount from Withdrawal having count(*) = 2
    # (here over a length window large enough to act as "no window"): one row, at the 2nd
    # event.
    schemas = {"Withdrawal": schema("Withdrawal", "account", "amount")}
    evs = events("Withdrawal", [(i, "A", 1) for i in range(4)])
    stmt = statement([("count(*)", "mycount")], WindowSpec.length(100),
                     input_type="Withdrawal", having="count(*) == 2")
    assert rows(run(stmt, schemas, evs)) == [(1, 2)]
