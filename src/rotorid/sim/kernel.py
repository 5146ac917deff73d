"""The simulator's per-step physics, compiled by numba (`rotorid.sim.dynamics.Plant.run` drives it):
the cascade controller (Kwon eq. 40-48), the exact first-order motor lag, the rotor wrench,
the body effects' hook (`rotorid.sim.effects`) and the RK4 rigid-body step (Kwon eq. 6-9).

Every operation is written in the order of the float arithmetic it replaced, so flights are
bit-identical to it: products of small matrices go through BLAS (`np.dot`, the same kernels
numpy's `@` calls), sums of rotor thrusts follow numpy's pairwise `np.sum`, no fast-math.
Only imported when a flight is flown (numba's import and the cached machine code load then:
~0.5 s; a compile without a cache, 13-20 s CPU). The machine code is cached in `__pycache__`
beside this file or, where that is not writable (an installed package), in numba's user cache
(~/.cache/numba; `NUMBA_CACHE_DIR` overrides both). `NUMBA_DISABLE_JIT=1` runs the same
functions as Python.

The data travel as tuples of float64 arrays and scalars, built once per flight:
- body: (1/m, J (9,), J^-1 (9,), linear drag (3,), has linear drag, thrust coefficients per motor
  highest power first (M, D+1), lag factors per motor (rise over h/2, h, fall over h/2, h) (M, 4),
  instant motors, rotor-drag maps (M, 36), has rotor drag, B (6, M), (h, h/2, h/6), cmd_min, cmd_max);
- ctrl: (references (K, 16), gains (12,), m, c_x, c_y, tan(max tilt), control interval, allocation
  (M, 4), the thrust inverse `inv`);
- inv: (per motor (c1, c1^2, 4 c2, c0, 1 / (2 c2), f_lo, f_hi) (M, 7), all quadratic, thrust
  coefficients lowest power first (M, D+1), f_lo (M,), f_hi (M,), cmd_min, cmd_max);
- fx: (wind (N, 3), hubs (M, 3), linear body drag (3,), rotor-drag force maps (M, 6, 3), has rotor
  drag, quadratic drag (3,), has it, records df (N, M), extra (N, 6), sat (N, M), vbat (N,),
  battery state (charge, load) (2,), saturation, f_full, V_ref, ground radius, ground height, V0,
  drain, sag, dt, m g, duty-cycle commands, battery on, the limit's voltage exponent 2.0, thrust
  coefficients highest power first (M, D+1), B (6, M), Fortran order as `Vehicle.mixer` makes it).
  The exponent travels as data so that libm's pow computes the power, as numpy did: a literal 2.0
  is folded to x * x by the compiler, which differs from libm's pow(x, 2) in the last bit on
  ~0.1 % of inputs.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from rotorid.frames import GRAVITY


@njit(cache=True)
def horner(c: np.ndarray, u: float) -> float:
    """The thrust polynomial with coefficients `c` (highest power first) at motor state u."""
    f = 0.0
    for j in range(c.shape[0]):
        f = f * u + c[j]
    return f


@njit(cache=True)
def np_sum(a: np.ndarray) -> float:
    """numpy's `np.sum` of a short contiguous vector (<= 128), to the bit: pairwise from 8 on."""
    n = a.shape[0]
    if n < 8:
        r = -0.0
        for i in range(n):
            r += a[i]
        return r
    acc = a[:8].copy()
    i = 8
    while i < n - n % 8:
        for j in range(8):
            acc[j] += a[i + j]
        i += 8
    r = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
    while i < n:
        r += a[i]
        i += 1
    return r


@njit(cache=True)
def _copy(src: np.ndarray, dst: np.ndarray) -> None:
    """dst[:] = src for vectors, written out (a slice assignment compiles numba's error-message
    string code: seconds of compile time)."""
    for i in range(src.shape[0]):
        dst[i] = src[i]


@njit(cache=True)
def _maximum(a: float, b: float) -> float:
    """numpy's `maximum` of two floats (a NaN a wins)."""
    return a if (a >= b or a != a) else b


@njit(cache=True)
def _minimum(a: float, b: float) -> float:
    """numpy's `minimum` of two floats (a NaN a wins)."""
    return a if (a <= b or a != a) else b


@njit(cache=True)
def euler_zxy(qw: float, qx: float, qy: float, qz: float) -> tuple[float, float, float]:
    """Roll, pitch, yaw of R = Rz(psi) Rx(phi) Ry(theta) (Kwon eq. 44-46) from a quaternion."""
    r21 = 2 * (qy * qz + qw * qx)
    r20 = 2 * (qx * qz - qw * qy)
    r22 = 1 - 2 * (qx * qx + qy * qy)
    r01 = 2 * (qx * qy - qw * qz)
    r11 = 1 - 2 * (qx * qx + qz * qz)
    s = 1.0 if r21 > 1.0 else r21
    s = -1.0 if s < -1.0 else s
    return math.asin(s), math.atan2(-r20, r22), math.atan2(-r01, r11)


@njit(cache=True)
def _newton(c: np.ndarray, f: float, hi: float) -> float:
    """Largest root of sum_j c_j u^j = f (c lowest power first) by Newton's method from cmd_max."""
    u = hi
    for _ in range(50):
        val, der = 0.0, 0.0
        for j in range(c.shape[0] - 1, -1, -1):
            der = der * u + val
            val = val * u + c[j]
        if der <= 0.0:
            break
        step = (val - f) / der
        u -= step
        a = abs(u)
        if abs(step) < 1e-12 * (a if a > 1.0 else 1.0):
            break
    return u


@njit(cache=True)
def thrust_inverse(thrusts: np.ndarray, inv: tuple, out: np.ndarray) -> None:
    """Motor commands (into `out`) giving rotor `thrusts` (Kwon eq. 48): the thrust clamped to
    what [cmd_min, cmd_max] can give, then the largest root of the thrust polynomial (closed
    form up to quadratic, Newton's method beyond), clamped to [cmd_min, cmd_max]."""
    quad, is_quad, coeffs, f_lo, f_hi, lo, hi = inv
    for i in range(thrusts.shape[0]):
        f = thrusts[i]
        if is_quad:
            c1, c1s, c2x4, c0, inv2c2, fl, fh = quad[i]
            f = fl if f < fl else (fh if f > fh else f)
            d = c1s - c2x4 * (c0 - f)
            u = (math.sqrt(d) - c1) * inv2c2 if d > 0.0 else -c1 * inv2c2
            out[i] = lo if u < lo else (hi if u > hi else u)
            continue
        f = f_lo[i] if f_lo[i] > f else f
        f = f_hi[i] if f_hi[i] < f else f
        c = coeffs[i]
        if c.shape[0] == 2:
            u = (f - c[0]) / c[1]
        elif c.shape[0] == 3 and c[2] != 0.0:
            d = c[1] * c[1] - 4 * c[2] * (c[0] - f)
            u = (-c[1] + math.sqrt(0.0 if d < 0.0 else d)) / (2 * c[2])
        else:
            u = _newton(c, f, hi)
        u = lo if lo > u else u
        out[i] = hi if hi < u else u


@njit(cache=True)
def control(k: int, s: np.ndarray, ctrl: tuple, out: np.ndarray) -> None:
    """The cascade controller's motor commands at step k for the 13-state `s` (into `out`):
    position PD (eq. 40) with a tilt limit, desired roll/pitch (eq. 42-43) plus the excitation
    offsets, attitude PD (eq. 41) with the CoM offset's moment, mixer and thrust inverse."""
    ref, g, m, cx, cy, tan_tilt, every, alloc, inv = ctrl
    r = ref[min(k // every, ref.shape[0] - 1)]
    rpx, rpy, rpz, rvx, rvy, rvz, rax, ray, raz, psi = r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9]
    d_roll, d_pitch, d_thrust, d_p, d_q, d_r = r[10], r[11], r[12], r[13], r[14], r[15]
    fx = m * (rax + g[0] * (rpx - s[0]) + g[3] * (rvx - s[3]))
    fy = m * (ray + g[1] * (rpy - s[1]) + g[4] * (rvy - s[4]))
    fz = m * (raz + g[2] * (rpz - s[2]) + g[5] * (rvz - s[5]) + GRAVITY)
    low = 0.1 * m * GRAVITY
    fz = low if low > fz else fz
    fh = math.sqrt(fx * fx + fy * fy)
    if fh > tan_tilt * fz:  # tilt limit of the position loop (as autopilots have)
        fx, fy = fx * tan_tilt * fz / fh, fy * tan_tilt * fz / fh
    thrust = math.sqrt(fx * fx + fy * fy + fz * fz)
    sp, cp = math.sin(psi), math.cos(psi)
    roll_ref = math.atan2(fx * sp - fy * cp, fz) + d_roll  # Kwon eq. 42, exact for z-x'-y''
    pitch_ref = math.asin((fx * cp + fy * sp) / thrust) + d_pitch  # eq. 43
    thrust *= 1.0 + d_thrust
    roll, pitch, yaw = euler_zxy(s[6], s[7], s[8], s[9])
    e_yaw = (psi - yaw + math.pi) % (2 * math.pi) - math.pi
    mx = g[6] * (roll_ref - roll) + g[9] * (d_p - s[10]) + cy * thrust  # eq. 41
    my = g[7] * (pitch_ref - pitch) + g[10] * (d_q - s[11]) - cx * thrust
    mz = g[8] * e_yaw + g[11] * (d_r - s[12])
    t = np.empty(alloc.shape[0])
    for i in range(alloc.shape[0]):
        t[i] = alloc[i, 0] * thrust + alloc[i, 1] * mx + alloc[i, 2] * my + alloc[i, 3] * mz
    thrust_inverse(t, inv, out)


@njit(cache=True)
def deriv(body: tuple, s: tuple, w: tuple, kd: np.ndarray) -> tuple:
    """The derivatives of (v, q, w) (10 floats) for s = (v, q, w) (10 floats) under the body
    wrench w (6 floats), less the linear drag and the rotor drag of map `kd` (Kwon eq. 6-9
    about the CoM)."""
    inv_m, jm, ji, lin, has_lin, has_rd = body[0], body[1], body[2], body[3], body[4], body[9]
    vx, vy, vz, qw, qx, qy, qz, wx, wy, wz = s
    fx, fy, fz, tx, ty, tz = w
    if has_lin or has_rd:
        # body-frame velocity R^T v = v - qw t' + q x t' with t' = 2 q x v
        ax = 2 * (qy * vz - qz * vy)
        ay = 2 * (qz * vx - qx * vz)
        az = 2 * (qx * vy - qy * vx)
        bx = vx - qw * ax + qy * az - qz * ay
        by = vy - qw * ay + qz * ax - qx * az
        bz = vz - qw * az + qx * ay - qy * ax
        if has_lin:  # linear drag on the body-frame velocity: F_b -= D R^T v
            fx -= lin[0] * bx
            fy -= lin[1] * by
            fz -= lin[2] * bz
        if has_rd:  # rotor drag: wrench -= K [v_b, w]
            fx -= kd[0] * bx + kd[1] * by + kd[2] * bz + kd[3] * wx + kd[4] * wy + kd[5] * wz
            fy -= kd[6] * bx + kd[7] * by + kd[8] * bz + kd[9] * wx + kd[10] * wy + kd[11] * wz
            fz -= kd[12] * bx + kd[13] * by + kd[14] * bz + kd[15] * wx + kd[16] * wy + kd[17] * wz
            tx -= kd[18] * bx + kd[19] * by + kd[20] * bz + kd[21] * wx + kd[22] * wy + kd[23] * wz
            ty -= kd[24] * bx + kd[25] * by + kd[26] * bz + kd[27] * wx + kd[28] * wy + kd[29] * wz
            tz -= kd[30] * bx + kd[31] * by + kd[32] * bz + kd[33] * wx + kd[34] * wy + kd[35] * wz
    # R F_b = F + qw t + q x t with t = 2 q x F
    ax = 2 * (qy * fz - qz * fy)
    ay = 2 * (qz * fx - qx * fz)
    az = 2 * (qx * fy - qy * fx)
    hx = jm[0] * wx + jm[1] * wy + jm[2] * wz
    hy = jm[1] * wx + jm[4] * wy + jm[5] * wz
    hz = jm[2] * wx + jm[5] * wy + jm[8] * wz
    mx = tx - (wy * hz - wz * hy)
    my = ty - (wz * hx - wx * hz)
    mz = tz - (wx * hy - wy * hx)
    return (
        (fx + qw * ax + qy * az - qz * ay) * inv_m,
        (fy + qw * ay + qz * ax - qx * az) * inv_m,
        (fz + qw * az + qx * ay - qy * ax) * inv_m + -GRAVITY,
        -0.5 * (qx * wx + qy * wy + qz * wz),
        0.5 * (qw * wx + qy * wz - qz * wy),
        0.5 * (qw * wy + qz * wx - qx * wz),
        0.5 * (qw * wz + qx * wy - qy * wx),
        ji[0] * mx + ji[1] * my + ji[2] * mz,
        ji[3] * mx + ji[4] * my + ji[5] * mz,
        ji[6] * mx + ji[7] * my + ji[8] * mz,
    )


@njit(cache=True)
def _speeds(f: np.ndarray) -> np.ndarray:
    """Rotor speeds up to sqrt(k_t): sqrt(max(f, 0)) elementwise, as numpy computes it."""
    out = np.empty(f.shape)
    for i in range(f.size):
        out.flat[i] = math.sqrt(_maximum(f.flat[i], 0.0))
    return out


@njit(cache=True)
def rest(body: tuple, u: np.ndarray, w0: np.ndarray, k0: np.ndarray) -> None:
    """The wrench `w0` and rotor-drag map `k0` of the motor states `u` (at a step's start)."""
    coeffs, rd, has_rd, b = body[5], body[8], body[9], body[10]
    f = np.empty(u.shape[0])
    for r in range(6):
        w0[r] = 0.0
    for i in range(u.shape[0]):
        f[i] = horner(coeffs[i], u[i])
        for r in range(6):
            w0[r] += f[i] * b[r, i]
    if has_rd:
        _copy(np.dot(_speeds(f), rd), k0)


@njit(cache=True)
def motors(
    body: tuple, u: np.ndarray, cmd: np.ndarray, nz: np.ndarray, uf: np.ndarray, half: np.ndarray, maps: np.ndarray
) -> np.ndarray:
    """Motor states at t+h into `uf` (exact lag, setpoints `cmd` held), the wrench at t+h/2 with
    the perturbation wrench `nz` into `half`, the rotor-drag maps at t+h/2 and t+h into `maps`
    (2, 36; with rotor drag); returns the wrench at t+h. Motors without lag are at their
    setpoint at both instants (the same numbers: computed once)."""
    coeffs, lag, instant, rd, has_rd, b = body[5], body[6], body[7], body[8], body[9], body[10]
    m = u.shape[0]
    wh, wf = np.zeros(6), np.zeros(6)
    fs = np.empty((2, m))
    for i in range(m):
        ui, ci = u[i], cmd[i]
        dh, df = (lag[i, 0], lag[i, 1]) if ci > ui else (lag[i, 2], lag[i, 3])
        v = ci + (ui - ci) * dh
        f1 = horner(coeffs[i], v)
        fs[0, i] = f1
        for r in range(6):
            wh[r] += f1 * b[r, i]
        if instant:
            uf[i] = v
            fs[1, i] = f1
            continue
        w = ci + (ui - ci) * df
        uf[i] = w
        f2 = horner(coeffs[i], w)
        fs[1, i] = f2
        for r in range(6):
            wf[r] += f2 * b[r, i]
    for r in range(6):
        half[r] = wh[r] + nz[r]
    if has_rd:  # as a pair: one matrix product's rounding
        both = np.dot(_speeds(fs), rd)
        _copy(both[0], maps[0])
        _copy(both[1], maps[1])
    return half.copy() if instant else wf + nz


@njit(cache=True)
def step(
    body: tuple, x: np.ndarray, u: np.ndarray, target: np.ndarray, nz: np.ndarray, w0: np.ndarray, k0: np.ndarray
) -> None:
    """One RK4 step of the rigid body from the 13-state `x`, the motors `u` lagging towards the
    held setpoints `target`, `nz` the perturbation wrench held over the step (thrust noise,
    effects); `x`, `u`, the wrench at the step's start `w0` and its rotor-drag map `k0` carried."""
    h, h2, h6 = body[11][0], body[11][1], body[11][2]
    uf, half, maps = np.empty(u.shape[0]), np.empty(6), np.empty((2, 36))
    full = motors(body, u, target, nz, uf, half, maps)
    kb, kc = (maps[0], maps[1]) if body[9] else (k0, k0)
    px, py, pz, vx, vy, vz, qw, qx, qy, qz, wx, wy, wz = x
    a0, a1, a2, a3, a4, a5, a6, a7, a8, a9 = deriv(
        body, (vx, vy, vz, qw, qx, qy, qz, wx, wy, wz),
        (w0[0] + nz[0], w0[1] + nz[1], w0[2] + nz[2], w0[3] + nz[3], w0[4] + nz[4], w0[5] + nz[5]), k0,
    )  # fmt: skip
    b = (half[0], half[1], half[2], half[3], half[4], half[5])
    b0, b1, b2, b3, b4, b5, b6, b7, b8, b9 = deriv(
        body, (vx + h2 * a0, vy + h2 * a1, vz + h2 * a2, qw + h2 * a3, qx + h2 * a4, qy + h2 * a5, qz + h2 * a6,
        wx + h2 * a7, wy + h2 * a8, wz + h2 * a9), b, kb,
    )  # fmt: skip
    c0, c1, c2, c3, c4, c5, c6, c7, c8, c9 = deriv(
        body, (vx + h2 * b0, vy + h2 * b1, vz + h2 * b2, qw + h2 * b3, qx + h2 * b4, qy + h2 * b5, qz + h2 * b6,
        wx + h2 * b7, wy + h2 * b8, wz + h2 * b9), b, kb,
    )  # fmt: skip
    e0, e1, e2, e3, e4, e5, e6, e7, e8, e9 = deriv(
        body, (vx + h * c0, vy + h * c1, vz + h * c2, qw + h * c3, qx + h * c4, qy + h * c5, qz + h * c6,
        wx + h * c7, wy + h * c8, wz + h * c9), (full[0], full[1], full[2], full[3], full[4], full[5]), kc,
    )  # fmt: skip
    # position: its derivative is the velocity, whose stages are v + (h/2) k1 etc.
    x[0] = px + h6 * (6 * vx + h * (a0 + b0 + c0))
    x[1] = py + h6 * (6 * vy + h * (a1 + b1 + c1))
    x[2] = pz + h6 * (6 * vz + h * (a2 + b2 + c2))
    qw += h6 * (a3 + 2 * (b3 + c3) + e3)
    qx += h6 * (a4 + 2 * (b4 + c4) + e4)
    qy += h6 * (a5 + 2 * (b5 + c5) + e5)
    qz += h6 * (a6 + 2 * (b6 + c6) + e6)
    n = 1.0 / math.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
    x[3] = vx + h6 * (a0 + 2 * (b0 + c0) + e0)
    x[4] = vy + h6 * (a1 + 2 * (b1 + c1) + e1)
    x[5] = vz + h6 * (a2 + 2 * (b2 + c2) + e2)
    x[6], x[7], x[8], x[9] = qw * n, qx * n, qy * n, qz * n
    x[10] = wx + h6 * (a7 + 2 * (b7 + c7) + e7)
    x[11] = wy + h6 * (a8 + 2 * (b8 + c8) + e8)
    x[12] = wz + h6 * (a9 + 2 * (b9 + c9) + e9)
    _copy(uf, u)
    for r in range(6):
        w0[r] = full[r] - nz[r]
    _copy(kc, k0)


@njit(cache=True)
def rotation(x: np.ndarray) -> np.ndarray:
    """The body -> world rotation matrix of the 13-state `x` (unit quaternion w, x, y, z)."""
    w, a, b, c = x[6], x[7], x[8], x[9]
    rot = np.empty((3, 3))
    rot[0, 0], rot[0, 1], rot[0, 2] = 1 - 2 * (b * b + c * c), 2 * (a * b - w * c), 2 * (a * c + w * b)
    rot[1, 0], rot[1, 1], rot[1, 2] = 2 * (a * b + w * c), 1 - 2 * (a * a + c * c), 2 * (b * c - w * a)
    rot[2, 0], rot[2, 1], rot[2, 2] = 2 * (a * c - w * b), 2 * (b * c + w * a), 1 - 2 * (a * a + b * b)
    return rot


@njit(cache=True)
def rotor_thrust(k: int, x: np.ndarray, f: np.ndarray, rot: np.ndarray, fx: tuple) -> None:
    """True thrusts of nominal thrusts `f` (in place) at step k and 13-state `x` (attitude
    matrix `rot`): saturation at the step's voltage, recorded in `sat`, then ground effect
    (Cheeseman & Bennett: 1 / (1 - (R / 4z)^2), z held >= R/2)."""
    hubs, sat, vbat = fx[1], fx[9], fx[10]
    saturation, f_full, v_ref, radius, ground_z, exponent = fx[12], fx[13], fx[14], fx[15], fx[16], fx[24]
    if saturation > 0:
        top = saturation * f_full * (vbat[k] / v_ref) ** exponent
        for i in range(f.shape[0]):
            sat[k, i] = _minimum(1.0, top / _maximum(f[i], 1e-12))
            f[i] = f[i] * sat[k, i]
    if radius > 0:
        hz = np.dot(hubs, rot[2])
        for i in range(f.shape[0]):
            z = _maximum(x[2] + hz[i] - ground_z, 0.5 * radius)
            q = radius / (4.0 * z)
            f[i] = f[i] * (1.0 / (1.0 - q * q))


@njit(cache=True)
def air_wrench(k: int, x: np.ndarray, f: np.ndarray, rot: np.ndarray, fx: tuple, out: np.ndarray) -> None:
    """The wrench (into `out`, 6) the air adds to the plant's still-air drag terms at step k:
    the wind's part of the linear body drag and of the rotor drag (rotor thrusts `f`), and the
    quadratic body drag on the velocity relative to the air."""
    wind, drag, rd3, has_rd, dq, has_dq = fx[0], fx[2], fx[3], fx[4], fx[5], fx[6]
    w_b = np.dot(wind[k], rot)
    for j in range(3):
        out[j] = drag[j] * w_b[j]
        out[3 + j] = 0.0
    if has_rd:  # -K [v_b - w_b, w] = -K [v_b, w] + K [w_b, 0]
        per = np.empty((rd3.shape[0], 6))
        for i in range(rd3.shape[0]):
            _copy(np.dot(rd3[i], w_b), per[i])
        add = np.dot(per.T, _speeds(f))
        for j in range(6):
            out[j] = out[j] + add[j]
    if has_dq:
        v_a = np.dot(x[3:6], rot) - w_b
        speed = math.sqrt(np.dot(v_a, v_a))
        for j in range(3):
            out[j] = out[j] - dq[j] * speed * v_a[j]


@njit(cache=True)
def effects_step(k: int, x: np.ndarray, u: np.ndarray, nz: np.ndarray, fx: tuple, out: np.ndarray) -> None:
    """The effects' hook at step k: records the extra rotor thrusts `df` and the air's wrench
    `extra`, and puts the step's perturbation wrench (`nz` plus theirs) into `out`."""
    coeffs, b, df, extra = fx[25], fx[26], fx[7], fx[8]
    f0 = np.empty(u.shape[0])
    for i in range(u.shape[0]):
        f0[i] = horner(coeffs[i], u[i])
    rot = rotation(x)
    f = f0.copy()
    rotor_thrust(k, x, f, rot, fx)
    for i in range(u.shape[0]):
        df[k, i] = f[i] - f0[i]
    air_wrench(k, x, f0, rot, fx, extra[k])
    w = np.dot(b, df[k])
    for j in range(6):
        out[j] = nz[j] + (w[j] + extra[k, j])


@njit(cache=True)
def battery(k: int, u: np.ndarray, cmd: np.ndarray, fx: tuple, target: np.ndarray) -> None:
    """The battery at step k (Thevenin: V = V0 (1 - drain q - sag L), L = (sum f / m g)^1.5 from
    the thrusts at the step's start, q the charge drawn): records `vbat`, and the motors'
    setpoints (into `target`) are the duty cycles `cmd` times V / V_ref (`cmd` for speed commands)."""
    coeffs, df, vbat, state = fx[25], fx[7], fx[10], fx[11]
    v0, drain, sag, dt, mg, v_ref, scales = fx[17], fx[18], fx[19], fx[20], fx[21], fx[14], fx[22]
    f = np.empty(u.shape[0])
    for i in range(u.shape[0]):
        f[i] = horner(coeffs[i], u[i]) + (df[k - 1, i] if k else 0.0)
    s = np_sum(f)
    load = (0.0 if s < 0.0 else s) / mg
    load **= 1.5
    v = v0 * (1.0 - drain * state[0] - sag * load)
    state[0] += load * dt
    state[1] = load
    vbat[k] = v
    for i in range(u.shape[0]):
        target[i] = cmd[i] * (v / v_ref) if scales else cmd[i]


@njit(cache=True)
def run(
    i0: int,
    n: int,
    every: int,
    state: tuple,
    body: tuple,
    ctrl: tuple,
    has_ctrl: bool,
    fx: tuple,
    has_fx: bool,
    nz: np.ndarray,
    rows: tuple,
) -> None:
    """Steps i0 .. i0+n-1 of the flight: at each control instant (every `every`-th step) the
    commands (the controller's with `has_ctrl`, else those in `cmd`) clamped to [cmd_min, cmd_max] and held; the effects'
    setpoints and hook with `has_fx`; the row of each step (state at its start, motor states,
    commands in force) into `rows` (xs, us, cmds, first row); `nz` (n, 6) the thrust noise's wrench.
    `state` = (x, u, cmd, w0, k0) is carried to the next call."""
    x, u, cmd, w0, k0 = state
    xs, us, cmds, j0 = rows
    lo, hi, instant = body[12], body[13], body[7]
    bat = has_fx and fx[23]
    target, hooked = np.empty(u.shape[0]), np.empty(6)
    for j in range(n):
        i = i0 + j
        new = i % every == 0
        if new:
            if has_ctrl:
                control(i, x, ctrl, cmd)
            for r in range(cmd.shape[0]):
                c = cmd[r]
                cmd[r] = lo if c < lo else (hi if c > hi else c)
        if bat:
            battery(i, u, cmd, fx, target)
        else:
            _copy(cmd, target)
        if instant and (new or bat):
            _copy(target, u)
            rest(body, u, w0, k0)
        _copy(x, xs[j0 + j])
        _copy(u, us[j0 + j])
        _copy(cmd, cmds[j0 + j])
        if has_fx:
            effects_step(i, x, u, nz[j], fx, hooked)
            step(body, x, u, target, hooked, w0, k0)
        else:
            step(body, x, u, target, nz[j], w0, k0)


def no_control(m: int) -> tuple:
    """A controller tuple for runs whose commands come from Python (the kernel's types, unused)."""
    z = np.zeros
    return z((1, 16)), z(12), 0.0, 0.0, 0.0, 0.0, 1, z((m, 4)), (z((m, 7)), False, z((m, 1)), z(m), z(m), 0.0, 0.0)


def no_effects(m: int) -> tuple:
    """An effects tuple for runs without body effects (the kernel's types, unused)."""
    z = np.zeros
    arrays = (z((0, 3)), z((m, 3)), z(3), z((m, 6, 3)), False, z(3), False, z((0, m)), z((0, 6)), z((0, m)), z(0), z(2))
    return (*arrays, *(0.0,) * 10, False, False, 2.0, z((m, 1)), z((6, m), order="F"))
