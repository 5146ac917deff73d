"""Where the compiled step (`rotorid.methods.online.kernel`) keeps its state, apart from the
kernel so that the estimator reads it without loading numba.

The state lives in float64 arrays updated in place (flags and counts as 0.0/1.0 and floats;
NaN marks "none yet"), laid out by the index constants below:
- `st`: the estimator's state (`ST_*`), the first `TRACE` entries what `run` records per sample;
- `mot` (5, M): per rotor the last sample's thrust, its trapezoidal integral since the last
  block's mean, the last block's mean thrust and the current block's sums of both;
- `cfg`: the settings and constants (`CFG_*`), `mix` (6, M) the mixer;
- `out`: `OnlineEstimator.state`'s fields (`OUT_*`); a row of `rows`: the RLS rows (`ROW_*`).
"""

from __future__ import annotations

# st: the state (W..EN first: recorded per sample by `run` with the trace's other columns)
ST_W, ST_P, ST_AL, ST_ALR, ST_ACT, ST_EN = 0, 3, 6, 9, 12, 15
ST_TEN, ST_AZ, ST_TH1, ST_S1, ST_TH2, ST_S2, ST_CHI1, ST_CHI2 = 16, 17, 18, 24, 60, 62, 65, 67
ST_T, ST_TRAW, ST_TEMIT, ST_BN, ST_BT, ST_BGA, ST_WL, ST_TP = 69, 70, 71, 72, 73, 74, 80, 86
ST_PF, ST_PA, ST_PG, ST_LPF, ST_HASLPF, ST_GAIN, ST_NROWS, ST_SIZE = 87, 90, 93, 96, 126, 127, 133, 134
# mot rows
MOT_FL, MOT_CF, MOT_FP, MOT_BF, MOT_BC = 0, 1, 2, 3, 4
# cfg
CFG_GND2, CFG_CG, CFG_QO, CFG_NS, CFG_JMIN, CFG_M2, CFG_F2, CFG_EIV = 0, 1, 2, 3, 4, 7, 8, 9
CFG_BZ, CFG_COMZ, CFG_IMU, CFG_KF, CFG_LPF, CFG_TAU_EN, CFG_AZ_ALLOW, CFG_LPF_TAU = 10, 11, 12, 14, 15, 16, 17, 18
CFG_HOLD, CFG_PER, CFG_MODEL, CFG_MTH, CFG_MS, CFG_MSC, CFG_TWO, CFG_NZ, CFG_SIZE = 19, 20, 21, 22, 28, 64, 65, 66, 72
# out: t, enabled, ω̂ (3), its std (3), α̂ (3), θ1 (5), its std (5), mass, its std, imu_z, its std
OUT_T, OUT_EN, OUT_W, OUT_WSTD, OUT_AL, OUT_TH1, OUT_SD, OUT_M, OUT_IMUZ, OUT_SIZE = 0, 1, 2, 5, 8, 11, 16, 21, 23, 25
# trace (per sample in `run`): st[:16], θ1 (6), diag Σ_θ1 (6), θ2 (2), Σ_θ2 (3), the two a-posteriori scales
TR_TH1, TR_S1D, TR_TH2, TRACE = 16, 22, 28, 35
# a row: H1 (3x6), y1, r1, H2 (3x2), y2, r2, moved (3 rows x 3 MOI columns), Ĵ, KF gain and model (6), t
ROW_H1, ROW_Y1, ROW_R1, ROW_H2, ROW_Y2, ROW_R2, ROW_MOVED, ROW_J, ROW_KF, ROW_T = 0, 18, 21, 24, 30, 33, 34, 43, 46, 52
ROW_SIZE = 53
