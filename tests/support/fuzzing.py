"""Mutation fuzzing of the log readers (issue 16): seeds, mutations, an isolated worker and
an oracle. Used by tests/test_fuzz_readers.py (hypothesis draws the mutations, fixed budget)
and benchmarks/fuzz.py (a seeded loop of >= 10^6 inputs per reader).

- `seeds(data_dir)`: small valid inputs per reader (format), cut from every fixture in
  shared/data (its README) plus ones rotorid's writers make (multi-event Crazyflie, ULog,
  DataFlash, CSV, Parquet), a few KiB to tens of KiB each so that an input costs milliseconds.
- `Op` / `apply_ops`: bit flips, byte and field overwrites (absurd length values),
  truncation, duplicated and removed chunks, a valid header followed by noise, a text field
  replaced by an absurd number, and a CRC fix-up so Crazyflie mutants get past the checksum.
- `Worker`: runs `rotorid.io.read` (and `rotorid info`'s summary) on one input in a forked
  process with an address-space cap (RLIMIT_AS: the process's own size + `MEM_SLACK` +
  `guard.alloc_bound(len(input))`) and a time limit; classifies the outcome. The process
  reads input after input (inputs go to tmpfs) and is replaced after a hang or a death.
  `Pool`: several workers at once.
- `implausible(flights)`: an independent statement of the physical limits a returned
  Flight must respect.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import resource
import struct
import tempfile
import time
import traceback
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from support.helpers_cf import CF_TYPE, log_bytes

#: Outcome kinds. "ok" and "rotorid" are the only acceptable ones.
OK, ROTORID, CRASH, HANG, ALLOC, IMPLAUSIBLE = "ok", "rotorid", "crash", "hang", "alloc", "implausible"
#: Address space a worker may add on top of its own size and the guard's bound (threads'
#: stacks and malloc arenas reserve address space without using memory).
MEM_SLACK = 512 << 20
KINDS = ("flip", "byte", "field", "truncate", "dup", "remove", "noise", "token", "fixcrc")
#: Values an "absurd length field" overwrite writes (as 1, 2, 4 or 8 little-endian bytes).
ABSURD = (0, 1, 0x7F, 0x80, 0xFF, 0xFFFF, 0x7FFF_FFFF, 0xFFFF_FFFF, 1 << 62, (1 << 64) - 1, 3, 0x1000)
#: Texts a "token" overwrite puts in place of a field of a text format (a CSV cell, a
#: Betaflight header value): a byte-level mutation of text mostly only breaks its encoding.
ABSURD_TEXT = (b"nan", b"inf", b"-inf", b"1e308", b"-1e308", b"0", b"", b"1e-320", b"9" * 30, b"-1", b"x", b"1,2")
#: Bytes that end a text field.
SEPARATORS = tuple(bytes([c]) for c in b",:\n\r\0 ")


@dataclass(frozen=True)
class Seed:
    name: str
    reader: str  # the reader it exercises ("crazyflie", "ulog", "table", or a fixture's folder)
    data: bytes
    suffix: str
    options: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Op:
    """One mutation: `kind` (KINDS), positions `a`, `b` as fractions of the input length
    (`head` puts `a` in the first 1 KiB, where headers are), and an integer `v`."""

    kind: str
    a: float
    b: float
    v: int
    head: bool = False


def _pos(data: bytes | bytearray, frac: float, head: bool) -> int:
    span = min(len(data), 1024) if head else len(data)
    return min(int(frac * span), max(len(data) - 1, 0))


def apply_ops(data: bytes, ops: list[Op]) -> bytes:
    """The mutant of `data` after `ops`, in order (deterministic)."""
    buf = bytearray(data)
    for op in ops:
        if not buf:
            break
        i = _pos(buf, op.a, op.head)
        n = 1 + op.v % 64
        if op.kind == "flip":
            buf[i] ^= 1 << (op.v % 8)
        elif op.kind == "byte":
            buf[i] = op.v % 256
        elif op.kind == "field":
            width = (1, 2, 4, 8)[op.v % 4]
            value = ABSURD[(op.v // 4) % len(ABSURD)] % (1 << (8 * width))
            buf[i : i + width] = value.to_bytes(width, "little")
        elif op.kind == "truncate":
            del buf[i:]
        elif op.kind == "dup":
            j = _pos(buf, op.b, False)
            buf[j:j] = buf[i : i + n * 16]
        elif op.kind == "remove":
            del buf[i : i + n * 16]
        elif op.kind == "noise":
            del buf[i:]
            buf += random.Random(op.v).randbytes(n * 64)
        elif op.kind == "token":
            a = max(buf.rfind(c, 0, i) for c in SEPARATORS) + 1
            b = min((j for c in SEPARATORS if (j := buf.find(c, i)) >= 0), default=len(buf))
            buf[a:b] = ABSURD_TEXT[op.v % len(ABSURD_TEXT)]
        elif op.kind == "fixcrc" and len(buf) > 4:
            buf[-4:] = struct.pack("<I", zlib.crc32(bytes(buf[:-4])))
    return bytes(buf)


def random_ops(rng: random.Random, max_ops: int = 4) -> list[Op]:
    """A random mutation sequence (the benchmark's loop; hypothesis draws its own)."""
    ops = [
        Op(rng.choice(KINDS[:-1]), rng.random(), rng.random(), rng.getrandbits(16), rng.random() < 0.5)
        for _ in range(rng.randint(1, max_ops))
    ]
    if rng.random() < 0.5:
        ops.append(Op("fixcrc", 0.0, 0.0, 0))
    return ops


# -- seeds -------------------------------------------------------------------------------------
def _cf_prefix(path: Path, n_events: int) -> bytes:
    """Header and the first `n_events` events of a real Crazyflie log, with a fresh CRC."""
    from rotorid.io.crazyflie import parse_header

    buf = path.read_bytes()
    version, types, off = parse_header(buf, path)
    size = 2 + (4 if version == 1 else 8) + max(t.dtype.itemsize for t in types.values())
    body = buf[: off + n_events * size]
    return body + struct.pack("<I", zlib.crc32(body))


def _cf_multi() -> bytes:
    """A small Crazyflie log with two event types at different rates (the align path)."""
    slow = (7, "slow", [("motor.m1", "H"), ("motor.m2", "H"), ("motor.m3", "H"), ("motor.m4", "H")])
    events = []
    for k in range(120):
        events.append((0, 1_000_000 + 1000 * k, [0.0, 0.0, 1.0, 0.1, 0.2, 0.3, 30000, 30000, 30000, 30000]))
        if k % 4 == 0:
            events.append((7, 1_000_000 + 1000 * k + 1, [20000, 20000, 20000, 20000]))
    return log_bytes([CF_TYPE, slow], events)


def _ulog_prefix(path: Path, data_bytes: int) -> bytes:
    """A real ULog cut `data_bytes` after its first data message (definitions kept whole)."""
    buf = path.read_bytes()
    off = 16
    while off + 3 <= len(buf):
        size, kind = struct.unpack_from("<HB", buf, off)
        if kind == ord("D"):
            return buf[: off + data_bytes]
        off += 3 + size
    return buf


def _small_flight(n: int = 150) -> Any:
    from rotorid.flight import Flight

    t = 5.0 + np.arange(n) / 250.0
    s = np.sin(2 * np.pi * 3 * t)[:, None]
    return Flight(
        t=t,
        acc=np.hstack([0.1 * s, -0.2 * s, 9.8 + s]),
        gyro=np.hstack([s, -s, 0.5 * s]),
        cmd=0.5 + 0.1 * np.hstack([s, -s, s, -s]),
        rotor_speed=1500.0 + 100.0 * np.hstack([s, -s, s, -s]),
        quat=np.tile([1.0, 0.0, 0.0, 0.0], (n, 1)),
        pos=np.hstack([s, s, 1.0 + s]),
        vel=np.hstack([s, -s, s]),
        landed=np.zeros(n, dtype=bool),
        meta={"source": "seed", "units": {"cmd": "normalized"}},
    )


def _excited_flight(n: int = 1000, rate: float = 250.0) -> Any:
    """A synthetic 4 s hover with thrust pumping and roll/pitch/yaw doublets (commands ahead of
    the response by a first-order lag): long and excited enough that the methods get past their
    first refusals, so the pipeline stage's mutants reach their numerics."""
    from rotorid.flight import Flight

    t = 10.0 + np.arange(n) / rate
    k = np.arange(n)
    pump = 0.08 * np.sign(np.sin(2 * np.pi * 1.3 * (t - t[0])))
    dbl = 0.05 * np.sign(np.sin(2 * np.pi * np.array([[2.1], [1.7], [0.9]]) * (t - t[0]))).T
    mix = np.array([[-1, 1, 1], [1, -1, 1], [1, 1, -1], [-1, -1, -1]], dtype=float)  # roll, pitch, yaw per motor
    cmd = 0.5 + pump[:, None] + dbl @ mix.T
    lag = np.exp(-1 / (rate * 0.03))
    u = cmd.copy()
    for i in range(1, n):  # a first-order motor, once per seed
        u[i] = lag * u[i - 1] + (1 - lag) * cmd[i]
    rng = np.random.default_rng(0)
    acc = np.column_stack([0.05 * rng.standard_normal(n), 0.05 * rng.standard_normal(n), 19.6 * u.mean(axis=1)])
    gyro = -np.cumsum((u - u.mean(axis=1, keepdims=True)) @ mix, axis=0) / rate * 4 + 0.01 * rng.standard_normal((n, 3))
    return Flight(
        t=t,
        acc=acc + 0.05 * rng.standard_normal((n, 3)),
        gyro=gyro,
        cmd=cmd,
        rotor_speed=2500.0 * np.sqrt(u),
        quat=np.tile([1.0, 0.0, 0.0, 0.0], (n, 1)),
        landed=k < 0,
        meta={"source": "seed", "units": {"cmd": "normalized"}},
    )


def _bbl_prefix(path: Path, frame_bytes: int) -> bytes:
    """A real blackbox log's header ('H ' lines) and its first `frame_bytes` bytes of frames."""
    buf = path.read_bytes()
    end = 0
    while buf.startswith(b"H ", end) and b"\n" in buf[end:]:
        end = buf.index(b"\n", end) + 1
    return buf[: end + frame_bytes]


#: Reader (format) name -> the shared/data folder of its real fixtures.
FOLDERS = {"crazyflie": "crazyflie", "ulog": "px4", "dataflash": "ardupilot", "blackbox": "betaflight"}


def seeds(data_dir: Path, scratch: Path) -> list[Seed]:
    """Small valid inputs per reader (format): cut from every fixture in `data_dir` and
    written by rotorid's own writers. Small (a few to tens of KiB) so that an input costs
    milliseconds, yet every seed but the DataFlash fixture's header cut reads cleanly (the
    mutants reach the decoding and plausibility code, not only the first check)."""
    from rotorid.io import dataflash, table, ulog

    out: list[Seed] = []
    for p in sorted((data_dir / "crazyflie").glob("log*")):
        out.append(Seed(f"cf-{p.name}", "crazyflie", _cf_prefix(p, 300), ""))
    out.append(Seed("cf-multi-event", "crazyflie", _cf_multi(), ""))
    for p in sorted((data_dir / "px4").glob("*.ulg")):
        out.append(Seed(f"ulog-{p.stem}", "ulog", _ulog_prefix(p, 20_000), ".ulg"))
    flight, short, excited = _small_flight(), _small_flight(60), _excited_flight()
    written = [
        ("ulog-rotorid", ulog.write(short, scratch / "seed.ulg"), ".ulg"),
        ("ulog-pwm", ulog.write(flight, scratch / "pwm.ulg", pwm=(1000, 2000)), ".ulg"),
        ("dataflash-rotorid", dataflash.write(short, scratch / "seed.bin"), ".bin"),
        ("dataflash-rcou-10hz", dataflash.write(flight, scratch / "rcou.bin", rates={"RCOU": 10.0}), ".bin"),
        *((f"table-{fmt}", table.write(flight, scratch / f"seed.{fmt}"), f".{fmt}") for fmt in ("csv", "parquet")),
        ("ulog-excited", ulog.write(excited, scratch / "excited.ulg"), ".ulg"),
        ("dataflash-excited", dataflash.write(excited, scratch / "excited.bin"), ".bin"),
        ("table-excited", table.write(excited, scratch / "excited.csv"), ".csv"),
    ]
    out += [Seed(name, name.partition("-")[0], p.read_bytes(), suffix) for name, p, suffix in written]
    for p in sorted((data_dir / "ardupilot").glob("*.bin")):  # FMT/FMTU/PARM of a real log (no IMU yet)
        out.append(Seed(f"dataflash-{p.stem}", "dataflash", p.read_bytes()[:32_768], p.suffix))
    for p in sorted((data_dir / "betaflight").glob("*")):
        head = _bbl_prefix(p, 2000)
        out.append(Seed(f"blackbox-{p.stem}", "blackbox", head, p.suffix))
        # INAV writes the same format: the same bytes under INAV's firmware line reach its branch
        inav = head.replace(b"Firmware revision:Betaflight", b"Firmware revision:INAV", 1)
        out.append(Seed(f"blackbox-inav-{p.stem}", "blackbox", inav, ".TXT"))
    return out


# -- oracle -----------------------------------------------------------------------------------
def implausible(flights: list[Any]) -> str | None:
    """What is physically impossible in the returned flights (None if nothing): the limits of
    issue 16 stated independently of rotorid.io.guard."""
    g = 9.80665
    for f in flights:
        if not (np.all(np.isfinite(f.t)) and np.all(np.diff(f.t) > 0)):
            return "time not finite/increasing"
        if abs(f.t[0]) > 1e6 or abs(f.t[-1]) > 1e6:
            return f"time {f.t[-1]:g} s"
        if len(f.t) > 1 and np.max(np.diff(f.t)) > 0.5 + 1e-9:
            return f"gap {np.max(np.diff(f.t)):g} s inside a flight"
        limits = {"acc": 16 * g, "gyro": 35.0, "rotor_speed": 1e4, "vel": 200.0, "pos": 1e5}
        for ch, lim in limits.items():
            v = getattr(f, ch)
            if v is not None and not np.all(np.abs(v) <= lim * (1 + 1e-9)):
                return f"{ch} beyond {lim:g}"
        unit = str(f.meta.get("units", {}).get("cmd", ""))
        if f.cmd is not None and unit.startswith("normalized") and not np.all((f.cmd >= -1e-9) & (f.cmd <= 1 + 1e-9)):
            return "normalized cmd outside [0, 1]"
        if f.quat is not None and not np.all(np.abs(np.linalg.norm(f.quat, axis=1) - 1) <= 0.05):
            return "quaternion not unit"
        for ch, r in f.meta.get("rates", {}).items():
            if ch in f.channels and ch != "landed" and not 1.0 <= float(r) <= 1e5:
                return f"{ch} rate {r:g} Hz"
    return None


# -- the isolated worker ----------------------------------------------------------------------
def _vm_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def _alloc_bound(size: int) -> int:
    try:
        from rotorid.io.guard import alloc_bound
    except ImportError:  # a tree without the guard (to reproduce the failures it fixes)
        return 64 * size + (64 << 20)
    return alloc_bound(size)


def _classify(path: Path, options: dict[str, Any]) -> tuple[str, str]:
    """Read `path` and summarize each flight as `rotorid info` does (excitation, gaps); a
    RuntimeWarning (overflow, invalid cast) counts as a crash: the reader must decide what
    such a value means, not let numpy shrug."""
    from rotorid import excitation
    from rotorid.errors import RotoridError
    from rotorid.io import read

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            warnings.simplefilter("error", RuntimeWarning)
            flights = read(path, **options)
            for f in flights:
                excitation.measure(f)
                excitation.gaps(f)
    except RotoridError as e:
        return (ALLOC if "asks for more memory than" in str(e) else ROTORID), str(e)[:200]
    except MemoryError:
        return ALLOC, "MemoryError"
    except Exception as e:  # the failures the fuzzer hunts
        frames = traceback.extract_tb(e.__traceback__)
        ours = [f for f in frames if "rotorid" in Path(f.filename).parts] or frames
        where = f"{Path(ours[-1].filename).name}:{ours[-1].lineno}"
        if ours[-1] is not frames[-1]:
            where += f" > {Path(frames[-1].filename).name}:{frames[-1].lineno}"
        return CRASH, f"{type(e).__name__} at {where}: {str(e)[:120]}"
    why = implausible(flights)
    return (IMPLAUSIBLE, why) if why else (OK, "")


#: Methods the pipeline stage runs, through `rotorid identify`'s checks and on their own.
METHODS = ("delay", "tls", "online", "freq")
#: Presets tried for a seed in the pipeline stage, in order: the first that reads the unmutated
#: seed judges and identifies its mutants (`pipeline_vehicle`).
VEHICLES = ("crazyflie", "x500-px4", "quad-x", "x500-gazebo")
#: Samples of each flight the methods are given on their own (`_methods`): their cost is bounded by
#: the input, not by what a mutated length field or time stamp makes of it.
METHOD_SAMPLES = 2000


def pipeline_vehicle(seed: Seed, scratch: Path) -> str:
    """The preset (`VEHICLES`) the pipeline stage reads `seed` and its mutants with: the first
    under which the seed reads, else the first."""
    from rotorid.errors import RotoridError
    from rotorid.io import LogSpec, load
    from rotorid.vehicle import Vehicle

    path = scratch / f"seed{seed.suffix}"
    path.write_bytes(seed.data)
    for name in VEHICLES:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                load(LogSpec(path), vehicle=Vehicle.preset(name), **dict(seed.options))
        except RotoridError:
            continue
        return name
    return VEHICLES[0]


def _where(e: BaseException) -> str:
    """`Type at file:line` of an exception (rotorid's innermost frame, and the library's)."""
    frames = traceback.extract_tb(e.__traceback__)
    ours = [f for f in frames if "rotorid" in Path(f.filename).parts] or frames
    where = f"{Path(ours[-1].filename).name}:{ours[-1].lineno}"
    if ours[-1] is not frames[-1]:
        where += f" > {Path(frames[-1].filename).name}:{frames[-1].lineno}"
    return f"{type(e).__name__} at {where}: {str(e)[:120]}"


def _stage(name: str, fn: Any, done: list[str]) -> Any:
    """Run one stage of the pipeline; a `RotoridError` is an answer (None), anything else is
    raised as `_Crash` naming the stage. `done` collects the stages that returned."""
    from rotorid.errors import RotoridError

    try:
        out = fn()
    except RotoridError:
        return None
    except MemoryError:
        raise
    except Exception as e:
        raise _Crash(f"{name}: {_where(e)}") from e
    done.append(name)
    return out


class _Crash(Exception):
    """A stage of the pipeline ended in an exception that is not a `RotoridError`."""


def _methods(flights: list[Any], vehicle: Any, done: list[str]) -> None:
    """Each method's own `identify` on the flights as read (first `METHOD_SAMPLES` samples of
    each), without `rotorid identify`'s checks in front: what a Python caller gives them. Not tls:
    identify's tls gives it the whole decoded log unchanged (its numerics run before the refusal
    of commands that are not rotor speeds), so a second call would repeat the same work."""
    from rotorid.methods import delay, freq, online

    short = [
        f.window(f.t[0], f.t[min(len(f.t), METHOD_SAMPLES) - 1]) if len(f.t) > METHOD_SAMPLES else f for f in flights
    ]
    _stage("delay", lambda: delay.identify(short, vehicle, roll_pitch=short, yaw=short), done)
    known = vehicle
    if vehicle.thrust_coeffs is None or vehicle.k_tau is None:  # online takes them as known: hover at half command
        hover = vehicle.mass * 9.81 / (vehicle.n_rotors * 0.5 ** np.array(vehicle.thrust_exponents, dtype=float))
        known = vehicle.replace(thrust_coeffs=hover / len(vehicle.thrust_exponents), k_tau=0.01)
    _stage("online", lambda: online.identify(short[0], known), done)
    _stage("freq", lambda: freq.identify(short, vehicle), done)


def _pipeline(path: Path, options: dict[str, Any]) -> tuple[str, str]:
    """Read `path` as `rotorid identify --vehicle V` does, then run what `rotorid info` does after
    the read (`infoview.analyse`: flight spans, excitation, windows, facts; its tables rendered;
    `infoview.closing`), `rotorid identify`'s input checks and run of each method on the decoded
    log (`runs.Request` holding it), and each method on its own (`_methods`). OK (the reader
    decoded it) with the stages that returned in the detail; ROTORID when the reader refused it."""
    import io

    from rich.console import Console

    from rotorid import excitation, infoview, runs
    from rotorid.io import LogSpec, load
    from rotorid.registry import method as spec_of
    from rotorid.vehicle import Vehicle

    vehicle = Vehicle.preset(options.pop("vehicle", VEHICLES[0]))
    done: list[str] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            flights = _stage("read", lambda: load(LogSpec(path), vehicle=vehicle, **options), done)
            if flights is None:
                return ROTORID, "refused by the reader"
            limits = excitation.thresholds_for(vehicle)
            info = _stage("info", lambda: infoview.analyse(str(path), flights, vehicle, limits, runs.min_rates()), done)
            if info is not None:
                con = Console(file=io.StringIO(), width=100)
                _stage("info-print", lambda: [con.print(p) for p in info.parts], done)
                _stage("info-close", lambda: infoview.closing({str(path): info}, limits, vehicle, "v.toml", ()), done)
            for m in METHODS:
                req = runs.Request([str(path)], vehicle, decoded={path: flights})
                _stage(f"identify-{m}", lambda m=m, req=req: spec_of(m).load("run")(req), done)
            _methods(flights, vehicle, done)
    except _Crash as e:
        return CRASH, str(e)
    except MemoryError:
        return ALLOC, f"MemoryError after {', '.join(done)}"
    return OK, ",".join(done)


def _preload(stage: str = "read") -> None:
    """Import what reading and summarizing need (scipy, pyulog, ...): done in the parent,
    before forking, so neither a worker's time limit nor its memory cap pays for imports."""
    import importlib

    from rotorid.io import formats

    for fmt in formats().values():
        fmt.reader()  # declared lazily: import each reader's module now
    for lib in ("rotorid.excitation", "pyarrow.parquet", "pandas", "pyulog", "scipy.signal"):
        importlib.import_module(lib)
    if stage == "pipeline":
        for lib in ("rotorid.infoview", "rotorid.runs", "rich.console", "rich.table", "threadpoolctl"):
            importlib.import_module(lib)
        for m in METHODS:
            importlib.import_module(f"rotorid.methods.{m}.pipeline")


def _serve(conn: Any, parent_end: Any, folder: str, stage: str = "read") -> None:
    parent_end.close()  # the fork's copy of the parent's end: else closing that never ends recv
    _preload(stage)
    if stage == "pipeline":  # one BLAS thread: the workers run side by side
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    classify = _pipeline if stage == "pipeline" else _classify
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    base = _vm_bytes()
    conn.send("ready")
    n = 0
    while True:
        try:
            data, suffix, options = conn.recv()
        except (EOFError, ConnectionError):  # the parent closed its end or died
            return
        n += 1
        path = Path(folder) / f"in{n % 2}{suffix}"
        path.write_bytes(data)
        cap = base + MEM_SLACK + _alloc_bound(len(data))
        resource.setrlimit(resource.RLIMIT_AS, (min(cap, hard) if hard != resource.RLIM_INFINITY else cap, hard))
        try:
            result = classify(path, dict(options))
        finally:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        conn.send(result)


#: A worker is hung after `timeout` CPU seconds on one input, or this many times `timeout` of
#: wall time whatever its CPU.
WALL_FACTOR = 20
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
#: Where workers write their inputs: memory (tmpfs) when the machine has it.
SCRATCH = "/dev/shm" if Path("/dev/shm").is_dir() else None


class Worker:
    """One forked reader process at a time; `run` returns (kind, detail) for an input and
    replaces the process after a hang or a death. `submit` / `collect` split `run` so that
    several workers read at once (`Pool`); the time limit counts from `submit`."""

    def __init__(self, timeout: float = 5.0, stage: str = "read") -> None:
        self.timeout = timeout
        self.stage = stage
        self.tmp = tempfile.TemporaryDirectory(prefix="rotorid-fuzz-", dir=SCRATCH)
        self.proc: Any = None
        self.sent = 0.0
        self.cpu0 = 0.0
        self._start()

    def _start(self) -> None:
        _preload(self.stage)
        ctx = mp.get_context("fork")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, self.conn, self.tmp.name, self.stage), daemon=True)
        self.proc.start()
        child.close()
        if not self.conn.poll(300.0) or self.conn.recv() != "ready":
            raise RuntimeError("the fuzz worker did not start")

    def _restart(self) -> None:
        self.proc.kill()
        self.proc.join()
        self.conn.close()
        self._start()

    def cpu(self) -> float:
        """CPU seconds the worker process has used (user + system, from /proc)."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            return float("inf")
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS

    def submit(self, data: bytes, suffix: str, options: tuple[tuple[str, Any], ...] = ()) -> None:
        self.conn.send((data, suffix, options))
        self.sent = time.monotonic()
        self.cpu0 = self.cpu()

    def collect(self) -> tuple[str, str]:
        """The outcome of the input `submit` sent: waits until the worker has spent `timeout`
        CPU seconds on it (a hang), so that a worker starved of CPU on a busy machine (a
        niced campaign) is not called hung; at most `WALL_FACTOR` × `timeout` of wall time."""
        limit = self.sent + WALL_FACTOR * self.timeout
        wait = self.sent + self.timeout
        while not self.conn.poll(max(wait - time.monotonic(), 0.0)):
            used = self.cpu() - self.cpu0
            if used >= self.timeout or time.monotonic() >= limit:
                self._restart()
                return HANG, f"no answer after {used:.3g} s of CPU ({time.monotonic() - self.sent:.3g} s)"
            wait = min(time.monotonic() + self.timeout - used, limit)
        try:
            return self.conn.recv()
        except EOFError:
            code = self.proc.exitcode
            self._restart()
            return CRASH, f"worker died (exit code {code})"

    def run(self, data: bytes, suffix: str, options: tuple[tuple[str, Any], ...] = ()) -> tuple[str, str]:
        self.submit(data, suffix, options)
        return self.collect()

    def close(self) -> None:
        self.conn.close()
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.tmp.cleanup()


class Pool:
    """`n` workers reading inputs at once. `map(jobs)` runs (data, suffix, options) jobs and
    returns their outcomes in order; each job keeps its worker's time limit and memory cap."""

    def __init__(self, n: int = 2, timeout: float = 5.0, stage: str = "read") -> None:
        self.workers = [Worker(timeout, stage) for _ in range(max(n, 1))]

    def map(self, jobs: list[tuple[bytes, str, tuple[tuple[str, Any], ...]]]) -> list[tuple[str, str]]:
        from multiprocessing.connection import wait

        out: list[tuple[str, str]] = [("", "")] * len(jobs)
        todo = iter(enumerate(jobs))
        busy: dict[Any, tuple[Worker, int]] = {}
        for w in self.workers:
            if (nxt := next(todo, None)) is not None:
                w.submit(*nxt[1])
                busy[w.conn] = (w, nxt[0])
        while busy:
            soonest = min(w.sent + w.timeout for w, _ in busy.values())
            ready = wait(list(busy), timeout=max(soonest - time.monotonic(), 0.0)) or [
                c for c, (w, _) in busy.items() if time.monotonic() >= w.sent + w.timeout
            ]
            for conn in ready:
                w, i = busy.pop(conn)
                out[i] = w.collect()
                if (nxt := next(todo, None)) is not None:
                    w.submit(*nxt[1])
                    busy[w.conn] = (w, nxt[0])
        return out

    def close(self) -> None:
        for w in self.workers:
            w.close()
