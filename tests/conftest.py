"""Shared fixtures. The real logs live in ../shared/data (next to the repository, or where
ROTORID_DATA points): a test that needs one fails, naming the missing path, where it is absent,
as does a test whose rotorid module is missing; nothing is skipped silently. Only optional
third-party packages may be `importorskip`ped, and the browser tests skip where headless
Chromium is not installed (`make test` installs it; the skip names the missing binaries).
Fixtures several test files share live in tests/support/fixtures.py, imported here."""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import matplotlib
import pytest
from threadpoolctl import threadpool_limits

from support.fixtures import worker  # noqa: F401  (a fixture: importing it here shares it)

matplotlib.use("Agg")
# BLAS on one thread, in this process and the CLI processes tests start: `make test` runs two
# workers on two cores, where a second BLAS thread per worker only spin-waits on the methods'
# tall, skinny matrices. tls.identify limits itself so (`regression.one_blas_thread`); its
# parts called directly, delay and freq do not: tls's solve of an A + B problem took 16-28 s
# CPU against 2.4-2.6 s on one thread on the loaded machine, tests/test_freq_sim.py 13.3 -> 5.8 s.
threadpool_limits(limits=1, user_api="blas")
os.environ["OPENBLAS_NUM_THREADS"] = "1"
# The suite decodes every log afresh (a test that counts or breaks decoding must see it) and never
# writes the user's cache folder; tests/test_cache.py turns the cache on in a folder of its own, and
# the `decoded` fixture in one the run shares, for the slow real logs tests take as input.
os.environ["ROTORID_NO_CACHE"] = "1"

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("ROTORID_DATA", REPO.parent / "shared" / "data"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files holding tests marked slow first (those with the most such tests before the others),
    then the rest by their number of tests, as xdist orders them itself (`make test` turns its own
    reordering off). `--dist loadscope` hands the files out in this order: the last ones, which
    set how long one worker waits for the other at the end, are short."""
    count = Counter(item.path for item in items)
    slow = Counter(item.path for item in items if item.get_closest_marker("slow"))
    items.sort(key=lambda item: (-slow[item.path], -count[item.path]))


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.fail(f"real flight data not found at {path} (set ROTORID_DATA to ../shared/data)")
    return path


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return _need(DATA)


@pytest.fixture(scope="session")
def cf_logs(data_dir: Path) -> dict[str, Path]:
    """The three real Crazyflie logs by name (log10, log15, log16)."""
    return {n: _need(data_dir / "crazyflie" / n) for n in ("log10", "log15", "log16")}


@pytest.fixture(scope="session")
def px4_logs(data_dir: Path) -> dict[str, Path]:
    return {n: _need(data_dir / "px4" / f"{n}.ulg") for n in ("sample", "sample_px4_events")}


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A decoded-log cache folder the whole run shares (every xdist worker's: their base
    temporary folders' parent)."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "decoded-logs"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def decoded(shared_cache: Path) -> Callable[..., list]:
    """`io.read` through the decoded-log cache in `shared_cache`, each log under a lock: the first
    test to want a real log (on any worker) decodes it, every other reads its Parquet entry, which
    holds the same flights (tests/test_cache.py) and says the reader's warnings again. For the slow
    real logs (Betaflight decodes at ~2 s/MB in pure Python); the suite leaves the cache off elsewhere."""
    from rotorid import io

    def read(path: Path, **options: object) -> list:
        name = hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:16]
        with open(shared_cache / f"{name}.lock", "w") as fh, pytest.MonkeyPatch.context() as mp:
            fcntl.flock(fh, fcntl.LOCK_EX)  # another worker decoding this log: wait for its entry
            mp.setenv("ROTORID_NO_CACHE", "0")
            mp.setenv("ROTORID_CACHE_DIR", str(shared_cache))
            return io.read(path, **options)

    return read


@pytest.fixture
def unwritable(tmp_path: Path) -> Path:
    """An output folder nobody can create: sysfs when running as root, else inside a read-only folder."""
    if os.geteuid() == 0:
        if not Path("/sys/kernel").is_dir():
            pytest.skip("running as root without sysfs: no folder is unwritable")
        return Path("/sys/rotorid-test-out")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    return ro / "out"


CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
#: headless Chromium on a machine with no internet: no background connections, a fresh profile
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1100",
)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """A headless Chromium driven by selenium (the report and app browser tests); skipped when
    Chromium is not installed (`make test` installs it)."""
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip(f"headless Chromium not installed ({CHROMIUM}, {CHROMEDRIVER}); `make test` installs it")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    with tempfile.TemporaryDirectory(prefix="rotorid-chromium-") as profile:
        opts = webdriver.ChromeOptions()
        opts.binary_location = str(CHROMIUM)
        for f in CHROMIUM_FLAGS:
            opts.add_argument(f)
        opts.add_argument(f"--user-data-dir={profile}")
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=opts)
        try:
            yield driver
        finally:
            driver.quit()


@pytest.fixture(scope="session")
def bf_flights(data_dir: Path, decoded) -> dict[str, object]:
    """The freestyle Betaflight logs btfl_002.bbl and better_tune.BBL (~2 s/MB to decode: once per
    run, see `decoded`): name -> their one Flight."""
    import warnings

    out = {}
    for name in ("btfl_002.bbl", "better_tune.BBL"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # better_tune's gyro saturation warning
            (out[name],) = decoded(_need(data_dir / "betaflight" / name))
    return out
