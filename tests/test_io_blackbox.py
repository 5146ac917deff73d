"""Betaflight blackbox: the two real CS110 logs (units, axes confirmed on the data, header
facts), log sections of a multi-flight file, eRPM -> rotor speed, export, the delay method end
to end on a fixture window with a stated vehicle. Mutation fuzzing of the fixtures:
tests/test_fuzz_readers.py."""

from __future__ import annotations

import json
import struct
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from rotorid import frames
from rotorid.cli import app
from rotorid.errors import LogFormatError
from rotorid.flight import Flight
from rotorid.io import blackbox, read, write
from rotorid.signal import butter_filtfilt, derivative

#: A CS110 as its pilot states it: 110 mm diagonal, Betaflight's quad-X motor order (1 rear
#: right, 2 front right, 3 rear left, 4 front left), props in (1 and 4 turn clockwise seen
#: from above, so their drag turns the body counter-clockwise: torque_dir +1). The mass is
#: not in the log; 105 g is the pilot's statement.
CS110 = """
name = "cs110"
mass = 0.105
motor_input = "normalized"
[[rotor]]
position = [-0.0389, -0.0389, 0.0]
axis = [0.0, 0.0, 1.0]
torque_dir = 1
[[rotor]]
position = [0.0389, -0.0389, 0.0]
axis = [0.0, 0.0, 1.0]
torque_dir = -1
[[rotor]]
position = [-0.0389, 0.0389, 0.0]
axis = [0.0, 0.0, 1.0]
torque_dir = -1
[[rotor]]
position = [0.0389, 0.0389, 0.0]
axis = [0.0, 0.0, 1.0]
torque_dir = 1
"""


@pytest.fixture(scope="session")
def bbl(data_dir: Path) -> dict[str, Path]:
    out = {n: data_dir / "betaflight" / f"{n}.BBL" for n in ("example_smooth_tune", "better_tune")}
    if not all(p.exists() for p in out.values()):
        pytest.fail(f"Betaflight fixtures not found: {sorted(map(str, out.values()))}")
    return out


@pytest.fixture(scope="session")
def smooth(bbl: dict[str, Path], decoded) -> Flight:
    (f,) = decoded(bbl["example_smooth_tune"])
    return f


def test_units_and_header_facts(smooth: Flight) -> None:
    f = smooth
    assert f.meta["format"] == "blackbox" and f.meta["log_index"] == 1
    h = f.meta["header"]
    assert h["Firmware revision"] == "Betaflight 3.1.5 (4646f9d) OMNIBUSF4" and h["Craft name"] == "CS110"
    assert h["looptime"] == 125 and h["P interval"] == "1/4" and h["acc_1G"] == 2048
    assert h["gyro_scale"] == 1.0  # 0x3f800000: the float's bits
    # 8 kHz loop, every 4th iteration logged
    assert f.rate == pytest.approx(2000.0, rel=0.02)
    assert f.t[0] == pytest.approx(33.911, abs=1e-3) and f.duration == pytest.approx(38.77, abs=0.01)
    # accSmooth / acc_1G in g: hovering all flight long, so the mean specific force is ≈ +1 g up
    assert np.median(f.acc[:, 2]) == pytest.approx(frames.GRAVITY, rel=0.05)
    assert np.abs(np.median(f.acc[:, :2], axis=0)).max() < 0.5
    # gyroADC deg/s -> rad/s: PID-tune oscillations of a few rad/s, no 57x error
    assert 2.0 < np.abs(f.gyro[:, 0]).max() < 10.0
    # motor[] over motorOutput 138..2047 -> 0…1; hover near 26 %
    assert f.meta["units"]["cmd"] == "normalized (motorOutput 138..2047)"
    assert f.cmd.shape[1] == 4 and f.cmd.min() >= 0.0 and f.cmd.max() <= 1.0
    assert np.median(f.cmd) == pytest.approx(0.265, abs=0.02)
    assert "rotor_speed" not in f.channels  # no bidirectional DShot in 2017
    # vbatLatest in 0.1 V on Betaflight 3.1.5: a 2S pack, 7.0-7.3 V (vbatref 75: 7.5 V at arming)
    assert f.meta["units"]["vbat"] == "V (vbatLatest, 0.1 V (Betaflight >= 3.1, Cleanflight >= 2.0))"
    assert (f.vbat.min(), np.median(f.vbat), f.vbat.max()) == pytest.approx((7.0, 7.2, 7.3))


def test_axes_are_flu_by_the_motor_differentials(smooth: Flight) -> None:
    """Angular acceleration follows the torque of the motor differentials 20 ms earlier, with
    the sign FLU predicts for Betaflight's quad-X order: roll (left motors 3, 4 minus right 1,
    2), pitch (rear 1, 3 minus front 2, 4: nose down is +y), yaw (clockwise props 1, 4 minus
    2, 3: their drag turns the body counter-clockwise, +z up)."""
    f = smooth.window(35.0, 70.0)
    m = f.cmd
    torque = np.column_stack(
        [
            m[:, 2] + m[:, 3] - m[:, 0] - m[:, 1],
            m[:, 0] + m[:, 2] - m[:, 1] - m[:, 3],
            m[:, 0] + m[:, 3] - m[:, 1] - m[:, 2],
        ]
    )
    wdot = butter_filtfilt(derivative(f.gyro, f.t), f.rate, 30.0)
    torque = butter_filtfilt(torque, f.rate, 30.0)
    lag = round(0.02 * f.rate)
    r = [np.corrcoef(torque[:-lag, k], wdot[lag:, k])[0, 1] for k in range(3)]
    assert r[0] > 0.5 and r[1] > 0.3 and r[2] > 0.2, r


def test_every_fixture_reads_and_exports(bbl: dict[str, Path], decoded, tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match=r"channel 'gyro' is held at its extreme in 2 span\(s\)"):
        (f,) = decoded(bbl["better_tune"])
    # a flip drives the gyro into its ±2000 deg/s range: the deg/s scale is right
    assert np.abs(f.gyro).max() == pytest.approx(np.radians(2000.0), rel=0.005)
    assert f.meta["header"]["P interval"] == "1/8"
    assert f.rate == pytest.approx(1000.0, rel=0.02)
    # a harder flight than the smooth tune: body-z specific force above 1 g on average (turns)
    assert 1.0 < np.median(f.acc[:, 2]) / frames.GRAVITY < 1.25
    with pytest.warns(UserWarning, match="saturated"):
        (back,) = read(write(f, tmp_path / "better.parquet"))  # what `rotorid convert` writes
    np.testing.assert_allclose(back.gyro, f.gyro)
    np.testing.assert_allclose(back.cmd, f.cmd)


def test_one_flight_per_log_section(bbl: dict[str, Path], tmp_path: Path) -> None:
    """Two log sections on one card (each starts with its own header), the first cut where the
    second begins, as a flight controller leaves them after a power loss."""
    p = tmp_path / "two.bbl"
    p.write_bytes(bbl["example_smooth_tune"].read_bytes()[:300_000] + bbl["better_tune"].read_bytes()[:300_000])
    with (
        pytest.warns(UserWarning, match=r"log 1 is cut or corrupt after \d+ frames"),
        pytest.warns(UserWarning, match=r"log 2 is cut or corrupt after \d+ frames"),
    ):
        first, second = read(p)
    assert (first.meta["log_index"], second.meta["log_index"]) == (1, 2)
    assert first.meta["header"]["P interval"] == "1/4" and second.meta["header"]["P interval"] == "1/8"
    assert first.rate == pytest.approx(2000.0, rel=0.02) and second.rate == pytest.approx(1000.0, rel=0.02)
    assert first.t[-1] < 40.0 < 75.0 < second.t[0]  # each on its own clock since power-up


def _section(names: list[str], rows: list[tuple], **header: object) -> tuple[dict, dict]:
    headers = {"motorOutput": [48, 2047], "acc_1G": 2048, "gyro_scale": "0x3f800000", **header}
    series, meta = blackbox._flight(Path("synthetic.bbl"), 1, headers, names, rows, None)
    return series, meta


def test_erpm_to_rotor_speed_with_motor_poles() -> None:
    """eRPM/100 from bidirectional DShot: rotor rad/s = eRPM·100 / (poles/2) · 2π/60."""
    names = ["time", *(f"motor[{i}]" for i in range(4)), *(f"eRPM[{i}]" for i in range(4))]
    rows = [(1000 * k, 48, 1047, 2047, 2047, 100 * k, 200, 300, 400) for k in range(10)]
    series, meta = _section(names, rows, motor_poles=14)
    rpm = np.array([[100 * k, 200, 300, 400] for k in range(10)]) * 100 / 7
    np.testing.assert_allclose(series["rotor_speed"].values, rpm * 2 * np.pi / 60)
    assert meta["units"]["rotor_speed"] == "rad/s (from eRPM, 14 motor poles)"
    np.testing.assert_allclose(series["cmd"].values[0], [0.0, 0.5, 1.0, 1.0], atol=1e-3)
    np.testing.assert_allclose(series["cmd"].t, np.arange(10) * 1e-3)
    with pytest.warns(UserWarning, match="motor_poles unknown"):
        series, _ = _section(names, rows)
    assert "rotor_speed" not in series


def test_battery_voltage_of_the_betaflight_4_fixture(bf_flights) -> None:
    """Betaflight 4.2.8 logs vbatLatest in 0.01 V: a 4S pack from 16.58 V (vbatref 1653) sagging to 13.15 V."""
    f = bf_flights["btfl_002.bbl"]
    assert f.meta["units"]["vbat"] == "V (vbatLatest, 0.01 V (Betaflight >= 4.0))"
    assert (f.vbat.min(), f.vbat.max()) == pytest.approx((13.15, 16.58))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    firmware=st.sampled_from(
        [
            ("Betaflight 4.2.0 (8f2d2) F745", 0.01),
            ("Betaflight 3.1.5 (4646f) F4", 0.1),
            ("Cleanflight 2.1.0", 0.1),
            ("Betaflight 3.0.1", 33.0 * 10 * 110 / 4095 / 1000),  # ADC counts: mV = ADC·33·10·vbatscale/4095
            ("Cleanflight 1.14.2", 33.0 * 10 * 110 / 4095 / 1000),
        ]
    ),
    raw=st.lists(st.integers(0, 4095), min_size=3, max_size=30),
)
def test_vbat_unit_follows_the_firmware_version(firmware: tuple[str, float], raw: list[int]) -> None:
    """vbatLatest counts -> V by firmware (0.01 V, 0.1 V, or ADC x vbatscale before Betaflight 3.1);
    zero counts (no voltage meter) dropped; an unknown firmware's voltage is not read."""
    revision, per_count = firmware
    names = ["time", "motor[0]", "vbatLatest"]
    rows = [(1000 * k, 500, r) for k, r in enumerate(raw)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the vbatref check is tested on its own
        series, meta = _section(names, rows, **{"Firmware revision": revision, "vbatscale": 110})
    v = np.array(raw, dtype=float)
    if np.count_nonzero(v) < 2:
        assert "vbat" not in series
        return
    np.testing.assert_allclose(series["vbat"].values, v[v > 0] * per_count, rtol=1e-12)
    np.testing.assert_allclose(series["vbat"].t, np.flatnonzero(v > 0) * 1e-3)
    series, meta = _section(names, rows, **{"Firmware revision": "EmuFlight 0.4.1"})
    assert "vbat" not in series and "vbatLatest's unit unknown" in meta["notes"][0]


def test_vbat_far_from_vbatref_is_warned() -> None:
    rows = [(1000 * k, 500, 1650) for k in range(5)]
    header = {"Firmware revision": "Betaflight 4.2.8", "vbatref": 165}  # 1.65 V at arming: not this unit
    with pytest.warns(UserWarning, match=r"read as 16.50 V .* vbatref says 1.65 V"):
        _section(["time", "motor[0]", "vbatLatest"], rows, **header)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    scale=st.floats(0.0625, 8.0, width=32),
    one_g=st.sampled_from([256, 512, 1024, 2048, 4096]),
    lo=st.integers(0, 1100),
    span=st.integers(100, 2000),
    raw=st.lists(st.tuples(*[st.integers(-4000, 4000)] * 6, st.integers(0, 3200)), min_size=2, max_size=30),
)
def test_header_scales_convert_every_frame(scale: float, one_g: int, lo: int, span: int, raw: list) -> None:
    """gyroADC × gyro_scale (float bits) deg/s -> rad/s, accSmooth / acc_1G g -> m/s², motor
    over motorOutput -> 0…1 clipped, time µs -> s, for any header and frames."""
    names = ["time", *(f"gyroADC[{i}]" for i in range(3)), *(f"accSmooth[{i}]" for i in range(3)), "motor[0]"]
    rows = [(1000 * k, *r) for k, r in enumerate(raw)]
    bits = hex(struct.unpack("<I", struct.pack("<f", scale))[0])
    series, meta = _section(names, rows, gyro_scale=bits, acc_1G=one_g, motorOutput=[lo, lo + span])
    v = np.array(raw, dtype=float)
    np.testing.assert_allclose(series["gyro"].values, np.radians(v[:, :3] * scale), rtol=1e-12)
    np.testing.assert_allclose(series["acc"].values, v[:, 3:6] / one_g * frames.GRAVITY, rtol=1e-12)
    np.testing.assert_allclose(series["cmd"].values[:, 0], np.clip((v[:, 6] - lo) / span, 0, 1))
    np.testing.assert_allclose(series["gyro"].t, np.arange(len(raw)) * 1e-3)
    assert meta["header"]["gyro_scale"] == scale


def test_corrupt_header_numbers_are_format_errors() -> None:
    names = ["time", "gyroADC[0]", "gyroADC[1]", "gyroADC[2]"]
    rows = [(1000 * k, 1, 2, 3) for k in range(5)]
    with pytest.raises(LogFormatError, match="header gyro_scale is 'zz', not a number"):
        _section(names, rows, gyro_scale="zz")
    with pytest.raises(LogFormatError, match="not a positive float"):
        _section(names, rows, gyro_scale="0xbf800000")  # -1.0
    series, _ = _section(names, rows, gyro_scale="0x40000000")  # 2.0 deg/s per count
    np.testing.assert_allclose(series["gyro"].values[0], np.radians([2.0, 4.0, 6.0]))


INAV = {"Firmware type": "Cleanflight", "Firmware revision": "INAV 7.1.2 (4e1e59eb) MATEKF405"}
INAV_NAMES = [
    "time",
    *(f"gyroADC[{i}]" for i in range(3)),
    *(f"accSmooth[{i}]" for i in range(3)),
    *(f"attitude[{i}]" for i in range(3)),
    *(f"motor[{i}]" for i in range(4)),
]


def inav_rows(
    flip: tuple[int, ...] = (), seconds: float = 4.0, amp: tuple[float, ...] = (2.0, 1.5, 1.0), phase: float = 1.0
) -> list[tuple]:
    """A 1 kHz INAV main-frame stream of a quad rocking on all three axes, as INAV's
    blackbox.c writes it: gyroADC deg/s (FLU), accSmooth = specific force in g · acc_1G,
    attitude = decidegrees of roll, pitch (nose down +) and heading (clockwise, 0…3600) of
    the same motion; `flip` negates gyro columns (a log whose axes disagree)."""
    from scipy.spatial.transform import Rotation

    t = np.arange(0.0, seconds, 1e-3)
    w = np.column_stack(
        [
            amp[0] * np.sin(2 * np.pi * 1.3 * t),
            amp[1] * np.sin(2 * np.pi * 0.9 * t + phase),
            amp[2] * np.cos(2 * np.pi * 0.7 * t + 2 * phase),
        ]
    )
    steps = Rotation.from_rotvec(w[:-1] * 1e-3)
    rot = [Rotation.identity()]
    for s in steps:  # body rates compose on the right: R_{k+1} = R_k exp(w dt)
        rot.append(rot[-1] * s)
    r = Rotation.concatenate(rot)
    yaw, pitch, roll = r.as_euler("ZYX").T  # R = Rz(yaw) Ry(pitch) Rx(roll), FLU body, z-up world
    attitude = np.column_stack([np.degrees(roll), np.degrees(pitch), np.mod(-np.degrees(yaw), 360.0)]) * 10
    acc = r.inv().apply([0.0, 0.0, 1.0]) * 2048  # hovering: thrust balances gravity
    gyro = np.degrees(w) * np.where(np.isin(np.arange(3), flip), -1.0, 1.0)
    cols = [np.round(t * 1e6), *np.round(gyro).T, *np.round(acc).T, *np.round(attitude).T, *[np.full(len(t), 1400)] * 4]
    return [tuple(int(v) for v in row) for row in np.column_stack(cols)]


def test_inav_reads_with_betaflight_axes_checked_against_its_attitude() -> None:
    """INAV logs the same fields and units (gyroADC deg/s, accSmooth in acc_1G, motor over
    motorOutput) and, by its rate loop and quad-X mixer, the same X forward, Y left, Z up
    axes; its own attitude[] confirms the gyro signs when read."""
    rows = inav_rows()
    series, meta = _section(INAV_NAMES, rows, motorOutput=[1150, 1850], **INAV)
    np.testing.assert_allclose(series["gyro"].values, np.radians(np.array(rows, dtype=float)[:, 1:4]))
    (note,) = [n for n in meta["notes"] if "INAV" in n]
    corr = [float(x.split()[1]) for x in note.split("(correlation ")[1].split(";")[0].split(", ")]
    assert min(corr) > 0.95, note
    np.testing.assert_allclose(series["cmd"].values[0], [250 / 700] * 4)
    assert np.median(series["acc"].values[:, 2]) > 0.5 * frames.GRAVITY


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_inav_gyro_axis_that_disagrees_with_its_attitude_is_refused(axis: int) -> None:
    with pytest.raises(
        LogFormatError, match=rf"\(INAV\): gyro {'xyz'[axis]} disagrees in sign with the rate of the logged attitude"
    ):
        _section(INAV_NAMES, inav_rows(flip=(axis,)), motorOutput=[1150, 1850], **INAV)


@settings(max_examples=12, deadline=None, derandomize=True)
@given(
    amp=st.tuples(*[st.floats(0.5, 6.0)] * 3),
    phase=st.floats(0.0, 2 * np.pi),
    flip=st.sets(st.integers(0, 2), max_size=3),
)
def test_inav_sign_check_refuses_exactly_the_flipped_axes(amp: tuple, phase: float, flip: set[int]) -> None:
    """Over rocking motions up to ±6 rad/s (attitude through ±180° roll and heading wraps):
    a log reads iff no gyro axis is flipped, and the refusal names the first flipped axis."""
    rows = inav_rows(flip=tuple(flip), seconds=2.0, amp=amp, phase=phase)
    if not flip:
        _, meta = _section(INAV_NAMES, rows, motorOutput=[1150, 1850], **INAV)
        assert "INAV gyro signs checked" in " ".join(meta["notes"])
        return
    with pytest.raises(LogFormatError, match=rf"gyro {'xyz'[min(flip)]} disagrees in sign"):
        _section(INAV_NAMES, rows, motorOutput=[1150, 1850], **INAV)


def test_inav_accelerometer_upside_down_is_refused() -> None:
    rows = [(*r[:4], r[4], r[5], -r[6], *r[7:]) for r in inav_rows(seconds=0.5)]
    with pytest.raises(LogFormatError, match=r"accSmooth\[2\] reads -0\.\d\d g over the log"):
        _section(INAV_NAMES, rows, motorOutput=[1150, 1850], **INAV)


def test_inav_without_attitude_reads_with_a_warning_naming_the_setting() -> None:
    keep = [i for i, n in enumerate(INAV_NAMES) if not n.startswith("attitude")]
    rows = [tuple(r[i] for i in keep) for r in inav_rows(seconds=0.5)]
    with pytest.warns(UserWarning, match=r"no attitude\[\] logged.*`blackbox ATTI`"):
        series, meta = _section([INAV_NAMES[i] for i in keep], rows, motorOutput=[1150, 1850], **INAV)
    assert "gyro" in series and "INAV gyro signs not checked (no attitude[] in the log)" in " ".join(meta["notes"])


def test_an_inav_header_on_real_blackbox_bytes_reads_the_same_frames(bbl: dict[str, Path], tmp_path: Path) -> None:
    """INAV's blackbox.c writes the Cleanflight format (Data version 2, the same predictors and
    encodings) and orangebox decodes from the header alone, with no firmware branch: the real
    Betaflight bytes relabelled INAV decode to the same flight, gyro signs unchecked (no
    attitude[] in a Betaflight 3.1 log)."""
    raw = bbl["example_smooth_tune"].read_bytes()[:300_000]
    bf, inav = tmp_path / "bf.bbl", tmp_path / "LOG00001.TXT"
    bf.write_bytes(raw)
    inav.write_bytes(raw.replace(b"Firmware revision:Betaflight 3.1.5", b"Firmware revision:INAV 1.7.0", 1))
    with pytest.warns(UserWarning, match="cut or corrupt"):
        (a,) = read(bf)
    with pytest.warns(UserWarning, match="cut or corrupt"), pytest.warns(UserWarning, match=r"no attitude\[\] logged"):
        (b,) = read(inav)
    assert b.meta["header"]["Firmware revision"].startswith("INAV 1.7.0")
    assert "blackbox_rate_denom" in b.meta["rate_hint"] and "blackbox_sample_rate" in a.meta["rate_hint"]
    np.testing.assert_array_equal(b.t, a.t)
    np.testing.assert_array_equal(b.gyro, a.gyro)
    np.testing.assert_array_equal(b.acc, a.acc)
    np.testing.assert_array_equal(b.cmd, a.cmd)


def test_not_a_blackbox_log(tmp_path: Path) -> None:
    p = tmp_path / "x.bbl"
    p.write_bytes(b"H Product:Blackbox flight data recorder by Nicholas Sherlock\n" + bytes(64))
    with pytest.raises(LogFormatError, match="no flight data in 1 log section"), pytest.warns(UserWarning):
        read(p)


def test_delay_method_end_to_end_on_a_fixture_window(bbl: dict[str, Path], tmp_path: Path) -> None:
    """`rotorid identify --method delay` on the hover of the smooth-tune flight with the stated
    vehicle: it runs through, and its thrust curve agrees with the log's own hover (the motor
    commands at zero world acceleration, the method's Fig. 6 check)."""
    veh = tmp_path / "cs110.toml"
    veh.write_text(CS110)
    out = tmp_path / "run"
    res = CliRunner().invoke(
        app,
        [
            *("identify", f"{bbl['example_smooth_tune']}@35:70", "--method", "delay"),
            *("--vehicle", str(veh), "--exponents", "1,2", "--out", str(out)),
        ],
    )
    assert res.exit_code == 0, res.output
    params = json.loads((out / "params.json").read_text())["params"]
    assert 0.01 < params["tm"]["value"] < 0.1  # a 1105-size motor with a 2.5" prop
    assert params["hover_cmd"]["value"] == pytest.approx(0.26, abs=0.01)


def test_a_frame_ending_in_a_tag8_8svb_field_is_refused_not_decoded_for_ever(
    bbl: dict[str, Path], tmp_path: Path
) -> None:
    """orangebox counts a tag8_8svb group one field short at the frame's end, so a frame whose
    last field has that encoding never finishes decoding (a fuzzed header found it). The
    header check refuses the section instead; the read runs in a child process so that a
    regression fails on its timeout rather than hanging the suite."""
    import subprocess
    import sys

    data = bbl["better_tune"].read_bytes()
    line = next(ln for ln in data[:20000].split(b"\n") if ln.startswith(b"H Field P encoding:"))
    assert line.endswith(b",0")
    bad = tmp_path / "tag8.BBL"
    bad.write_bytes(data.replace(line, line[:-1] + b"6", 1))
    code = "import sys\nfrom rotorid.io import read\ntry:\n    read(sys.argv[1])\nexcept Exception as e:\n    print(type(e).__name__, e)"
    out = subprocess.run([sys.executable, "-c", code, str(bad)], capture_output=True, text=True, timeout=120)
    assert out.stdout.startswith("LogFormatError"), out.stdout + out.stderr
    assert "P frame field 'motor[3]' is tag8_8svb-encoded" in out.stdout
