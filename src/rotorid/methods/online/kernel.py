"""The streaming estimator's per-sample step, compiled by numba (`OnlineEstimator` drives it):
block averaging and the step's mean wrench (`OnlineEstimator._push`'s docstring), the enable
condition, the KF on the angular rate with the correction law (Kwon et al. Alg. 1-4, eq. 22,
29), the regressors (Alg. 3, 6), the rls-lpf low-pass (eq. 36-39) and the two RLS (Alg. 5, 7)
row by row.

Every operation is written in the order of the pure-Python step it replaced, so the numbers
are bit-identical to it: no fast-math, sums left to right from 0.0 as Python's `sum`, the
square in the enable check through libm's pow (`CFG_TWO` travels as data: a literal 2 would be
compiled to x * x, which differs from pow(x, 2) in the last bit on some inputs). Only imported
when an estimator is made; the machine code is cached as `rotorid.sim.kernel`'s is.

The state lives in float64 arrays updated in place, laid out as `layout` says.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from rotorid.frames import GRAVITY
from rotorid.methods.online.layout import (
    CFG_AZ_ALLOW,
    CFG_BZ,
    CFG_CG,
    CFG_COMZ,
    CFG_EIV,
    CFG_F2,
    CFG_GND2,
    CFG_HOLD,
    CFG_IMU,
    CFG_JMIN,
    CFG_KF,
    CFG_LPF,
    CFG_LPF_TAU,
    CFG_M2,
    CFG_MODEL,
    CFG_MS,
    CFG_MSC,
    CFG_MTH,
    CFG_NS,
    CFG_NZ,
    CFG_PER,
    CFG_QO,
    CFG_TAU_EN,
    CFG_TWO,
    MOT_BC,
    MOT_BF,
    MOT_CF,
    MOT_FL,
    MOT_FP,
    OUT_AL,
    OUT_EN,
    OUT_IMUZ,
    OUT_M,
    OUT_SD,
    OUT_T,
    OUT_TH1,
    OUT_W,
    OUT_WSTD,
    ROW_H1,
    ROW_H2,
    ROW_J,
    ROW_KF,
    ROW_MOVED,
    ROW_R1,
    ROW_R2,
    ROW_SIZE,
    ROW_T,
    ROW_Y1,
    ROW_Y2,
    ST_ACT,
    ST_AL,
    ST_ALR,
    ST_AZ,
    ST_BGA,
    ST_BN,
    ST_BT,
    ST_CHI1,
    ST_CHI2,
    ST_EN,
    ST_GAIN,
    ST_HASLPF,
    ST_LPF,
    ST_NROWS,
    ST_P,
    ST_PA,
    ST_PF,
    ST_PG,
    ST_S1,
    ST_S2,
    ST_T,
    ST_TEMIT,
    ST_TEN,
    ST_TH1,
    ST_TH2,
    ST_TP,
    ST_TRAW,
    ST_W,
    ST_WL,
    TR_S1D,
    TR_TH1,
    TR_TH2,
)


@njit(cache=True)
def _wrench(mix: np.ndarray, nz: np.ndarray, f: np.ndarray, out: np.ndarray) -> None:
    """Force and moment about the body origin: mixer @ thrusts, each row summed from 0.0 left to
    right (zero rows skipped, 0.0)."""
    for i in range(6):
        s = 0.0
        if nz[i] != 0.0:
            for j in range(f.shape[0]):
                s += mix[i, j] * f[j]
        out[i] = s


@njit(cache=True)
def _scale(c: float, n: float) -> float:
    """A-posteriori variance factor: mean of the squared weighted residuals (1 until data)."""
    return c / n if n > 10 else 1.0


@njit(cache=True)
def push(
    st: np.ndarray,
    mot: np.ndarray,
    cfg: np.ndarray,
    mix: np.ndarray,
    f: np.ndarray,
    q: np.ndarray,
    hq: bool,
    t: float,
    g0: float,
    g1: float,
    g2: float,
    a0: float,
    a1: float,
    a2: float,
    out: np.ndarray,
    trace: np.ndarray,
    i: int,
    rows: np.ndarray,
) -> None:
    """One sample (time, gyro, accelerometer, rotor thrusts `f`, attitude `q` when `hq`) into
    the estimator: averaged into blocks of `CFG_PER` (0: every sample a step) and a step per
    block; `out` gets the state, `trace[i]` (i < len) its trajectory row, `rows` the RLS rows."""
    nz = cfg[CFG_NZ : CFG_NZ + 6]
    m = f.shape[0]
    per = cfg[CFG_PER]
    w = np.empty(6)
    t0 = st[ST_TRAW]
    st[ST_TRAW] = t
    if math.isnan(t0):  # the first sample: a block of its own, the estimator's initial state
        st[ST_TEMIT] = t + per
        st[ST_TP] = t
        for j in range(m):
            mot[MOT_FL, j] = f[j]
            mot[MOT_FP, j] = f[j]
        _wrench(mix, nz, f, w)
        st[ST_WL : ST_WL + 6] = w
        _step(st, cfg, t, g0, g1, g2, a0, a1, a2, q, hq, w, w, rows)
    else:
        d = t - t0
        if per == 0.0:  # the wrench is linear in the thrusts: mix each sample once
            for j in range(m):
                mot[MOT_FL, j] = f[j]
            _wrench(mix, nz, f, w)
            ws = st[ST_WL : ST_WL + 6].copy()
            st[ST_WL : ST_WL + 6] = w
            hold = cfg[CFG_HOLD]
            if hold < d:  # weights of the last sample and this one
                wl = 0.5 + 0.5 * hold / d
                wt = 1.0 - wl
                for k in range(6):
                    ws[k] = wl * ws[k] + wt * w[k]
            _step(st, cfg, t, g0, g1, g2, a0, a1, a2, q, hq, w, ws, rows)
        else:
            _block(st, mot, cfg, mix, nz, f, q, hq, t, d, g0, g1, g2, a0, a1, a2, rows)
    fill_state(st, cfg, out)
    if i < trace.shape[0]:
        tr = trace[i]
        for k in range(16):
            tr[k] = st[k]
        for k in range(6):
            tr[TR_TH1 + k] = st[ST_TH1 + k]
            tr[TR_S1D + k] = st[ST_S1 + 7 * k]
        for k in range(5):  # θ2 and Σ_θ2
            tr[TR_TH2 + k] = st[ST_TH2 + k]
        tr[TR_TH2 + 5] = _scale(st[ST_CHI1], st[ST_CHI1 + 1])
        tr[TR_TH2 + 6] = _scale(st[ST_CHI2], st[ST_CHI2 + 1])


@njit(cache=True)
def _block(st, mot, cfg, mix, nz, f, q, hq, t, d, g0, g1, g2, a0, a1, a2, rows) -> None:
    """A sample into the current block (`OnlineEstimator._push`): the thrust integral by the
    trapezoid, the block's sums; at the block's end on the grid of `CFG_PER` its means, the
    step's mean thrust from the integral's block means and a step."""
    m, per = f.shape[0], cfg[CFG_PER]
    h = 0.5 * d
    if st[ST_BN] == 0.0:
        st[ST_BT] = 0.0
        st[ST_BGA : ST_BGA + 6] = 0.0
        for j in range(m):
            mot[MOT_BF, j] = 0.0
            mot[MOT_BC, j] = 0.0
    for j in range(m):
        mot[MOT_CF, j] = mot[MOT_CF, j] + h * (mot[MOT_FL, j] + f[j])
        mot[MOT_FL, j] = f[j]
    st[ST_BN] += 1.0
    st[ST_BT] += t
    st[ST_BGA] += g0
    st[ST_BGA + 1] += g1
    st[ST_BGA + 2] += g2
    st[ST_BGA + 3] += a0
    st[ST_BGA + 4] += a1
    st[ST_BGA + 5] += a2
    for j in range(m):
        mot[MOT_BF, j] += f[j]
        mot[MOT_BC, j] += mot[MOT_CF, j]
    if t >= st[ST_TEMIT] - 1e-6 * per:  # the sample reaches the block's end on the grid
        n = st[ST_BN]
        gm = st[ST_BGA : ST_BGA + 6] / n
        tb = st[ST_BT] / n
        fb, fw = np.empty(m), np.empty(m)
        dt, delta = tb - st[ST_TP], 0.5 * min(cfg[CFG_HOLD], d)
        for j in range(m):
            fb[j] = mot[MOT_BF, j] / n
            cb = mot[MOT_BC, j] / n
            fw[j] = (cb - delta * (fb[j] - mot[MOT_FP, j])) / dt  # the last block's integral mean is 0
            mot[MOT_CF, j] = mot[MOT_CF, j] - cb  # the integral from C̄ of this block on: no growing sum
            mot[MOT_FP, j] = fb[j]
        st[ST_TP] = tb
        st[ST_BN] = 0.0
        st[ST_TEMIT] += per * (1 + math.floor((t - st[ST_TEMIT]) / per + 1e-6))
        wb, ws = np.empty(6), np.empty(6)
        _wrench(mix, nz, fb, wb)
        _wrench(mix, nz, fw, ws)
        _step(st, cfg, tb, gm[0], gm[1], gm[2], gm[3], gm[4], gm[5], q, hq, wb, ws, rows)


@njit(cache=True)
def _step(st, cfg, t, g0, g1, g2, a0, a1, a2, q, hq, F, ws, rows) -> None:
    """One estimator step from block means (gyro, accelerometer, rotor wrench `F`: force first)
    and the wrench's mean over the step `ws` (unused at the first): enable check, KF (Alg. 1-2,
    4), regressors (Alg. 3, 6), RLS (Alg. 5, 7). The KF and the RLS rows take the step's wrench;
    the RLS2 rows the mean force of the two blocks, as the accelerometer."""
    if math.isnan(st[ST_T]):  # first sample: initial state only
        st[ST_T] = t
        st[ST_PF], st[ST_PF + 1], st[ST_PF + 2] = F[0], F[1], F[2]
        st[ST_PA], st[ST_PA + 1], st[ST_PA + 2] = a0, a1, a2
        st[ST_PG], st[ST_PG + 1], st[ST_PG + 2] = g0, g1, g2
        if cfg[CFG_KF] == 0.0:
            st[ST_W], st[ST_W + 1], st[ST_W + 2] = g0, g1, g2
        return
    dt = t - st[ST_T]
    st[ST_T] = t
    F0x, F0y, F0z = st[ST_PF], st[ST_PF + 1], st[ST_PF + 2]
    b0, b1, b2 = st[ST_PA], st[ST_PA + 1], st[ST_PA + 2]  # the previous block's accelerometer
    st[ST_PF], st[ST_PF + 1], st[ST_PF + 2] = F[0], F[1], F[2]
    st[ST_PA], st[ST_PA + 1], st[ST_PA + 2] = a0, a1, a2
    st[ST_ALR] = (g0 - st[ST_PG]) / dt
    st[ST_ALR + 1] = (g1 - st[ST_PG + 1]) / dt
    st[ST_ALR + 2] = (g2 - st[ST_PG + 2]) / dt
    st[ST_PG], st[ST_PG + 1], st[ST_PG + 2] = g0, g1, g2
    if st[ST_EN] == 0.0:
        _enable(st, cfg, t, dt, a0, a1, a2, q, hq)
    p0, q0, r0 = st[ST_W], st[ST_W + 1], st[ST_W + 2]
    kf = cfg[CFG_KF] != 0.0
    if kf:
        w1x, w1y, w1z, c0, c1, c2, vx, vy, vz = _kf(st, cfg, dt, ws, g0, g1, g2)
    else:
        w1x, w1y, w1z, c0, c1, c2, vx, vy, vz = g0, g1, g2, True, True, True, 0.0, 0.0, 0.0
    st[ST_W], st[ST_W + 1], st[ST_W + 2] = w1x, w1y, w1z
    alx, aly, alz = (w1x - p0) / dt, (w1y - q0) / dt, (w1z - r0) / dt
    st[ST_AL], st[ST_AL + 1], st[ST_AL + 2] = alx, aly, alz
    st[ST_ACT], st[ST_ACT + 1], st[ST_ACT + 2] = 1.0 if c0 else 0.0, 1.0 if c1 else 0.0, 1.0 if c2 else 0.0
    if st[ST_EN] == 0.0:
        return
    k = int(st[ST_NROWS])
    row = rows[k] if k < rows.shape[0] else np.empty(ROW_SIZE)
    am0, am1, am2 = 0.5 * (b0 + a0), 0.5 * (b1 + a1), 0.5 * (b2 + a2)
    om0, om1, om2 = 0.5 * (p0 + w1x), 0.5 * (q0 + w1y), 0.5 * (r0 + w1z)
    _regressors(st, cfg, om0, om1, om2, alx, aly, alz, c0, c1, c2, ws, am0, am1, am2, row)
    row[ROW_Y2], row[ROW_Y2 + 1], row[ROW_Y2 + 2] = 0.5 * (F0x + F[0]), 0.5 * (F0y + F[1]), 0.5 * (F0z + F[2])
    if cfg[CFG_LPF] != 0.0:
        _lowpass(st, cfg, dt, row)
    rv = cfg[CFG_M2] / dt  # moment variance of R_RLS per step
    r1 = row[ROW_R1 : ROW_R1 + 3]
    r1[0], r1[1], r1[2] = rv, rv, rv
    if cfg[CFG_EIV] != 0.0 and kf:
        if c0:
            r1[0] = rv + (st[ST_TH1] * st[ST_TH1] + st[ST_S1]) * vx
        if c1:
            r1[1] = rv + (st[ST_TH1 + 1] * st[ST_TH1 + 1] + st[ST_S1 + 7]) * vy
        if c2:
            r1[2] = rv + (st[ST_TH1 + 2] * st[ST_TH1 + 2] + st[ST_S1 + 14]) * vz
    _rls1(st, row)
    r2 = cfg[CFG_F2] / dt
    row[ROW_R2] = r2
    _rls2(st, row, r2)
    if k < rows.shape[0]:
        for j in range(6):
            row[ROW_KF + j] = st[ST_GAIN + j] if kf else 0.0
        row[ROW_T] = t - 0.5 * dt
        st[ST_NROWS] = k + 1


#: where the low-pass's 30 values sit in a row: H1 and y1, then H2 and y2
_LPF_AT = np.concatenate((np.arange(ROW_R1), np.arange(ROW_H2, ROW_R2)))


@njit(cache=True)
def _enable(st, cfg, t, dt, a0, a1, a2, q, hq) -> None:
    """Enable condition: LPF'd gravity-rejected vertical acceleration (Sec. III, Fig. 3)."""
    if hq:
        w_, x_, y_, z_ = q[0], q[1], q[2], q[3]
        az = 2.0 * (x_ * z_ - w_ * y_) * a0 + 2.0 * (y_ * z_ + w_ * x_) * a1
        az += (1.0 - 2.0 * (x_ * x_ + y_ * y_)) * a2
        az -= GRAVITY
    else:
        two = cfg[CFG_TWO]
        az = math.sqrt(a0**two + a1**two + a2**two) - GRAVITY
    k = dt / (cfg[CFG_TAU_EN] + dt)
    st[ST_AZ] += k * (az - st[ST_AZ])
    if abs(st[ST_AZ]) > cfg[CFG_AZ_ALLOW]:
        st[ST_EN] = 1.0
        st[ST_TEN] = t


@njit(cache=True)
def _lowpass(st, cfg, dt, row) -> None:
    """The rls-lpf variant (eq. 36-39): first-order low-pass (time constant `lpf_tau`) of every
    regressor and output of the row, in place."""
    lp = st[ST_LPF : ST_LPF + 30]
    if st[ST_HASLPF] == 0.0:
        for j in range(30):
            lp[j] = row[_LPF_AT[j]]
        st[ST_HASLPF] = 1.0
    else:
        af = -math.expm1(-dt / cfg[CFG_LPF_TAU])
        for j in range(30):
            lp[j] = lp[j] + af * (row[_LPF_AT[j]] - lp[j])
    for j in range(30):
        row[_LPF_AT[j]] = lp[j]


@njit(cache=True)
def _kf(st, cfg, dt, ws, gx, gy, gz):
    """Alg. 1-2 and 4: the KF of the body rate (process model eq. 22 with u = M - com x F about
    the estimated CoM, adaptive measurement weight) and the correction law. Returns the new rate,
    which MOI columns are active and the variance each measurement adds to α̂; keeps the gain
    and the model's acceleration for the rows."""
    gnd2, cg, qo, ns = cfg[CFG_GND2], cfg[CFG_CG], cfg[CFG_QO], cfg[CFG_NS]
    jx, jy, jz = cfg[CFG_JMIN], cfg[CFG_JMIN + 1], cfg[CFG_JMIN + 2]
    if cfg[CFG_MODEL] == 0.0:
        th, S = st[ST_TH1 : ST_TH1 + 6], st[ST_S1 : ST_S1 + 36]
        sc1 = _scale(st[ST_CHI1], st[ST_CHI1 + 1])
    else:
        th, S, sc1 = cfg[CFG_MTH : CFG_MTH + 6], cfg[CFG_MS : CFG_MS + 36], cfg[CFG_MSC]
    cx, cy, cz = th[3], th[4], cfg[CFG_COMZ]
    Fx, Fy, Fz, Mx, My, Mz = ws[0], ws[1], ws[2], ws[3], ws[4], ws[5]
    ux, uy, uz = Mx - (cy * Fz - cz * Fy), My - (cz * Fx - cx * Fz), Mz - (cx * Fy - cy * Fx) - th[5]
    J0 = th[0] if th[0] > jx else jx
    J1 = th[1] if th[1] > jy else jy
    J2 = th[2] if th[2] > jz else jz
    p_, q_, r_ = st[ST_W], st[ST_W + 1], st[ST_W + 2]
    px, py, pz = st[ST_P], st[ST_P + 1], st[ST_P + 2]
    R, c = dt / gnd2, cg / math.sqrt(dt)  # weight 1/R_meas; Alg. 2's c
    qdt, dt2 = qo * dt, dt * dt
    sc1 *= dt2
    # eq. 22 (with the gyroscopic term ω x Jω) and eq. 29, per axis
    wx = p_ + (ux - (J2 - J1) * q_ * r_) / J0 * dt
    wy = q_ + (uy - (J0 - J2) * p_ * r_) / J1 * dt
    wz = r_ + (uz - (J1 - J0) * p_ * q_) / J2 * dt
    bx = px + ux * ux * S[0] * sc1 / (J0 * J0 * J0 * J0) + qdt
    by = py + uy * uy * S[7] * sc1 / (J1 * J1 * J1 * J1) + qdt
    bz = pz + uz * uz * S[14] * sc1 / (J2 * J2 * J2 * J2) + qdt
    # Alg. 2: measurement update with the weight 1/R lowered by r/c when the residual r > c
    rx, ry, rz = abs(gx - wx), abs(gy - wy), abs(gz - wz)
    mx = R * rx / c if rx > c else R
    my = R * ry / c if ry > c else R
    mz = R * rz / c if rz > c else R
    kx, ky, kz = bx / (bx + 1.0 / mx), by / (by + 1.0 / my), bz / (bz + 1.0 / mz)
    gn = st[ST_GAIN : ST_GAIN + 6]
    gn[0], gn[1], gn[2] = kx, ky, kz
    gn[3], gn[4], gn[5] = (wx - p_) / dt, (wy - q_) / dt, (wz - r_) / dt
    st[ST_P], st[ST_P + 1], st[ST_P + 2] = (1.0 - kx) * bx, (1.0 - ky) * by, (1.0 - kz) * bz
    w1x, w1y, w1z = wx + kx * (gx - wx), wy + ky * (gy - wy), wz + kz * (gz - wz)
    # what the measurement adds to α̂
    vx, vy, vz = kx * kx / mx / dt2, ky * ky / my / dt2, kz * kz / mz / dt2
    # Alg. 4: the correction law on the previous-step rate and its std
    c0, c1, c2 = abs(p_) >= ns * math.sqrt(px), abs(q_) >= ns * math.sqrt(py), abs(r_) >= ns * math.sqrt(pz)
    return w1x, w1y, w1z, c0, c1, c2, vx, vy, vz


@njit(cache=True)
def _regressors(st, cfg, p_, q_, r_, a0, a1, a2, c0, c1, c2, ws, am0, am1, am2, row) -> None:
    """Alg. 3-4: H1 rows (3 x 6, θ1 with the yaw moment) of M - cz [-Fy, Fx, 0] = H1 θ1 (MOI
    columns of inactive axes zeroed, their term at the current estimate moved to the output, and
    recorded with that Ĵ); Alg. 6: H2 rows (3 x 2) of F = H2 [m, m z], IMU x, y relative to the
    CoM (a lever-arm column needs both other axes active)."""
    Fx, Fy, Fz, Mx, My, y2 = ws[0], ws[1], ws[2], ws[3], ws[4], ws[5]
    pq, pr, qr = p_ * q_, p_ * r_, q_ * r_
    cz, th = cfg[CFG_COMZ], st[ST_TH1 : ST_TH1 + 6]
    y0, y1 = Mx + cz * Fy, My - cz * Fx
    h1, mv = row[ROW_H1 : ROW_H1 + 18], row[ROW_MOVED : ROW_MOVED + 9]
    # the MOI columns of H1 (rows 0-2 of column k at h1[6 * row + k])
    h1[0], h1[6], h1[12] = a0, pr, -pq
    h1[1], h1[7], h1[13] = -qr, a1, pq
    h1[2], h1[8], h1[14] = qr, -pr, a2
    h1[3], h1[4], h1[5] = 0.0, Fz, 0.0
    h1[9], h1[10], h1[11] = -Fz, 0.0, 0.0
    h1[15], h1[16], h1[17] = Fy, -Fx, cfg[CFG_BZ]
    for k, act in enumerate((c0, c1, c2)):
        if act:
            mv[k], mv[3 + k], mv[6 + k] = 0.0, 0.0, 0.0
        else:
            e0, e1, e2, tk = h1[k], h1[6 + k], h1[12 + k], th[k]
            y0, y1, y2 = y0 - e0 * tk, y1 - e1 * tk, y2 - e2 * tk
            mv[k], mv[3 + k], mv[6 + k] = e0, e1, e2
            h1[k], h1[6 + k], h1[12 + k] = 0.0, 0.0, 0.0
    row[ROW_Y1], row[ROW_Y1 + 1], row[ROW_Y1 + 2] = y0, y1, y2
    row[ROW_J], row[ROW_J + 1], row[ROW_J + 2] = th[0], th[1], th[2]
    x = cfg[CFG_IMU] - th[3]
    y = cfg[CFG_IMU + 1] - th[4]
    if cfg[CFG_KF] != 0.0:
        l0, l1, l2 = c1 and c2, c0 and c2, c0 and c1
    else:
        l0 = l1 = l2 = True
    x = x if l0 else 0.0
    y = y if l1 else 0.0
    # [ω]x² + [α]x, row by row, times the lever arm
    h2 = row[ROW_H2 : ROW_H2 + 6]
    h2[0] = am0 - x * -(q_ * q_ + r_ * r_) - y * (pq - a2)
    h2[1] = -(pr + a1) if l2 else 0.0
    h2[2] = am1 - x * (pq + a2) - y * -(p_ * p_ + r_ * r_)
    h2[3] = -(qr - a0) if l2 else 0.0
    h2[4] = am2 - x * (pr - a1) - y * (qr + a0)
    h2[5] = (p_ * p_ + q_ * q_) if l2 else 0.0


@njit(cache=True)
def _rls1(st: np.ndarray, row: np.ndarray) -> None:
    """Alg. 5, processed row by row (exact for a diagonal R_RLS, the row variances at `ROW_R1`).
    Σ is updated in its upper triangle and mirrored, so it stays exactly symmetric. The sixth
    parameter is the constant yaw moment (`OnlineSettings.yaw_moment`)."""
    S, th = st[ST_S1 : ST_S1 + 36], st[ST_TH1 : ST_TH1 + 6]
    s00, s01, s02, s03, s04, s05 = S[0], S[1], S[2], S[3], S[4], S[5]
    s11, s12, s13, s14, s15 = S[7], S[8], S[9], S[10], S[11]
    s22, s23, s24, s25 = S[14], S[15], S[16], S[17]
    s33, s34, s35 = S[21], S[22], S[23]
    s44, s45 = S[28], S[29]
    s55 = S[35]
    t0, t1, t2, t3, t4, t5 = th[0], th[1], th[2], th[3], th[4], th[5]
    c = st[ST_CHI1]
    for r in range(3):
        H = row[ROW_H1 + 6 * r : ROW_H1 + 6 * r + 6]
        h0, h1, h2, h3, h4, h5 = H[0], H[1], H[2], H[3], H[4], H[5]
        g0 = s00 * h0 + s01 * h1 + s02 * h2 + s03 * h3 + s04 * h4 + s05 * h5  # g = Σ h (Σ symmetric)
        g1 = s01 * h0 + s11 * h1 + s12 * h2 + s13 * h3 + s14 * h4 + s15 * h5
        g2 = s02 * h0 + s12 * h1 + s22 * h2 + s23 * h3 + s24 * h4 + s25 * h5
        g3 = s03 * h0 + s13 * h1 + s23 * h2 + s33 * h3 + s34 * h4 + s35 * h5
        g4 = s04 * h0 + s14 * h1 + s24 * h2 + s34 * h3 + s44 * h4 + s45 * h5
        g5 = s05 * h0 + s15 * h1 + s25 * h2 + s35 * h3 + s45 * h4 + s55 * h5
        den = h0 * g0 + h1 * g1 + h2 * g2 + h3 * g3 + h4 * g4 + h5 * g5 + row[ROW_R1 + r]
        e = row[ROW_Y1 + r] - (h0 * t0 + h1 * t1 + h2 * t2 + h3 * t3 + h4 * t4 + h5 * t5)
        f = e / den
        t0, t1, t2, t3, t4, t5 = t0 + g0 * f, t1 + g1 * f, t2 + g2 * f, t3 + g3 * f, t4 + g4 * f, t5 + g5 * f
        # Σ -= g gᵀ / den, the upper triangle
        k0, k1, k2, k3, k4 = g0 / den, g1 / den, g2 / den, g3 / den, g4 / den
        s00, s01, s02, s03 = s00 - k0 * g0, s01 - k0 * g1, s02 - k0 * g2, s03 - k0 * g3
        s04, s05 = s04 - k0 * g4, s05 - k0 * g5
        s11, s12, s13, s14, s15 = s11 - k1 * g1, s12 - k1 * g2, s13 - k1 * g3, s14 - k1 * g4, s15 - k1 * g5
        s22, s23, s24, s25 = s22 - k2 * g2, s23 - k2 * g3, s24 - k2 * g4, s25 - k2 * g5
        s33, s34, s35 = s33 - k3 * g3, s34 - k3 * g4, s35 - k3 * g5
        s44, s45, s55 = s44 - k4 * g4, s45 - k4 * g5, s55 - g5 / den * g5
        c += e * f
    th[0], th[1], th[2], th[3], th[4], th[5] = t0, t1, t2, t3, t4, t5
    up = (s00, s01, s02, s03, s04, s05, s11, s12, s13, s14, s15, s22, s23, s24, s25, s33, s34, s35, s44, s45, s55)
    n = 0
    for a in range(6):
        for b in range(a, 6):
            S[6 * a + b] = up[n]
            S[6 * b + a] = up[n]
            n += 1
    st[ST_CHI1] = c
    st[ST_CHI1 + 1] += 3.0


@njit(cache=True)
def _rls2(st: np.ndarray, row: np.ndarray, rv: float) -> None:
    """Alg. 7 (2 parameters), row by row; `rv` the row variance."""
    t0, t1 = st[ST_TH2], st[ST_TH2 + 1]
    s00, s01, s11 = st[ST_S2], st[ST_S2 + 1], st[ST_S2 + 2]
    c = st[ST_CHI2]
    for r in range(3):
        h0, h1, yi = row[ROW_H2 + 2 * r], row[ROW_H2 + 2 * r + 1], row[ROW_Y2 + r]
        g0 = s00 * h0 + s01 * h1
        g1 = s01 * h0 + s11 * h1
        den = h0 * g0 + h1 * g1 + rv
        e = yi - h0 * t0 - h1 * t1
        f, k0 = e / den, g0 / den
        t0 += g0 * f
        t1 += g1 * f
        s00 -= k0 * g0
        s01 -= k0 * g1
        s11 -= g1 / den * g1
        c += e * f
    st[ST_TH2], st[ST_TH2 + 1] = t0, t1
    st[ST_S2], st[ST_S2 + 1], st[ST_S2 + 2] = s00, s01, s11
    st[ST_CHI2] = c
    st[ST_CHI2 + 1] += 3.0


@njit(cache=True)
def fill_state(st: np.ndarray, cfg: np.ndarray, out: np.ndarray) -> None:
    """`OnlineEstimator.state`'s fields: θ1's std by Σ_θ1's diagonal and its a-posteriori scale,
    imu_z = m z / m with its std by the delta method (θ2's scale)."""
    sqrt = math.sqrt
    sc1 = _scale(st[ST_CHI1], st[ST_CHI1 + 1])
    out[OUT_T], out[OUT_EN] = st[ST_T], st[ST_EN]
    for k in range(3):
        out[OUT_W + k] = st[ST_W + k]
        out[OUT_WSTD + k] = sqrt(st[ST_P + k])
        out[OUT_AL + k] = st[ST_AL + k]
    for k in range(5):
        out[OUT_TH1 + k] = st[ST_TH1 + k]
        out[OUT_SD + k] = sqrt(abs(st[ST_S1 + 7 * k]) * sc1)  # 6x6: stride 7
    sc2 = _scale(st[ST_CHI2], st[ST_CHI2 + 1])
    m, mz, s00, s01, s11 = st[ST_TH2], st[ST_TH2 + 1], st[ST_S2], st[ST_S2 + 1], st[ST_S2 + 2]
    d0, d1 = -mz / (m * m), 1.0 / m
    var = (d0 * d0 * s00 + 2.0 * d0 * d1 * s01 + d1 * d1 * s11) * sc2
    out[OUT_M], out[OUT_M + 1] = m, sqrt(abs(s00) * sc2)
    out[OUT_IMUZ], out[OUT_IMUZ + 1] = cfg[CFG_COMZ] + mz / m, sqrt(max(var, 0.0))
