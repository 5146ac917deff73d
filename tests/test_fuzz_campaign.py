"""The fuzz campaign's hang rule (benchmarks/fuzz.py, issue 16): a hang the wall-clock limit
called with less CPU than the time limit (the worker never ran: a stopped campaign, a stalled
machine) is read again in a fresh worker; a hang on CPU time counts at once."""

from __future__ import annotations

import os
import signal

from support import fuzzing
from support.bench import load

fz = load("fuzz", "fuzz_campaign")

CSV = b"t,acc_x,acc_y,acc_z\n0.0,0,0,9.81\n0.001,0,0,9.81\n"


def test_a_stopped_worker_is_a_wall_clock_hang_and_a_second_reading_is_not() -> None:
    w = fuzzing.Worker(timeout=0.05)
    try:
        os.kill(w.proc.pid, signal.SIGSTOP)  # as a SIGSTOP of the campaign's process group does
        w.submit(CSV, ".csv")
        kind, detail = w.collect()
    finally:
        w.close()
    assert kind == fuzzing.HANG, detail
    assert fz.wall_hang(kind, detail, 0.05)
    again, detail = fz.read_once(CSV, ".csv", (), 5.0)
    assert again in (fuzzing.OK, fuzzing.ROTORID), detail


def test_a_hang_on_cpu_time_counts_at_once() -> None:
    assert not fz.wall_hang(fuzzing.HANG, "no answer after 5.01 s of CPU (5.3 s)", 5.0)
    assert fz.wall_hang(fuzzing.HANG, "no answer after 0 s of CPU (220 s)", 5.0)
    assert not fz.wall_hang(fuzzing.CRASH, "no answer after 0 s of CPU (220 s)", 5.0)
