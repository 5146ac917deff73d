"""`rotorid.identified`: the Result -> Vehicle mapping that defines `Result.vehicle`, and the
shared result builder."""

from __future__ import annotations

import numpy as np
import pytest

from rotorid.identified import parallel_axis, vehicle_from_result, with_vehicle
from rotorid.result import Estimate, Result, Truth, build_result, compare
from rotorid.vehicle import Vehicle


def _tls_like() -> Result:
    """Inertia about the body origin and a first moment, as TLS reports them."""
    m, c = 1.2, np.array([0.02, -0.01, 0.005])
    i_com = np.array([[0.011, 1e-4, 0.0], [1e-4, 0.012, 0.0], [0.0, 0.0, 0.02]])
    i_o = parallel_axis(i_com, m, c)
    names = ("I_xx", "I_yy", "I_zz", "I_xy", "I_xz", "I_yz")
    idx = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))
    est = {"k_t": (2.5, 0.01), "k_d": (0.05, 0.001)}
    est |= {n: (i_o[i, j], 0.0) for n, (i, j) in zip(names, idx, strict=True)}
    est |= {f"ms_{a}": (m * v, 0.0) for a, v in zip("xyz", c, strict=True)}
    return build_result("tls", est, {"inertia_about": "origin", "masses": {"A": m}, "configs": ["A"], "tm": 0.02})


def test_result_vehicle_is_a_fixed_point_of_the_mapping() -> None:
    """`Result.vehicle` (the identified vehicle) maps onto itself: validation and export give
    the same model whether they start from the input vehicle or from the stored one."""
    base = Vehicle.preset("quad-x", arm=0.15, mass=1.0)
    base = base.replace(inertia=np.diag([0.01, 0.01, 0.018]))
    for result in (
        _tls_like(),
        build_result(
            "delay", {"thrust_c1": (0.1, 0.0), "thrust_c2": (2.0, 0.0), "tm": (0.03, 0.0), "I_xx": (0.02, 0)}, {}
        ),
        build_result(
            "online",
            {
                "I_xx": (0.02, 0.0),
                "I_yy": (0.021, 0.0),
                "I_zz": (0.03, 0.0),
                "com_x": (0.01, 0.0),
                "mass": (1.1, 0.0),
                "imu_z": (-0.01, 0.0),
            },
            {},
        ),
    ):
        once = Vehicle.from_dict(with_vehicle(result, base).vehicle)
        twice = vehicle_from_result(result, once)
        for field in ("mass", "inertia", "com", "imu_offset", "thrust_coeffs", "k_tau", "tm_rise", "tm_fall"):
            a, b = getattr(twice, field), getattr(once, field)
            assert (a is None) == (b is None), field
            if b is not None:
                np.testing.assert_allclose(a, b, rtol=1e-12, err_msg=field)
    # TLS: the origin inertia is moved to the CoM (parallel-axis theorem), K_tau = k_d / k_t, T_m assumed
    v = vehicle_from_result(_tls_like(), base)
    np.testing.assert_allclose(v.inertia, [[0.011, 1e-4, 0.0], [1e-4, 0.012, 0.0], [0.0, 0.0, 0.02]], atol=1e-15)
    np.testing.assert_allclose(v.com, [0.02, -0.01, 0.005], rtol=1e-12)
    assert v.mass == 1.2 and v.k_tau == pytest.approx(0.02) and v.tm_rise == v.tm_fall == 0.02


def test_with_vehicle_leaves_none_and_says_why() -> None:
    """A result that identifies only I_xx on a vehicle with no inertia gives no vehicle, and a note."""
    base = Vehicle.preset("quad-x", arm=0.15, mass=1.0).replace(inertia=None)
    r = with_vehicle(build_result("online", {"I_xx": (0.02, 0.001)}, {}), base)
    assert r.vehicle is None and "only some of I_xx" in r.notes[-1]


def test_build_result_units_order_and_compare() -> None:
    r = build_result("delay", {"tm": (0.03, 0.001), "thrust_c4_m2": (1.5, 0.1), "hover_cmd": (0.4, 0.01)}, {"a": 1})
    assert list(r.params) == ["tm", "thrust_c4_m2", "hover_cmd"]
    assert [e.unit for e in r.params.values()] == ["s", "N", "1"]
    assert r.params["tm"] == Estimate(0.03, 0.001, "s") and r.settings == {"a": 1} and r.vehicle is None
    err = compare(r, Truth({"tm": 0.025, "hover_cmd": 0.0}))
    assert err["tm"] == pytest.approx(20.0) and np.isnan(err["hover_cmd"]) and "thrust_c4_m2" not in err
    assert "20.00" in r.summary(Truth({"tm": 0.025}))
