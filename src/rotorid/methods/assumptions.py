"""The default uncertainties of what the methods assume and no flight can measure, shared so
that every method states the same assumption with the same spread (every σ covers the assumptions it rests on).
Constants only: the streaming online estimator imports this without scipy."""

from typing import Any

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
