"""PyFlink's date, time, decimal, binary and instant types in records and outputs: written into
scenario files exactly (naive and aware datetimes, microseconds, zones, folds, decimal digits),
compared by value (``canonical``), shown readably (properties/job/values.py)."""

from __future__ import annotations

import datetime
import json
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamproof.flink.common import Row, Types
from streamproof.flink.common.time import Instant
from streamproof.flink.common.typeinfo import check_value
from streamproof.flink.common.types import RowKind
from streamproof.properties.job.steps import UserRecord, sources_of
from streamproof.properties.job.values import canonical, decode, encode
from streamproof.properties.scenario import JSON, Scenario, dump_scenario, load_scenario, load_scenario_file

UTC = datetime.timezone.utc
IST = datetime.timezone(datetime.timedelta(hours=5, minutes=30))
BERLIN = ZoneInfo("Europe/Berlin")
ODD = datetime.timezone(datetime.timedelta(hours=-3, minutes=-7, seconds=-5, microseconds=-250))


def through_a_file(value):
    return decode(json.loads(json.dumps(encode(value))))


def same(a, b) -> bool:
    """Equal, of the same type, with the same zone, fold and decimal digits."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (datetime.datetime, datetime.time)):
        return a == b and a.tzinfo == b.tzinfo and a.fold == b.fold and a.isoformat() == b.isoformat()
    if isinstance(a, Decimal):
        return str(a) == str(b)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


@pytest.mark.parametrize("value", [
    datetime.datetime(2024, 5, 1, 12, 30, 15, 123456),                      # naive, microseconds
    datetime.datetime(2024, 5, 1, 12, 30, tzinfo=UTC),
    datetime.datetime(2024, 5, 1, 12, 30, 0, 1, tzinfo=IST),
    datetime.datetime(2024, 5, 1, 12, 30, 0, 999999, tzinfo=ODD),           # an offset with seconds
    datetime.datetime(2024, 3, 31, 12, tzinfo=BERLIN),                      # a zone keeps its name
    datetime.datetime(2021, 10, 31, 2, 30, tzinfo=BERLIN, fold=1),          # the second 02:30 of that night
    datetime.datetime(2021, 10, 31, 2, 30, fold=1),
    datetime.datetime.min, datetime.datetime.max, datetime.datetime.max.replace(tzinfo=ODD),
    datetime.date(2024, 2, 29), datetime.date.min,
    datetime.time(23, 59, 59, 999999), datetime.time(0, 0, tzinfo=IST), datetime.time(1, 2, 3, fold=1),
    datetime.timedelta(days=-3, seconds=5, microseconds=7),
    Decimal("12.50"), Decimal("-0"), Decimal("1E+30"), Decimal("123456789012345678901234567890.0123456789"),
    Decimal("-Infinity"),
    b"\x00\xff", b"",
])
def test_each_type_survives_the_scenario_file_exactly(value):
    assert same(through_a_file(value), value)


def test_records_of_those_types_survive_nested():
    row = Row(user="ann", when=datetime.datetime(2024, 5, 1, 12, 0, 0, 5, tzinfo=BERLIN), day=datetime.date(2024, 5, 1),
              amount=Decimal("3.10"), payload=b"\x01", at=datetime.time(8, 15), took=datetime.timedelta(seconds=1))
    record = (row, [datetime.date(2024, 1, 1), {"t": datetime.datetime(2020, 1, 1)}], {Decimal("1.0")})
    back = through_a_file(record)
    assert back == record and same(back[0].when, row.when) and same(back[0].amount, row.amount)
    assert back[0].as_dict().keys() == row.as_dict().keys()


def test_a_row_keeps_its_kind_and_field_order():
    row = Row("b", "a")(datetime.date(2024, 1, 1), 2)  # a row "class": fields in the order given
    row.set_row_kind(RowKind.UPDATE_AFTER)
    back = through_a_file(row)
    assert back == row and back.get_row_kind() is RowKind.UPDATE_AFTER and back.b == datetime.date(2024, 1, 1)


def test_instants_round_trip_and_genuine_pyflink_values_encode_alike():
    assert through_a_file(Instant(1714564800, 123_456_789)) == Instant(1714564800, 123_456_789)
    pyflink = pytest.importorskip("pyflink.common")
    from pyflink.common.time import Instant as PyFlinkInstant

    assert encode(PyFlinkInstant(5, 6)) == encode(Instant(5, 6)) == {"$instant": [5, 6]}
    when = datetime.datetime(2024, 5, 1, tzinfo=UTC)
    assert canonical(pyflink.Row(n=Decimal("1.0"), when=when)) == canonical(Row(n=Decimal("1.00"), when=when))
    genuine = pyflink.Row(when=when, n=Decimal("1.0"))  # apache-flink 2.x keeps keyword order: kept
    assert list(through_a_file(genuine).as_dict()) == ["when", "n"]


@settings(max_examples=200, deadline=None)
@given(st.one_of(
    st.datetimes(timezones=st.none() | st.timezones(), allow_imaginary=True),
    st.dates(), st.times(timezones=st.none() | st.just(IST)), st.timedeltas(),
    st.decimals(allow_nan=False), st.binary(),
))
def test_any_value_round_trips(value):
    back = through_a_file(value)
    assert same(back, value), (value, back)
    assert canonical(back) == canonical(value)


@settings(max_examples=100, deadline=None)
@given(st.datetimes(timezones=st.timezones()), st.timezones())
def test_an_aware_datetime_equals_the_same_instant_in_another_zone(value, zone):
    """(Python's ``==`` says so too, except for an ambiguous or imaginary local time, which never
    equals a time in another zone; the canonical form goes by the instant there as well.)"""
    try:
        other = value.astimezone(zone)
    except OverflowError:
        return
    assert canonical(other) == canonical(value)
    assert canonical(other) != canonical(other.replace(tzinfo=None))


def test_outputs_compare_by_value():
    aware = datetime.datetime(2024, 5, 1, 12, tzinfo=BERLIN)
    assert canonical(aware) == canonical(datetime.datetime(2024, 5, 1, 10, tzinfo=UTC))  # one instant
    assert canonical(aware) != canonical(aware.replace(tzinfo=None))  # naive is not aware (== says so too)
    assert canonical(datetime.datetime(2024, 5, 1, 12, 0, 0, 1)) != canonical(datetime.datetime(2024, 5, 1, 12))
    assert canonical(datetime.datetime(2021, 10, 31, 2, 30, fold=1)) == canonical(datetime.datetime(2021, 10, 31, 2, 30))
    assert canonical(datetime.datetime(2024, 5, 1)) != canonical(datetime.date(2024, 5, 1))  # a datetime is not a date
    assert canonical(Decimal("1.50")) == canonical(Decimal("1.5")) == canonical(Decimal("1.500"))
    assert canonical(Decimal("10")) == canonical(Decimal("1E+1")) and canonical(Decimal("-0.00")) == canonical(Decimal(0))
    assert canonical(Decimal("NaN")) == canonical(Decimal("NaN")) and canonical(Decimal("1.5")) != canonical(1.5)
    assert canonical({datetime.date(2024, 1, 2), datetime.date(2024, 1, 1)}) == \
        canonical({datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)})
    assert canonical([{"at": aware}]) == canonical([{"at": aware.astimezone(UTC)}])  # unhashable containers too
    assert canonical(bytearray(b"ab")) == canonical(b"ab")


def test_outputs_are_shown_readably():
    from streamproof.properties.certify_runs import readable

    when = datetime.datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=UTC)
    assert readable(canonical((when, Decimal("2.50")))) == \
        "(datetime.datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=datetime.timezone.utc), Decimal('2.5'))"
    assert encode(when) == {"$datetime": "2024-05-01T12:00:00.250000+00:00"}  # in traces and scenario files
    assert encode(datetime.date(2024, 5, 1)) == {"$date": "2024-05-01"}
    assert encode(Decimal("2.50")) == {"$decimal": "2.50"}


def test_a_scenario_file_with_a_datetime_record_loads_back_equal(tmp_path):
    record = Row(user="ann", when=datetime.datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=BERLIN),
                 day=datetime.date(2024, 5, 1), amount=Decimal("9.90"), payload=b"\x00")
    naive = ("bob", datetime.datetime(2024, 5, 1, 12, 0, 0, 7), datetime.time(23, 59, 59, 999999))
    steps = (UserRecord(0, JSON.freeze(encode("ann")), JSON.freeze(encode(record)), 1_714_557_600_123),
             UserRecord(0, JSON.freeze(encode("bob")), JSON.freeze(encode(naive)), 1_714_557_600_200))
    scenario = Scenario(family="job", steps=steps, params={"operator": "window_sum", "sources": 1, "parallelism": 1})
    path = tmp_path / "scenario.json"
    path.write_text(dump_scenario(scenario, indent=2))
    loaded = load_scenario_file(path)
    assert loaded == scenario and load_scenario(dump_scenario(loaded)) == scenario
    assert "2024-05-01T12:00:00.123456+02:00" in path.read_text()
    values = [r.value for r in sources_of(loaded)[0] if hasattr(r, "value")]
    assert values == [record, naive]
    assert same(values[0].when, record.when) and same(values[0].amount, record.amount) and same(values[1], naive)


def test_state_types_of_those_values_are_checked():
    assert check_value(Types.PRIMITIVE_ARRAY(Types.BYTE()), bytearray(b"ab"), "s") == b"ab"  # PyFlink: bytes
    for type_info, value in [(Types.SQL_TIMESTAMP(), datetime.datetime(2024, 1, 1)), (Types.SQL_DATE(), datetime.date(2024, 1, 1)),
                             (Types.SQL_TIME(), datetime.time(1)), (Types.LOCAL_DATE_TIME(), datetime.datetime(2024, 1, 1)),
                             (Types.LOCAL_DATE(), datetime.date(2024, 1, 1)), (Types.LOCAL_TIME(), datetime.time(1)),
                             (Types.BIG_DEC(), Decimal("1.50")), (Types.INSTANT(), Instant(1, 2))]:
        assert check_value(type_info, value, "s") == value
    for type_info, value in [(Types.SQL_TIME(), 5), (Types.LOCAL_DATE_TIME(), datetime.date(2024, 1, 1)),
                             (Types.LOCAL_TIME(), "01:00"), (Types.INSTANT(), 5), (Types.PRIMITIVE_ARRAY(Types.BYTE()), [1, 2])]:
        with pytest.raises(TypeError):
            check_value(type_info, value, "s")


def test_an_operator_on_records_with_dates_decimals_and_bytes_is_certified():
    from streamproof.properties.certify import certify

    c = certify("tests.certify_datetime_ops:DecimalTotalsPerSecond", examples=10)
    assert "failed" not in {r["verdict"] for r in c.results}, c.markdown()
    assert all(r["coverage"]["non-empty output"] > 0 for r in c.results), c.markdown()


def test_float_state_reads_back_the_double_written_until_a_checkpoint_restores_it():
    """PyFlink's Python state cache hands back the double a function wrote to FLOAT state; a
    checkpoint serializes it in single precision and a restore reads that back (Apache Flink 2.3,
    examples/jobs/real/flink_expected.json: state_access.py, 110.0999984741211 + 20.0 =
    130.0999984741211 before a failure)."""
    import struct

    from streamproof import testing
    from tests.test_certify_restart import FloatSum

    harness = testing.for_keyed_process_function(FloatSum, lambda v: v[0])
    harness.process_element(("a", 110.1), 1).process_element(("a", 20.0), 2)
    assert harness.extract_output_values() == [("a", 110.1), ("a", 130.1)]
    snapshot = harness.snapshot()
    restored = testing.for_keyed_process_function(FloatSum, lambda v: v[0])
    restored.restore([snapshot])
    restored.process_element(("a", 1.0), 3)
    single = struct.unpack("f", struct.pack("f", 130.1))[0]
    assert single != 130.1 and restored.extract_output_values() == [("a", single + 1.0)]
    # the live harness is untouched by its own snapshot
    harness.process_element(("a", 1.0), 3)
    assert harness.extract_output_values()[-1] == ("a", 130.1 + 1.0)
