"""One declaration for each option (issue 33): the settings dataclasses declare their flags, the
command line and `Request.settings` are made from them, and no default is written twice."""

from __future__ import annotations

import dataclasses

import pytest
import typer

from rotorid.cli import app
from rotorid.errors import RotoridError
from rotorid.options import internal, option, options_of, undeclared
from rotorid.registry import methods
from rotorid.runs import Request
from rotorid.vehicle import Vehicle

#: `rotorid identify`'s own options (not a method's): the run's, the cache's and the readers'.
GENERAL = {"method", "vehicle", "out", "allow_corrupt", "no_cache", "imu_source", "imu", "motor_poles", "pwm_range"}


def _flags() -> dict[str, str]:
    cmd = typer.main.get_command(app).commands["identify"]
    return {p.name: p.opts[0] for p in cmd.params if p.param_type_name == "option" and p.name not in GENERAL}


def test_every_flag_is_a_settings_field_or_input_and_every_field_a_flag_or_internal() -> None:
    flags = _flags()
    owned: set[str] = set()
    for m in methods().values():
        cls = m.load("settings")
        assert undeclared(cls) == [], m.name  # each field: option(...) or internal(...)
        fields = {f.name for f in dataclasses.fields(cls)}
        inputs = {o.name for o in m.inputs}
        assert not fields & inputs, m.name
        assert set(options_of(cls)) <= fields and set(m.options) == inputs | set(options_of(cls)), m.name
        owned |= set(m.options)
    assert set(flags) == owned
    assert flags["motor_spread"] == "--motor-spread" and flags["imu_delay"] == "--imu-delay"
    assert {"tm_grid", "eiv", "j_min"}.isdisjoint(flags)  # internal fields have no flag


def test_a_field_without_a_declaration_is_found() -> None:
    @dataclasses.dataclass(frozen=True)
    class Half:
        shown: float = option(1.0, "A number.")
        hidden: int = internal(3)
        forgotten: bool = True

    assert undeclared(Half) == ["forgotten"]
    assert list(options_of(Half)) == ["shown"] and options_of(Half)["shown"].default == 1.0


@pytest.mark.parametrize("name", ["delay", "tls", "online"])
def test_the_command_line_default_is_the_settings_default(name: str) -> None:
    """Each flag's default, as the command line writes it ("auto", "A,B"), parses to the field's
    default: the default is written once, in the settings."""
    cls = methods()[name].load("settings")
    for field, opt in options_of(cls).items():
        text = opt.cli_default
        if text is not None:
            assert getattr(cls(**{field: opt.value(text)}), field) == getattr(cls(), field), field


def test_request_settings_parse_text_as_each_field_declares() -> None:
    req = Request([], Vehicle.preset("crazyflie"))
    req.options = {"tm_prior": "0.03,0.5", "izz_ratio": "2", "exponents": "1,2", "roll_pitch": ["x.csv"]}
    st = req.settings(methods()["delay"].load("settings"))
    assert (st.tm_prior, st.izz_ratio[0], st.exponents) == ((0.03, 0.5), 2.0, (1, 2))
    req.options = {"imu_delay": "auto", "mocap_delay": "0.005", "band": "0.5,20"}
    st = req.settings(methods()["tls"].load("settings"))
    assert (st.imu_delay, st.mocap_delay, st.band) == (None, 0.005, (0.5, 20.0))
    req.options = {"rate_hz": 0.0}
    assert req.settings(methods()["online"].load("settings")).rate_hz is None
    req.options = {"tm_bounds": "0.01"}
    with pytest.raises(RotoridError, match=r"--tm-bounds .0\.01. must be 2 comma-separated numbers"):
        req.settings(methods()["delay"].load("settings"))


def test_a_number_given_as_text_becomes_the_fields_number() -> None:
    """A manifest's or the API's "0.8" reaches a float field as 0.8, and nonsense is one line."""

    @dataclasses.dataclass(frozen=True)
    class S:
        gain: float = option(0.6, "A gain.")
        count: int = option(3, "A count.")

    opts = options_of(S)
    assert opts["gain"].value("0.8") == 0.8 and opts["count"].value("5") == 5 and opts["gain"].value(0.7) == 0.7
    with pytest.raises(RotoridError, match="--gain 'fast' must be a number"):
        opts["gain"].value("fast")
