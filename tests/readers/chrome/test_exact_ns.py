"""Exact nanoseconds from the decimal text of `ts`/`dur`: every digit, ties half to even.

The expected values are computed here with `decimal` at 200 digits of precision from the very
text written into the trace, never by the reader's code; the trace is read end to end (and
streamed to Parquet), with tiny chunks and batches so that values cross every boundary.
"""

from __future__ import annotations

import decimal
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from irprof.errors import TraceFormatError
from irprof.readers import read_trace
from irprof.readers.chrome import decode as chrome_decode
from irprof.readers.chrome import exact as chrome_exact
from irprof.readers.chrome.stream import stream_chrome_to_parquet
from irprof.trace.io import load_parquet

LIMIT_NS = 2**62


def expected_ns(text: str) -> int:
    """`text` microseconds in ns, rounded half to even, computed exactly."""
    with decimal.localcontext(decimal.Context(prec=200)):
        scaled = decimal.Decimal(text) * 1000
        return int(scaled.quantize(decimal.Decimal(1), rounding=decimal.ROUND_HALF_EVEN))


def trace_text(values: list[tuple[str, str]]) -> str:
    """A trace whose event e<i> has the i-th (ts, dur) texts, written verbatim."""
    events = ",\n".join(
        f'{{"ph": "X", "name": "e{index}", "pid": 1, "tid": 1, "ts": {ts}, "dur": {dur}, '
        f'"args": {{"i": {index}}}}}'
        for index, (ts, dur) in enumerate(values)
    )
    return '\n{"traceEvents": [\n' + events + "\n]}\n"


def read_times(path: Path) -> dict[str, tuple[int, int]]:
    trace = read_trace(path)
    return {
        trace.name_of(row): (int(trace.ts_ns[row]), int(trace.dur_ns[row]))
        for row in range(len(trace))
    }


# Fractions that end on a tie at the nanosecond (half to even decides), or just past one.
TIE_FRACTIONS = ["0005", "0015", "0025", "0035", "1235", "9995", "00050", "0005000", "00050001"]


@st.composite
def micros_text(draw: st.DrawFn, largest: int, signed: bool) -> str:
    """A JSON number: sign, integer digits, a fraction (often a tie), maybe an exponent."""
    sign = draw(st.sampled_from(["", "-"])) if signed else ""
    integer = draw(st.one_of(st.integers(0, 99), st.integers(0, largest)))
    fraction = draw(
        st.one_of(
            st.just(""),
            st.sampled_from(TIE_FRACTIONS),
            st.text("0123456789", min_size=1, max_size=30),
        )
    )
    exponent = draw(
        st.one_of(
            st.just(""),
            st.builds(
                "{}{}{}".format,
                st.sampled_from("eE"),
                st.sampled_from(["", "+", "-"]),
                st.integers(0, 9),
            ),
        )
    )
    text = sign + str(integer) + ("." + fraction if fraction else "") + exponent
    # Within what a trace may hold: |ts| below 2**62 ns (with room for the duration).
    if abs(expected_ns(text)) >= LIMIT_NS // 2:
        text = sign + str(integer % 10**6) + ("." + fraction if fraction else "")
    return text


TIMES = st.lists(
    st.tuples(micros_text(4 * 10**15, signed=True), micros_text(10**9, signed=False)),
    min_size=1,
    max_size=40,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=TIMES)
def test_every_digit_counts_and_ties_round_half_to_even(
    tmp_path_factory: pytest.TempPathFactory, values: list[tuple[str, str]]
) -> None:
    # GIVEN events whose ts/dur texts mix integers, fractions of up to 30 digits, ties,
    # exponents and negative starts, read in tiny chunks and batches
    path = tmp_path_factory.mktemp("exact") / "times.json"
    path.write_text(trace_text(values))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(chrome_decode, "CHUNK_BYTES", 256)
        patch.setattr(chrome_exact, "BATCH_VALUES", 5)
        # WHEN read
        found = read_times(path)
    # THEN each is the exact decimal value in ns, rounded half to even
    assert found == {
        f"e{index}": (expected_ns(ts), expected_ns(dur)) for index, (ts, dur) in enumerate(values)
    }


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(
        st.one_of(micros_text(4 * 10**15, signed=True), st.sampled_from(["0", "-1", "7.5"])),
        min_size=1,
        max_size=300,
    ),
    chunk=st.integers(1, 50),
)
def test_a_column_of_many_values_in_chunks_and_batches(values: list[str], chunk: int) -> None:
    # GIVEN many values of every shape side by side, handed over in chunks, parsed in batches
    column = chrome_exact.NanosecondColumn(Path("t.json"), "ts")
    raw = [msgspec.Raw(text.encode()) for text in values]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(chrome_exact, "BATCH_VALUES", 64)
        for start in range(0, len(raw), chunk):
            column.add(raw[start : start + chunk])
        # WHEN the column is read
        found = column.array().tolist()
    # THEN every value is its exact ns
    assert found == [expected_ns(text) for text in values]


def test_known_values_including_those_a_float_parse_gets_wrong(tmp_path: Path) -> None:
    # GIVEN values such as ties that a float64 parse lands off (0.5015 us is stored as
    # 0.50149999999999994..., read as 501 ns by the float path, 1.0725 as 1.07250000000000001)
    texts = {
        "0.5015": 502,
        "1.0725": 1072,
        "32.0005": 32000,
        "1.0005": 1000,
        "1.0015": 1002,
        "0.0025": 2,
        "-0.0025": -2,
        "2.0000005": 2000,
        "123456789012.345": 123456789012345,
        "1700000000123456.7895": 1700000000123456790,
        "1694039968955744": 1694039968955744000,
        "-3": -3000,
        "0": 0,
        "-0.0": 0,
        "1.5e3": 1500000,
        "1E-3": 1,
        "2.5E-4": 0,
        "-7.5e-4": -1,
        "0.00050000000000000000001": 1,
    }
    for text, ns in texts.items():
        assert ns == expected_ns(text)  # the table itself agrees with decimal
        # WHEN each is a trace's only start (so that no larger value in the file changes how
        # the others are read), and a duration
        path = tmp_path / "known.json"
        path.write_text(trace_text([(text, "0"), ("0", text.lstrip("-"))]))
        # THEN it is read exactly
        found = read_times(path)
        assert found == {"e0": (ns, 0), "e1": (0, abs(ns))}, text


def test_streamed_conversion_keeps_the_same_exact_times(tmp_path: Path) -> None:
    values = [(f"{base}.{fraction}", "0.0025") for base in (5, 1700000000123456)
              for fraction in TIE_FRACTIONS]  # fmt: skip
    path = tmp_path / "stream.json"
    path.write_text(trace_text(values))
    output = tmp_path / "out.parquet"
    stream_chrome_to_parquet(path, output)
    trace = load_parquet(output)
    found = {trace.name_of(row): int(trace.ts_ns[row]) for row in range(len(trace))}
    assert found == {f"e{index}": expected_ns(ts) for index, (ts, _) in enumerate(values)}
    assert set(trace.dur_ns.tolist()) == {2}


@pytest.mark.parametrize(
    ("value", "field", "message"),
    [
        ('"1,5"', "ts", "is not a number"),
        ('"soon"', "dur", "is not a number"),
        ("null", "ts", "is not a number"),
        ("true", "dur", "is not a number"),
        ("1e20", "ts", "is not a finite time"),
        ("-4611686018427387.904", "ts", "is not a finite time"),
        ("4611686018427388", "dur", "is not a finite duration"),
    ],
)
def test_a_value_that_is_not_a_time_names_its_event_and_field(
    tmp_path: Path, value: str, field: str, message: str
) -> None:
    values = [("1", "2")] * 30
    values[17] = (value, "2") if field == "ts" else ("1", value)
    path = tmp_path / "bad.json"
    path.write_text(trace_text(values))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(chrome_decode, "CHUNK_BYTES", 128)
        patch.setattr(chrome_exact, "BATCH_VALUES", 4)
        with pytest.raises(TraceFormatError) as caught:
            read_trace(path)
    assert f"traceEvents[17] field '{field}'" in str(caught.value)
    assert message in str(caught.value)


def test_largest_start_that_fits_is_kept(tmp_path: Path) -> None:
    # 2**62 - 1 ns is the last start int64 holds with headroom; its 16-digit integer part is
    # on the edge of the vectorised path
    values = [("4611686018427387.903", "0"), ("-4611686018427387.903", "0")]
    path = tmp_path / "edge.json"
    path.write_text(trace_text(values))
    assert read_times(path) == {"e0": (LIMIT_NS - 1, 0), "e1": (1 - LIMIT_NS, 0)}


@st.composite
def relative_micros_text(draw: st.DrawFn) -> str:
    """Relative microseconds as profilers write them (below 2**40 us, where the reader may use
    the decoded float), with ties and near-ties at the nanosecond among plain 3-digit ones."""
    integer = draw(st.one_of(st.integers(0, 999), st.integers(0, 2**40 - 1)))
    fraction = draw(
        st.one_of(
            st.text("0123456789", min_size=3, max_size=3),  # Kineto's 3 digits: float-exact
            st.sampled_from([*TIE_FRACTIONS, "0004999", "0005001", "2500", "7499999999"]),
            st.text("0123456789", min_size=1, max_size=12),
        )
    )
    return f"{integer}.{fraction}"


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    clean=st.lists(st.integers(0, 10**9), min_size=4, max_size=40),
    values=st.lists(st.tuples(relative_micros_text(), relative_micros_text()), max_size=40),
    epoch=st.booleans(),
)
def test_times_decoded_as_numbers_are_exact_or_read_as_text(
    tmp_path_factory: pytest.TempPathFactory,
    clean: list[int],
    values: list[tuple[str, str]],
    epoch: bool,
) -> None:
    # GIVEN a trace that starts with integer and 3-digit times (decoded as numbers), then ties,
    # near-ties and long fractions below 2**40 us, maybe then an epoch time with a fraction,
    # in chunks of a few events (each chunk decides how its numbers are read)
    head = [(str(micros), f"{micros % 1000}.{micros % 997:03d}") for micros in clean]
    tail = [("1700000000123456.7895", "0.5015")] if epoch else []
    times = head + values + tail
    path = tmp_path_factory.mktemp("floats") / "times.json"
    path.write_text(trace_text(times))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(chrome_decode, "CHUNK_BYTES", 200)
        # WHEN read
        found = read_times(path)
    # THEN every value is its exact decimal ns, rounded half to even (never the float's)
    assert found == {
        f"e{index}": (expected_ns(ts), expected_ns(dur)) for index, (ts, dur) in enumerate(times)
    }


def test_a_tie_after_float_exact_chunks_is_read_from_its_text(tmp_path: Path) -> None:
    # GIVEN chunks of 3-digit relative times (read through floats), then 0.5015 us, a tie the
    # float (0.50149999999999994) would round to 501 ns, and 1.0725 (1.07250000000000001)
    times = [(f"{index}.125", "2.250") for index in range(40)]
    times += [("0.5015", "1.0725"), ("3.0005", "0.0015")]
    path = tmp_path / "tie.json"
    path.write_text(trace_text(times))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(chrome_decode, "CHUNK_BYTES", 300)
        found = read_times(path)
    # THEN half to even from the digits: 502, 1072, 3000 and 2 ns
    assert found["e40"] == (502, 1072)
    assert found["e41"] == (3000, 2)
    assert found["e0"] == (125, 2250)
