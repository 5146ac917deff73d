"""The default uncertainties of what the methods assume and no flight can measure, shared so
that every method states the same assumption with the same spread (every σ covers the assumptions it rests on).
Constants only: the streaming online estimator imports this without scipy."""

from typing import Any

from rotorid.errors import RotoridError
from rotorid.options import option

#: Relative 1σ spread of the rotors' gains about their mean (thrust, and in tls the drag torque
#: with it): tls and online take one coefficient for all rotors. Measured on a real Crazyflie
#: flight: the per-motor mean u² projected on the yaw pattern (±1 by spin direction, which no
#: CoM offset can produce; for independent gains its 1σ is the spread).
MOTOR_SPREAD = 0.03


def motor_spread_option() -> Any:
    """The `motor_spread` settings field of the methods that assume it (tls, online): one
    `--motor-spread` for both."""
    return option(
        MOTOR_SPREAD,
        "Assumed 1σ spread of the rotors' gains (fraction; 0: identical rotors); enters σ (tls, online).",
        shared=True,
    )


#: σ (m/s²) of an uncalibrated MEMS accelerometer's z bias: its zero-g offset, ±20 mg typ. for
#: the BMI088 of the Crazyflie 2.1 (Bosch BST-BMI088-DS001, Table 2).
ACC_BIAS_Z_SIGMA = 0.2


#: Relative 1σ error of an uncalibrated MEMS gyro's and accelerometer's scale, per axis: the
#: InvenSense MPU-6000 gives a sensitivity scale-factor tolerance of ±3 % (gyro) and an initial
#: calibration tolerance of ±3 % (accelerometer), typ. (PS-MPU-6000A-00 rev. 3.4, Tables 6.1-6.2),
#: taken here as 3σ; newer parts (Bosch BMI088, TDK ICM-42688-P) state tighter. 0: a calibrated IMU.
IMU_SCALE = 0.01


def imu_scale_option() -> Any:
    """The `imu_scale` settings field of the methods whose σ carry the IMU's scale (tls, delay):
    one `--imu-scale` for both."""
    return option(
        IMU_SCALE,
        "Assumed 1σ scale error of the IMU's gyro and accelerometer per axis (fraction; 0: a calibrated IMU); "
        "enters σ (tls, delay).",
        shared=True,
    )


#: 1σ misalignment of the IMU's axes from the body's, degrees, about each axis: a cross-axis
#: sensitivity of ±2 % typ. (MPU-6000, as above; ≈ 1.1° as a 2σ) and a board mounted by hand, a
#: fraction of a degree. One rotation shared by the gyro and the accelerometer (one package).
IMU_MISALIGN_DEG = 0.5


def check_imu(scale: float, misalign: float) -> None:
    """Raise `RotoridError` unless the IMU assumptions are a scale fraction in [0, 0.5) and a
    misalignment in [0, 10] degrees (a first-order spread; beyond, calibrate the IMU)."""
    if not 0 <= scale < 0.5:
        raise RotoridError(f"--imu-scale must be a fraction in [0, 0.5), got {scale}; 0 for a calibrated IMU")
    if not 0 <= misalign <= 10:
        raise RotoridError(f"--imu-misalign must be degrees in [0, 10], got {misalign}; 0 for a calibrated IMU")
