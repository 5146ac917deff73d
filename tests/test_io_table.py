"""CSV and Parquet interchange: exact round trips, schema errors with suggestions, the
deg/s error, and atomic writes."""

from __future__ import annotations

import itertools
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rotorid.errors import LogFormatError, RotoridError
from rotorid.flight import CHANNELS, Flight
from rotorid.io import read, table

_n = itertools.count()


@pytest.fixture(scope="session")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("table")


#: Values a reader accepts per channel (rotorid.io.guard.LIMITS): any float64 inside them.
PLAUSIBLE = {
    "acc": 150.0,
    "gyro": 34.0,
    "gyro_dot": 4000.0,
    "cmd": 1.0,
    "rotor_speed": 9000.0,
    "pos": 9e4,
    "vel": 190.0,
    "vbat": 90.0,
}


@st.composite
def flights(draw: st.DrawFn) -> Flight:
    n = draw(st.integers(2, 30))
    dt = draw(hnp.arrays(np.float64, n - 1, elements=st.floats(1e-4, 0.45)))  # no gap, 2 Hz..10 kHz
    t = draw(st.floats(-100, 100)) + np.concatenate([[0.0], np.cumsum(dt)])
    if not np.all(np.diff(t) > 0):  # rounding may merge steps far from zero
        t = np.arange(n, dtype=float) / 10.0
    m = draw(st.integers(1, 8))
    kw = {}
    for ch in draw(st.sets(st.sampled_from([c for c in CHANNELS if c != "landed"]))):
        cols = CHANNELS[ch][0] or m
        if ch == "quat":
            q = draw(hnp.arrays(np.float64, (n, 4), elements=st.floats(0.1, 1.0)))
            kw[ch] = q / np.linalg.norm(q, axis=1, keepdims=True)
            continue
        hi = PLAUSIBLE[ch]
        kw[ch] = draw(hnp.arrays(np.float64, (n, cols), elements=st.floats(0.0 if ch in ("cmd", "vbat") else -hi, hi)))
    if draw(st.booleans()):
        kw["landed"] = draw(hnp.arrays(np.bool_, n))
    return Flight(t=t, meta={"source": "hypothesis"}, **kw)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flights(), st.sampled_from(["csv", "parquet"]))
def test_round_trip_is_exact(scratch: Path, f: Flight, fmt: str) -> None:
    p = table.write(f, scratch / f"f{next(_n)}.{fmt}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # random values held at an extreme look saturated
        (g,) = read(p)
    assert g.channels == f.channels
    np.testing.assert_array_equal(g.t, f.t)
    for ch in f.channels:
        np.testing.assert_array_equal(getattr(g, ch), getattr(f, ch), err_msg=ch)
    assert g.meta["format"] == fmt


def test_column_names_and_meta(scratch: Path) -> None:
    t = np.arange(5) / 100.0
    f = Flight(
        t=t,
        acc=np.ones((5, 3)),
        cmd=np.zeros((5, 2)),
        rotor_speed=np.ones((5, 2)),
        landed=t > 0.02,
        meta={"source": "x", "format": "crazyflie-v2", "rates": {"acc": 50.0}},
    )
    assert table.columns(f) == ["t", "acc_x", "acc_y", "acc_z", "cmd_0", "cmd_1", "rpm_0", "rpm_1", "landed"]
    p = table.write(f, scratch / "meta.parquet")
    (g,) = read(p)
    assert g.meta["rates"] == {"acc": 50.0}  # the original rate survives Parquet
    assert g.meta["original_format"] == "crazyflie-v2"
    with pytest.warns(UserWarning, match=r"original rates \(acc 10.0 Hz; rows at 100.0 Hz\) are lost"):
        table.write(f.replace(meta={**f.meta, "rates": {"acc": 10.0}}), scratch / "slow.csv")
    c = table.write(f, scratch / "meta.csv")
    assert c.read_text().splitlines()[0] == "t,acc_x,acc_y,acc_z,cmd_0,cmd_1,rpm_0,rpm_1,landed"
    assert c.read_text().splitlines()[1].endswith(",0")  # landed as 0/1


def _csv(folder: Path, text: str) -> Path:
    p = folder / f"c{next(_n)}.csv"
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("t,gyr_x,gyro_y,gyro_z", "unknown column 'gyr_x'; did you mean 'gyro_x'?"),
        ("t,acc_x,acc_y,acc_Z", "unknown column 'acc_Z'; did you mean 'acc_z'?"),
        ("t,cmd0,cmd_1", "unknown column 'cmd0'; did you mean 'cmd_0'?"),
        ("t,qw,qx,qy", "channel 'quat' needs columns qw qx qy qz; missing qz"),
        ("t,cmd_0,cmd_2", "missing cmd_1"),
        ("time,acc_x,acc_y,acc_z", "unknown column 'time'; did you mean 't'?"),
        ("acc_x,acc_y,acc_z", "no 't' column"),
    ],
)
def test_schema_errors_name_the_column(scratch: Path, header: str, message: str) -> None:
    body = "\n".join(",".join(str(k + j) for j in range(header.count(",") + 1)) for k in range(3))
    with pytest.raises(LogFormatError, match=re.escape(message)):
        read(_csv(scratch, header + "\n" + body + "\n"))


def test_bad_values(scratch: Path) -> None:
    with pytest.raises(LogFormatError, match="column 'landed' must be 0 or 1, got 2 in row 1"):
        read(_csv(scratch, "t,landed\n0,0\n1,2\n"))
    with pytest.raises(LogFormatError, match="column 'acc_y' holds non-numeric values"):
        read(_csv(scratch, "t,acc_x,acc_y,acc_z\n0,1,a,2\n1,1,1,1\n"))
    with pytest.raises(RotoridError, match=r"channel 'acc' has NaN/inf at t=1.000000 s"):
        read(_csv(scratch, "t,acc_x,acc_y,acc_z\n0,1,1,2\n1,1,,1\n"))
    with pytest.raises(LogFormatError, match="empty"):
        read(_csv(scratch, ""))
    with pytest.raises(LogFormatError, match="header but no rows"):
        read(_csv(scratch, "t,acc_x,acc_y,acc_z\n"))
    bad = scratch / "bad.parquet"
    bad.write_bytes(b"PAR1 not really")
    with pytest.raises(LogFormatError, match="not a readable Parquet file"):
        read(bad)


def test_gyro_in_degrees_is_an_error(scratch: Path) -> None:
    t = np.arange(1000) / 1000.0
    gyro = np.zeros((1000, 3))
    gyro[:, 1] = 90.0 * np.sin(2 * np.pi * t)  # a pitch rate in deg/s: > 35 "rad/s" from t = 0.064 s
    p = table.write(Flight(t=t, gyro=gyro, meta={"source": "deg"}), scratch / "deg.csv")
    with pytest.raises(LogFormatError, match=r"'gyro' column 1 reads 35\.2\d* rad/s at t = 0\.064 s.*deg/s"):
        read(p)


def test_failing_write_leaves_nothing(scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow.parquet as pq

    f = Flight(t=np.arange(4.0), acc=np.zeros((4, 3)), meta={"source": "x"})
    out = scratch / "atomic"
    out.mkdir()

    def half(writer: object, tab: object) -> None:  # the row group fails after the file was opened
        raise OSError("disk full")

    monkeypatch.setattr(pq.ParquetWriter, "write_table", half)
    with pytest.raises(RotoridError, match=r"x.parquet: could not write \(disk full\); nothing was changed"):
        table.write(f, out / "x.parquet")
    assert list(out.iterdir()) == []
    with pytest.raises(RotoridError, match=r"unknown table format '\.txt'"):
        table.write(f, out / "x.txt")
    assert list(out.iterdir()) == []


def test_io_write_dispatches_by_suffix(scratch: Path) -> None:
    from rotorid import io

    f = Flight(t=np.arange(10) / 100.0, gyro=np.ones((10, 3)), meta={"source": "x"})
    for suffix, fmt in (
        (".csv", "csv"),
        (".parquet", "parquet"),
        (".ulg", "ulog"),
        (".ulog", "ulog"),
        (".bin", "dataflash"),
    ):
        (g,) = read(io.write(f, scratch / f"d{suffix}"))
        np.testing.assert_allclose(g.gyro, 1.0)
        assert g.meta["format"] == fmt
    with pytest.raises(LogFormatError, match=r"rotorid writes .bin, .csv, .parquet, .ulg, .ulog files, not '.txt'"):
        io.write(f, scratch / "d.txt")


def test_parquet_read_a_row_group_at_a_time_equals_the_whole_table(scratch: Path) -> None:
    """`_read_parquet` decodes row group after row group into whole-length columns (issue 36): the
    same columns as pyarrow's whole table, float64 written in place, any other type (an int8
    `landed`, a float64 with a null) joined, uneven row groups included."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(3)
    n = 1000
    t = np.arange(n) / 100.0
    acc = rng.standard_normal((n, 3))
    vbat = np.full(n, 15.0)
    landed = (rng.random(n) < 0.1).astype(np.int8)
    vbat_null = pa.array([None if i == 123 else v for i, v in enumerate(vbat)], type=pa.float64())
    tab = pa.table({"t": t, "acc_x": acc[:, 0], "acc_y": acc[:, 1], "acc_z": acc[:, 2], "landed": landed})
    path = scratch / "groups.parquet"
    pq.write_table(tab.append_column("vbat", vbat_null), path, row_group_size=300)  # 300, 300, 300, 100 rows
    assert pq.ParquetFile(path).metadata.num_row_groups == 4
    cols, _ = table._read_parquet(path)
    whole = pq.read_table(path)
    assert list(cols) == whole.column_names
    for name in whole.column_names:
        want = whole.column(name).to_numpy()
        assert cols[name].dtype == want.dtype and len(cols[name]) == n
        np.testing.assert_array_equal(cols[name], want)
    assert np.isnan(cols["vbat"][123]) and cols["vbat"][124] == 15.0
    plain = scratch / "groups_plain.parquet"
    pq.write_table(tab.append_column("vbat", pa.array(vbat)), plain, row_group_size=300)
    (f,) = table.read(plain)  # the channels stacked from the columns taken out as they go
    np.testing.assert_array_equal(f.t, t)
    np.testing.assert_array_equal(f.acc, acc)
    np.testing.assert_array_equal(f.landed, landed.astype(bool))
    np.testing.assert_array_equal(f.vbat, vbat)
