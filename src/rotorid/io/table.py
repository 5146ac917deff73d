"""CSV and Parquet, the interchange format (README, 'Any other logger: CSV or Parquet').

One row per sample: `t` (s), `acc_x acc_y acc_z` (m/s², body FLU specific force),
`gyro_x ..` (rad/s), `gyro_dot_x ..` (rad/s²), `cmd_0 .. cmd_{M-1}` (motor commands),
`rpm_0 ..` (measured rotor speed, rad/s — the column name is historical, the unit is rad/s),
`qw qx qy qz` (body->world), `px py pz` (m, ENU), `vx vy vz` (m/s, ENU), `landed` (0/1),
`vbat` (battery voltage, V).
Any subset of the channel groups may be present, but a group is all-or-nothing.
"""

from __future__ import annotations

import collections
import difflib
import itertools
import json
import re
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from rotorid.errors import LogFormatError, RotoridError, quote
from rotorid.flight import FLAT, Flight
from rotorid.io import guard, register
from rotorid.util import atomic_write, nesting

PARQUET_MAGIC = b"PAR1"
#: Fixed-width channel groups: channel -> column names.
GROUPS: dict[str, tuple[str, ...]] = {
    "acc": ("acc_x", "acc_y", "acc_z"),
    "gyro": ("gyro_x", "gyro_y", "gyro_z"),
    "gyro_dot": ("gyro_dot_x", "gyro_dot_y", "gyro_dot_z"),
    "quat": ("qw", "qx", "qy", "qz"),
    "pos": ("px", "py", "pz"),
    "vel": ("vx", "vy", "vz"),
}
#: Per-motor groups: channel -> column prefix.
MOTOR_GROUPS: dict[str, str] = {"cmd": "cmd_", "rotor_speed": "rpm_"}
#: cmd_0, rpm_12: ASCII digits without a leading zero (campaign, table input 503531: "cmd_00" was taken
#: for motor 0, then looked up as cmd_0)
_MOTOR_COL = re.compile(r"^(cmd|rpm)_(0|[1-9][0-9]*)$")
#: More motor columns than any multirotor has (a higher index is a corrupt header).
MAX_MOTORS = 64
_META_KEY = b"rotorid.meta"
#: A stored channel rate above the rows' rate by more than this factor is a lie (timing jitter is less).
RATE_SLACK = 1.05
#: Deepest nesting of the stored meta kept (rotorid writes 3: meta, a table, a list).
META_DEPTH = 8
_TIME_NAMES = ("time", "timestamp", "ts", "time_s", "t_s", "seconds")


def columns(flight: Flight) -> list[str]:
    """The column names `write` produces for `flight`, in order."""
    cols = ["t"]
    for ch in flight.channels:
        if ch in GROUPS:
            cols += GROUPS[ch]
        elif ch in MOTOR_GROUPS:
            cols += [f"{MOTOR_GROUPS[ch]}{i}" for i in range(getattr(flight, ch).shape[1])]
        elif ch in FLAT:
            cols.append(ch)
    return cols


def to_arrays(flight: Flight) -> dict[str, np.ndarray]:
    """Flight -> {column name: 1-D array} in the interchange schema."""
    out: dict[str, np.ndarray] = {"t": flight.t}
    for ch in flight.channels:
        v = getattr(flight, ch)
        if ch in FLAT:
            out[ch] = v.astype(np.int8) if ch == "landed" else v
            continue
        names = GROUPS[ch] if ch in GROUPS else [f"{MOTOR_GROUPS[ch]}{i}" for i in range(v.shape[1])]
        out.update({n: v[:, j] for j, n in enumerate(names)})
    return out


def _valid_names(present: list[str]) -> list[str]:
    """Every name a reader accepts, for suggestions (motor columns up to the count present + 1)."""
    n = 1 + max((int(m.group(2)) for c in present if (m := _MOTOR_COL.match(c))), default=7)
    n = min(n, MAX_MOTORS)
    motors = [f"{p}{i}" for p in MOTOR_GROUPS.values() for i in range(n + 1)]
    return ["t", *FLAT, *(c for g in GROUPS.values() for c in g), *motors]


def from_arrays(cols: dict[str, np.ndarray], source: str, meta: dict[str, Any] | None = None) -> Flight:
    """{column name: 1-D array} -> Flight, checking the schema. The columns of the channel groups
    are taken out of `cols` as they are stacked, so that each is freed once its channel is built."""
    names = list(cols)
    for c in names:
        m = _MOTOR_COL.match(c)
        if m and int(m.group(2)) >= MAX_MOTORS:
            raise LogFormatError(
                f"{source}: column {quote(c)} numbers motor {quote(m.group(2), 20)}; rotorid reads at most "
                f"{MAX_MOTORS} motors (cmd_0..cmd_{MAX_MOTORS - 1}) — the header is corrupt"
            )
    valid = set(_valid_names(names))
    for c in names:
        if c not in valid and not _MOTOR_COL.match(c):
            close = (
                ["t"]
                if c.strip().lower() in _TIME_NAMES
                else difflib.get_close_matches(c, sorted(valid), n=1, cutoff=0.6)
            )
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise LogFormatError(
                f"{source}: unknown column {quote(c)}; {hint}valid columns are t, acc_x.., gyro_x.., gyro_dot_x.., "
                "cmd_0.., rpm_0.., qw qx qy qz, px py pz, vx vy vz, landed, vbat (README, 'Any other logger: CSV or Parquet')"
            )
    if "t" not in cols:
        raise LogFormatError(f"{source}: no 't' column (time in seconds); add it or rename the time column to 't'")
    kw: dict[str, np.ndarray] = {}
    for ch, group in GROUPS.items():
        have = [c for c in group if c in cols]
        if not have:
            continue
        if len(have) != len(group):
            missing = [c for c in group if c not in cols]
            raise LogFormatError(
                f"{source}: channel '{ch}' needs columns {' '.join(group)}; missing {' '.join(missing)}"
            )
        kw[ch] = np.column_stack([_float(cols.pop(c), c, source) for c in group])
    for ch, prefix in MOTOR_GROUPS.items():
        idx = sorted(int(m.group(2)) for c in names if (m := _MOTOR_COL.match(c)) and c.startswith(prefix))
        if not idx:
            continue
        if idx != list(range(len(idx))):
            missing = sorted(set(range(max(idx) + 1)) - set(idx))
            raise LogFormatError(
                f"{source}: motor columns {prefix}* must be numbered 0..M-1 without holes; "
                f"missing {', '.join(f'{prefix}{i}' for i in missing)}"
            )
        kw[ch] = np.column_stack([_float(cols.pop(f"{prefix}{i}"), f"{prefix}{i}", source) for i in idx])
    if "landed" in cols:
        lv = _float(cols["landed"], "landed", source)
        bad = ~np.isin(lv, (0.0, 1.0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise LogFormatError(f"{source}: column 'landed' must be 0 or 1, got {lv[i]:g} in row {i}")
        kw["landed"] = lv.astype(bool)
    if "vbat" in cols:
        kw["vbat"] = _float(cols["vbat"], "vbat", source)
    t = _float(cols["t"], "t", source)
    m = {"source": source, **(meta or {})}
    m["source"] = source
    flight = Flight(t=t, meta=m, **kw)
    rate = flight.rate
    m.setdefault("rates", dict.fromkeys(flight.channels, rate))
    return flight


def _float(v: np.ndarray, name: str, source: str) -> np.ndarray:
    if np.asarray(v).dtype == bool and name != "landed":  # True/False is no measurement: it read as 1.0/0.0
        raise LogFormatError(f"{source}: column '{name}' holds true/false values, not numbers; check the file")
    try:
        return np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError):
        raise LogFormatError(f"{source}: column '{name}' holds non-numeric values") from None


def _read_csv(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    import pandas as pd

    # pandas 3 parses floats exactly by default; older versions need "round_trip"
    exact = {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}
    try:
        with guard.library(path, "pandas", what="CSV"):
            df = pd.read_csv(path, skipinitialspace=True, **exact)
    except LogFormatError as e:
        if isinstance(e.__context__, pd.errors.EmptyDataError):
            raise LogFormatError(f"{path}: the CSV file is empty (expected a header row starting with 't')") from None
        raise
    if len(df) == 0:
        raise LogFormatError(f"{path}: the CSV file has a header but no rows")
    return {str(c).strip(): df[c].to_numpy() for c in df.columns}, {}


#: Bytes a Parquet value costs while it becomes a checked Flight: Arrow's column, its numpy copy,
#: the float64 channel and the guard's differences hold it about 4 times (8 M rows of one constant
#: column, a 36 KB file, peaked 260 MB above the imports).
VALUE_BYTES = 4 * 8


def _read_parquet(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    import pyarrow.parquet as pq

    with guard.library(path, "pyarrow", what="Parquet"):
        pf = pq.ParquetFile(path)
        md = pf.metadata
        declared = sum(md.row_group(i).total_byte_size for i in range(md.num_row_groups))
        rows = float(md.num_rows) * max(md.num_columns, 1)  # from the footer, before any row is read
        guard.check_alloc(path, 2.0 * declared + VALUE_BYTES * rows, f"its {md.num_rows} rows")
        schema = pf.schema_arrow
        twice = sorted(quote(n) for n, k in collections.Counter(schema.names).items() if k > 1)
        if twice:
            raise LogFormatError(f"{path}: column(s) {', '.join(twice)} appear more than once; the file is corrupt")
        if md.num_rows == 0:
            raise LogFormatError(f"{path}: the Parquet file has no rows")
        cols = _row_groups(pf, schema)
    return cols, _stored_meta(schema.metadata)


def _row_groups(pf: Any, schema: Any) -> dict[str, np.ndarray]:
    """Each column of the Parquet file `pf` (of `schema`) as numpy, decoded a row group at a time:
    a float64 column (what rotorid writes) straight into an array of the whole length, any other
    joined at the end. pyarrow's table of the whole file and a joined copy of each column are
    never held beside the arrays (reading a log peaked at three copies of its columns)."""
    import pyarrow as pa

    names, n, at = schema.names, pf.metadata.num_rows, 0
    whole = {f.name: np.empty(n) for f in schema if f.type == pa.float64()}
    parts: dict[str, list[np.ndarray]] = {name: [] for name in names if name not in whole}
    for i in range(pf.metadata.num_row_groups):
        group = pf.read_row_group(i)
        for name, col in zip(names, group.columns, strict=True):
            if name in whole:
                whole[name][at : at + len(col)] = numpy_column(col)
            else:
                parts[name].append(numpy_column(col))
        at += group.num_rows
        del group
    return {name: whole[name] if name in whole else np.concatenate(parts[name]) for name in names}


def numpy_column(col: Any) -> np.ndarray:
    """A pyarrow column as numpy: a float64 one of one chunk without nulls (what rotorid writes)
    read in place from its buffer, since pyarrow's `to_numpy` imports pandas (~0.3 s of a
    command's start, for nothing); any other through `to_numpy`."""
    import pyarrow as pa

    if col.num_chunks == 1 and col.null_count == 0 and col.type == pa.float64():
        c = col.chunk(0)
        return np.frombuffer(c.buffers()[1], dtype=np.float64, count=len(c), offset=8 * c.offset)
    return col.to_numpy()


def _stored_meta(md: dict[bytes, bytes] | None) -> dict[str, Any]:
    """The flight meta a Parquet file stores (rotorid's writer), kept only where well formed:
    a JSON object whose `rates` are positive numbers by channel."""
    try:
        meta = json.loads((md or {}).get(_META_KEY, b"{}"))
    except (ValueError, RecursionError):
        return {}
    if not isinstance(meta, dict) or nesting(meta, META_DEPTH) > META_DEPTH:
        return {}
    rates = meta.get("rates")
    ok = isinstance(rates, dict) and all(isinstance(r, int | float) and 0 < r < np.inf for r in rates.values())
    if not ok:
        meta.pop("rates", None)
    for key in ("units", "topics"):
        if not isinstance(meta.get(key, {}), dict):
            meta.pop(key)
    return meta


@register("table", (".csv", ".parquet"), magic=PARQUET_MAGIC)
@guard.reader
def read(path: Path, allow_corrupt: bool = False, motor_input: str | None = None) -> list[Flight]:
    """A CSV or Parquet file in the interchange schema as one Flight (`allow_corrupt` is
    accepted for a uniform reader interface; a table is either readable or not). The
    commands' unit is the one the file declares (Parquet metadata), else the vehicle's
    `motor_input` hint when given (a CSV holds no metadata), so the guard bounds them."""
    path = Path(path)
    with open(path, "rb") as f:
        is_parquet = f.read(4) == PARQUET_MAGIC
    if is_parquet:
        cols, meta = _read_parquet(path)
        fmt = "parquet"
    else:
        cols, meta = _read_csv(path)
        fmt = "csv"
    meta = {**meta, "format": fmt, "original_format": meta.get("original_format", meta.get("format", fmt))}
    if motor_input and "cmd" not in meta.get("units", {}):
        meta["units"] = {**meta.get("units", {}), "cmd": motor_input}
    flight = from_arrays(cols, str(path), meta)
    rates = flight.meta.get("rates", {})
    lies = {c: r for c, r in rates.items() if r > RATE_SLACK * flight.rate}
    if lies:  # a channel is never logged faster than the rows that hold it
        listed = ", ".join(f"{quote(c)} {r:g} Hz" for c, r in list(lies.items())[:4])
        warnings.warn(
            f"{path}: the metadata claims rates ({listed}) above the rows' own {flight.rate:.1f} Hz; "
            f"using {flight.rate:.1f} Hz",
            stacklevel=2,
        )
        flight.meta["rates"] = {**rates, **dict.fromkeys(lies, flight.rate)}
    return [flight]


def _jsonable(meta: dict[str, Any]) -> bytes:
    return json.dumps(meta, default=lambda o: o.tolist() if isinstance(o, np.ndarray) else str(o)).encode()


def write(flight: Flight, path: str | Path) -> Path:
    """Write `flight` as CSV or Parquet (by the suffix of `path`), atomically.

    CSV values are written in the shortest form that parses back to the same float64
    (pyarrow's writer), so a CSV round trip is exact. CSV holds no metadata: writing a flight
    whose channels were logged slower than its rows warns that those rates are lost.
    Parquet also stores the flight's `meta` as JSON in the schema metadata.
    """
    return write_pieces([flight], path)


def write_pieces(pieces: Iterable[Flight], path: str | Path) -> Path:
    """`write` for a flight given as consecutive pieces (each with the flight's meta), each
    appended as it comes (a Parquet row group, CSV rows), so a long flight need not be held
    whole: the file reads back as `write` of the joined flight would."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise RotoridError(f"{path}: unknown table format '{suffix}'; use .csv or .parquet")
    it = iter(pieces)
    first = next(it, None)
    if first is None:
        raise RotoridError(f"{path}: no rows to write")
    if suffix == ".csv":
        _warn_rates(first, path)
    import pyarrow as pa

    def tables() -> Iterator[tuple[Flight, Any]]:
        for flight in itertools.chain([first], it):
            yield flight, pa.table(to_arrays(flight))

    if suffix == ".parquet":
        import pyarrow.parquet as pq

        def write_parquet(p: Path) -> None:
            writer = None
            try:
                for flight, table in tables():
                    table = table.replace_schema_metadata({_META_KEY: _jsonable(flight.meta)})
                    writer = writer or pq.ParquetWriter(p, table.schema)
                    writer.write_table(table)
            finally:
                if writer is not None:
                    writer.close()

        atomic_write(path, write_parquet)
        return path
    import pyarrow.csv as pc

    options = pc.WriteOptions(include_header=False, quoting_style="needed")

    def write_csv(p: Path) -> None:
        with open(p, "wb") as f:
            for i, (_, table) in enumerate(tables()):
                if i == 0:
                    f.write((",".join(table.column_names) + "\n").encode())  # a plain, unquoted header
                pc.write_csv(table, f, options)

    atomic_write(path, write_csv)
    return path


def _warn_rates(flight: Flight, path: Path) -> None:
    """Warn that a CSV loses the rates of channels logged slower than the rows."""
    slow = {c: r for c, r in flight.meta.get("rates", {}).items() if c in flight.channels and r < 0.9 * flight.rate}
    if slow:
        listed = ", ".join(f"{c} {r:.1f} Hz" for c, r in slow.items())
        warnings.warn(
            f"{path}: CSV keeps no metadata, so the original rates ({listed}; rows at {flight.rate:.1f} Hz) "
            "are lost and rate checks will see the row rate — use .parquet to keep them",
            stacklevel=4,  # the caller of `write` (from `write_pieces` itself: its caller's caller)
        )
