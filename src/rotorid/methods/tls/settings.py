"""The settings of IDIM-TLS (`TlsSettings`) and the names of its unknowns (eq. 10)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from rotorid.errors import RotoridError
from rotorid.methods.assumptions import IMU_MISALIGN_DEG, check_imu, imu_scale_option, motor_spread_option
from rotorid.options import band_option, internal, option, seconds_or_auto, voltage_option

if TYPE_CHECKING:  # the command line reads these settings at start-up: no numpy here
    from rotorid.motion import MotionSettings

#: Largest IMU lag behind the rotor signals (s) `TlsSettings.imu_delay` takes or searches: several
#: times the group delay of a flight controller's gyro low-pass (√2 / (2π f_c) = 7.5 ms for a
#: second-order Butterworth at PX4's default IMU_GYRO_CUTOFF of 30 Hz).
MAX_IMU_DELAY = 0.025

#: Largest IMU lag (s) `choose_imu_delay` adopts on ordinary held-out evidence: twice that group
#: delay (a gyro low-pass and a logging step); beyond it only strong evidence keeps a searched lag.
PLAUSIBLE_IMU_DELAY = 0.015


#: Rigid-body unknowns chi of eq. (10), in the paper's order.
CHI = ("ms_x", "ms_y", "ms_z", "I_xx", "I_yy", "I_zz", "I_xy", "I_xz", "I_yz")


#: Propeller unknowns chi_k.
CHI_K = ("k_t", "k_d")


#: The rotor-drag unknown (`TlsSettings.rotor_drag`, `motion.drag_regressor`): the column of W_t
#: after the rigid-body ones.
K_RD = "k_rd"

#: The rotor-inflow (axial rotor-drag) unknown (`TlsSettings.rotor_inflow`, `motion.drag_regressor`
#: with `axial`): the column of W_t after k_rd.
K_IN = "k_in"

#: The body (fuselage) drag unknowns, one per body axis (`TlsSettings.body_drag`): after k_rd, k_in.
BODY_DRAG = ("d_bx", "d_by", "d_bz")

#: The forms of the body drag `TlsSettings.body_drag` takes ("auto" chooses among the last three).
BODY_DRAG_FORMS = ("auto", "off", "linear", "quadratic")


@dataclass(frozen=True)
class TlsSettings:
    """Options of the IDIM-TLS method. None means "chosen from the data" (the resolved value
    is recorded in `Result.settings`). What the defaults were measured on is in docs/validation.md
    ("Measured reasons behind the defaults").

    - `source`, `tm`, `band`, `speed`, `parallel_cutoff`, `trim`, `order`, `mocap_delay`: how
      motion and rotor terms are measured and filtered (`rotorid.motion.MotionSettings`);
      `parallel_cutoff` is the low-pass applied to every column of W_t before decimation.
    - `r_sigma`: essential parameters are kept when max/min %sigma < r_sigma (Sec. III-B).
    - `cancel_z`: a parameter is cancelled only while its estimate is within `cancel_z` σ of
      zero (%σ > 100 / cancel_z; eq. 20's σ, as the ranking): Six et al. cancel parameters that
      "have no significant contribution in the dynamic model", but setting a parameter that is
      not zero to zero biases the others by its omitted-variable bias (Greene, Econometric
      Analysis, Sec. 4.3.2), the same in every flight (`cancellation_var` widens σ to cover it).
      The default 2 is a t test at the 5 % level, the significance the essential-parameter
      literature asks of a parameter's contribution (Pham & Gautier 1991: the residual's
      increase on cancelling it). Two exceptions keep the paper's rule: the yaw pair
      (`YAW_PAIR`) and a fit whose block weighting has collapsed
      (`regression.weighting_collapsed`). A parameter cancelled this way comes back when leaving
      it out moves another beyond its σ in the bias-compensated final fit (`_restored`). inf
      is the paper's rule alone.
    - `weighted`: scale each wrench-row block by the inverse of its residual std.
    - `decimate`: default floor(fs / (2 parallel_cutoff)) (`TlsSettings.decimation`).
    - `essential`: run the essential-parameter selection (else keep all 2 + 9 C unknowns).
    - `acc_bias`: IMU source: estimate a constant accelerometer bias per airborne piece
      (`idim_rows`; on by default). In the paper's model (False) it is absorbed by k_t (a z
      bias b_z biases k_t by b_z / g) and, through the essential-parameter selection, the first
      moments. With it, the estimate does not depend on a constant bias at all; k_t keeps only
      what the thrust variation tells (its %σ grows). The essential set is chosen with r_σ's
      denominator from the paper's model (`essential`), which keeps the parameter sets of Six
      et al. Tables I-II. The gyro bias (which Six et al. remove with an EKF) needs no state
      here: it enters only the small gyroscopic terms.
    - `covariance`: "hac" (default) reports the sandwich of the final fit robust to rows
      correlated in time (`covariance.tls_hac_cov`, `covariance.bc_hac_cov`), its meat the
      equal-weighted cosine estimate of the scores' long-run variance (`covariance.ewc_meat`):
      the twice-differentiated pose's noise dominates the motion-capture scores, and a lag
      window leaks it into its estimate at frequency 0; "iid" the paper's eq. 18-20
      (independent rows). The essential-parameter selection always ranks by eq. 20's %σ, the
      scale the paper's r_σ = 250 was set on.
    - `motor_spread`: assumed relative 1σ spread of the rotors' gains about their mean (one
      k_t, k_d for all rotors is the paper's model, eq. 8-9), used where the gains are not
      estimated (`rotor_gains`). A rotor stronger by ε_i adds the wrench ε_i k_t u_i² [a_i;
      r_i x a_i]: in hover its moment equals a CoM shift Δc = Σ ε_i r_i / n (horizontal), and
      in manoeuvres it scales the roll/pitch input (I_xx, I_yy). Its effect enters σ as
      σ_ε² J (I - 11ᵀ/n) Jᵀ, J_i = ∂χ/∂ε_i of the final fit (the common mode is k_t itself);
      a parameter whose variance is mostly this term is labelled assumed. 0 declares the
      rotors equal (nothing assumed, no gain estimated). Default `MOTOR_SPREAD` (measured on
      a real Crazyflie).
    - `imu_scale`, `imu_misalign`: assumed 1σ scale error of the gyro and accelerometer per
      axis (fraction) and misalignment of the IMU's axes from the body's (degrees about each
      axis, one rotation for both sensors), IMU source only: the rows are written in the IMU's
      axes (eq. 4-7), so no flight tells them apart. They enter σ as Σ_k σ_k² J_k J_kᵀ, J_k the
      final fit re-solved for the gyro and accelerometer data scaled or turned along direction k
      (`solve.imu_part`); a parameter whose variance is mostly this term is labelled assumed.
      0 and 0: a calibrated IMU (nothing assumed). Defaults `IMU_SCALE`, `IMU_MISALIGN_DEG`.
    - `rotor_gains`: estimate each rotor's own thrust coefficient k_t g_i (on by default;
      `estimate_rotor_gains`). The hover moment of the gains equals a CoM shift, but the force rows
      see every rotor's thrust through the accelerometer (m s_z = k_t Σ g_i u_i²) and attitude
      manoeuvres drive the u_i² apart, so a flight that rolls and pitches separates them; the
      moment rows then separate the CoM. Per configuration (a battery or propeller change
      between flights changes them): the first one's gains average 1 (k_t is its mean rotor),
      the others' are free. Where a rotor's gain is not known to better than `motor_spread`
      (σ ≥ it, or a degenerate fit: a flight without enough roll and pitch), the spread is
      assumed as before and a note says so.
    - `imu_delay`: s the IMU signals lag the rotor signals (the IMU source's motion; the mocap
      source's pose lag, `mocap_delay`, adds it when measured); None estimates it from the
      flights (`estimate_imu_delay`) and keeps it only when it predicts held-out segments of them
      better than no lag (`choose_imu_delay`; else 0, the paper's model, and a note). Eq. 10 pairs
      the rotor wrench with the motion at the same instant: a lag of the gyro/accelerometer
      pipeline (on-board filters, logging) behind the rotor channel biases every parameter.
      Default None (estimated; costs a few more fits); 0 is the paper's model.
    - `mocap_delay`: s the logged pose lags the rotor signals (the pose is read at t + delay):
      the motion of the mocap source, the velocity of the rotor-drag column. None (default)
      measures it where the flights log an accelerometer: the pose's lag behind the IMU
      (`motion.pose_lag`: the body-frame specific force of the differentiated pose against the
      accelerometer) plus the IMU's own lag (`imu_delay`; for the mocap source found by the
      IMU-source model of the same flights, `_imu_lag`, where `imu_delay` is None); 0 where it
      cannot be timed (`identify` measures it; `idim_rows` called alone reads None as 0).
      Unaligned, the drag's velocity lags the rotor wrench it is paired with, which biases ms_z.
    - `yaw_moment`: estimate a constant yaw moment per airborne piece (on by default): one
      nuisance column per piece in the M_z rows, projected out by centring those rows as the
      accelerometer bias centres the force rows (`idim_rows`). Unequal rotors (`motor_spread`)
      make Σ ±k_d(1 + ε_i) u_i² non-zero at hover, a constant the paper's model (eq. 9) hands
      to k_d and I_zz. With it, k_d and I_zz rest only on the yaw moment's variation.
    - `rotor_drag`: model the rotor drag (on by default, when every flight logs its attitude
      and a position or velocity): each rotor feels the in-plane force -k_rd u_i P_i v_i
      against its hub's airspeed v_i (still air), with its moment about the origin
      (`motion.drag_regressor`); k_rd is one more unknown of W_t.
    - `rotor_inflow`: try the rotor inflow (off by default; with a velocity as `rotor_drag`): a
      rotor climbing through its own inflow loses thrust, linearly in its speed and the climb at a
      fixed rotor speed (blade-element and momentum theory: dT / T ≈ -0.8 v_c / v_hover; Bangura &
      Mahony, ACRA 2012), the axial force -k_in u_i a_i a_iᵀ v_i with its moment
      (`motion.drag_regressor` with `axial`), k_in one more unknown shared by every configuration.
      Kept only when it predicts held-out segments of the flights better than the model without it
      and is not below zero by more than 2σ (`terms.fit_terms`), else the model without it stands.
      Off by default: k_in also takes every other axial force the model lacks (a fuselage drag
      along z, ground effect, saturation), and on the randomized calibration flights it came out
      4-40σ from the simulator's inflow, pulling I_xx, I_yy and k_d with it (six-config-a+b-random
      with motion capture, seed 23: I_xx +12σ); a flight known to climb through its own inflow
      can ask it.
    - `body_drag`: model a body (fuselage) drag acting at the centre of mass, per body axis j
      F_j = -d_j v_j ("linear") or -d_j |v| v_j ("quadratic", the parasitic drag 1/2 rho C_d A_j:
      Mahony, Kumar & Corke, IEEE RAM 2012, Sec. "Aerodynamic effects"; Svacha et al., ICUAS 2017,
      eq. 4), v the body-axis airspeed (still air) from the pose: three columns of the force rows
      (unknowns `BODY_DRAG`). Acting at the centre of mass, its moment about the origin is
      c x F = ms x F / m, so the moment rows' -[s]x ms uses s less the drag's specific force F / m:
      a first pass's d (`body_coef`) is removed from s throughout, as the accelerometer bias is,
      and the columns estimate what remains. Without it the rotor drag k_rd absorbs the body
      drag's in-plane force and ms_z the horizontal specific force it leaves in -[s]x ms.
      "auto" (default) keeps the form whose model predicts held-out segments of the flights
      better than the model without it (`terms.choose_body_drag`), else "off"; needs attitude and
      a position or velocity, like `rotor_drag`.
    - `body_coef`: the body drag d removed from the specific force before the rows are built
      (`body_drag`; None: none), found by a first pass; `body_scale`: the factor the body drag's
      columns are multiplied by (None: 1), the flights' mean Σ_i u_i, which puts them on the
      rotor drag's scale: TLS weighs every column's error alike, and a column far smaller than
      the rotor drag's, nearly collinear with it, takes the smallest singular direction (the
      fit collapses).
    - `ground`: "auto", "on" or "off": ground effect, each rotor's thrust times 1 / (1 - c / h²) at
      its hub's height h above a ground level z_g below the flights (Cheeseman & Bennett 1955,
      c = R² / 16 for rotor radius R; `rows.ground_gain`), where every flight logs a position and
      attitude. To first order in c and for a ground level on a short grid the term is one column
      of W_t, the thrust columns of u² / h², with the unknown k_t c; "auto" (default) keeps the
      level whose model predicts held-out segments best, and only when it predicts them better
      than the model without it (`ground.choose_ground`; the kept (z_g, c) then refined on the
      exact factor), else the model without it stands. Near the
      ground the position controller asks more thrust, so an unmodelled factor correlates with
      u² and k_t takes up more than its mean (six-config-a at 2 R: k_t +3 %, 6σ).
      `ground_model` (z_g, c) is what the identification found (None: no ground effect).
    - `eiv`: errors in variables. The sensor noise of the gyro (differentiated into ω̇) and of the
      accelerometer sits in the regressors, which biases TLS and least squares alike (toward
      zero for I_zz/k_d, ms_z, k_t). With it (default) the final fit is bias-compensated least
      squares (`regression.bias_compensated`) with the noise moment each row's columns carry,
      measured from the flight's own noise floor above the rigid-body band (`noise_moment`); the
      essential set is still chosen by the paper's TLS. σ carries the doubt about those floors
      (`floor_var`): their sampling error, or, where a sensor's or logger's low-pass (or
      vibration) makes the spectrum just below where they are read differ from them, that
      level (`floor_doubt`), and a note names it when it is a quarter of a parameter's
      variance. A disturbance torque (thrust fluctuation) is an error in ω̇ no floor shows: its
      level is read from the moment rows' residuals (`disturbance_moment`) and compensated alike,
      its doubt in σ. False: the paper's TLS throughout.
    - `voltage`: "auto", "on" or "off": the battery voltage in the rotor terms from commands,
      u (V / V_ref)^α (`rotorid.methods.voltage`; measured rotor speeds need none); "auto"
      keeps it where it predicts held-out segments better (`tls.voltage.choose_voltage`).
      `voltage_model` (α, V_ref) is what the identification found (None: the commands alone).
    """

    source: str = option("imu", "Motion data from 'imu' or 'mocap'.")
    tm: float | None = option(None, "Motor time constant (s) for delay-aware regressors.", kind=float)
    r_sigma: float = option(250.0, "Essential-parameter threshold max/min %σ.")
    cancel_z: float = option(
        2.0, "Cancel an essential-parameter candidate only within this many σ of zero (inf: the paper's rule)."
    )
    band: tuple[float, float] | None = band_option()
    weighted: bool = option(True, "Weight each wrench row block by its residual σ.")
    speed: str = option("auto", "Rotor terms from auto, cmd (the paper) or rotor_speed (measured).")
    parallel_cutoff: float | None = internal(None)
    decimate: int | None = internal(None)
    trim: float | None = internal(None)
    order: int = internal(4)
    essential: bool = internal(True)
    mocap_delay: float | None = option(
        None,
        "Seconds the pose lags the rotor signals, or 'auto' (measured against the accelerometer).",
        auto=True,
        parse=seconds_or_auto,
    )
    max_weight_iter: int = internal(20)
    covariance: str = internal("hac")
    acc_bias: bool = option(True, "Estimate an accelerometer bias per airborne piece (IMU source).")
    motor_spread: float = motor_spread_option()
    imu_scale: float = imu_scale_option()
    imu_misalign: float = option(
        IMU_MISALIGN_DEG,
        "Assumed 1σ misalignment of the IMU's axes from the body's, degrees about each axis (0: a calibrated IMU); enters σ.",
    )
    rotor_gains: bool = option(
        True,
        "Estimate each rotor's own thrust coefficient (k_t_mI); where the flights do not separate them, "
        "their --motor-spread is assumed.",
    )
    imu_delay: float | None = option(
        None,
        "Seconds the IMU lags the rotor signals, or 'auto' (estimated from the flights).",
        auto=True,
        parse=seconds_or_auto,
    )
    yaw_moment: bool = option(True, "Estimate a constant yaw moment per airborne piece (unequal rotors).")
    rotor_drag: bool = option(
        True, "Model the rotor drag (in-plane hub force, coefficient k_rd; needs attitude and position)."
    )
    rotor_inflow: bool = option(
        False,
        "Try the rotor inflow (thrust lost climbing through the rotor's own inflow, coefficient k_in; kept when it "
        "predicts held-out segments better; needs attitude and position).",
    )
    body_drag: str = option(
        "auto",
        "Model a body (fuselage) drag: 'linear', 'quadratic', 'off', or 'auto' (kept when it predicts held-out "
        "segments better).",
    )
    body_coef: tuple[float, float, float] | None = internal(None)
    body_scale: float | None = internal(None)
    ground: str = option(
        "auto",
        "Model ground effect (thrust rising near the ground): 'on', 'off', or 'auto' (kept when it predicts held-out "
        "segments better).",
    )
    ground_model: tuple[float, float] | None = internal(None)
    eiv: bool = internal(True)
    voltage: str = voltage_option()
    voltage_model: tuple[float, float] | None = internal(None)

    @property
    def centred(self) -> bool:
        """Whether the force rows are centred for an accelerometer bias (IMU source only)."""
        return self.acc_bias and self.source == "imu"

    @property
    def nuisance(self) -> bool:
        """Whether any row is centred for a nuisance constant (accelerometer bias, yaw moment)."""
        return self.centred or self.yaw_moment

    @property
    def motion(self) -> MotionSettings:
        """The motion-measurement part of the settings (defaults not yet filled)."""
        from rotorid.motion import MotionSettings

        return MotionSettings(
            source=self.source,
            tm=self.tm,
            band=self.band,
            speed=self.speed,
            parallel_cutoff=self.parallel_cutoff,
            trim=self.trim,
            order=self.order,
            mocap_delay=self.mocap_delay,
            voltage_model=self.voltage_model,
        )

    def decimation(self, ms: MotionSettings) -> int:
        """Decimation factor for concrete motion settings: `decimate`, or floor(fs / (2 f_c))
        with f_c = `parallel_cutoff`.

        Every column of W_t is low-passed at f_c first, so the rows carry at most 2 f_c
        independent samples per second (Shannon): the autocorrelation of noise band-limited
        to f_c is sinc(2 f_c tau), zero first at tau = 1/(2 f_c). Keeping one row per 1/(2 f_c)
        leaves rows as nearly uncorrelated as the filter allows, which eq. 18 assumes; denser
        rows add no information but make eq. 20's sigma too small. Whatever
        correlation remains (model error, slow drifts) is left to the HAC covariance
        (`covariance.tls_hac_cov`)."""
        return self.decimate or max(1, int(ms.fs / (2.0 * ms.parallel_cutoff)))

    def resolve(self, fs: float) -> dict[str, Any]:
        """Concrete settings for data sampled at `fs` Hz (every default filled in)."""
        from rotorid.methods.covariance import COV_TYPES

        if not self.r_sigma > 1:
            raise RotoridError(f"--r-sigma must exceed 1, got {self.r_sigma}")
        if not self.cancel_z > 0:
            raise RotoridError(f"--cancel-z must be positive, got {self.cancel_z}")
        if not 0 <= self.motor_spread < 1:
            raise RotoridError(f"--motor-spread must be a fraction in [0, 1), got {self.motor_spread}")
        check_imu(self.imu_scale, self.imu_misalign)
        if self.covariance not in COV_TYPES:
            raise RotoridError(f"TLS covariance must be {' or '.join(map(repr, COV_TYPES))}, got '{self.covariance}'")
        if self.voltage not in ("auto", "on", "off"):
            raise RotoridError(f"--voltage must be auto, on or off, got '{self.voltage}'")
        if self.body_drag not in BODY_DRAG_FORMS:
            raise RotoridError(f"--body-drag must be one of {', '.join(BODY_DRAG_FORMS)}, got '{self.body_drag}'")
        if self.ground not in ("auto", "on", "off"):
            raise RotoridError(f"--ground must be auto, on or off, got '{self.ground}'")
        if self.imu_delay is not None and not abs(self.imu_delay) <= MAX_IMU_DELAY:
            raise RotoridError(f"--imu-delay must be within ±{MAX_IMU_DELAY:g} s, got {self.imu_delay}")
        ms = self.motion.at(fs)
        return asdict(self) | ms.to_dict() | {"decimate": int(self.decimation(ms))}
