"""`rotorid app`: a local web page to open a log, look at one panel per role (thrust,
roll/pitch, yaw), drag the identification windows, describe the vehicle, identify with
progress and download the same files `rotorid identify` writes.

Built on Dash with plotly-resampler (server-side min/max downsampling, so hour-long 1 kHz logs
stay fluid); served on 127.0.0.1 only, every asset from the installed packages. The app holds
no numerics: it calls the library exactly as the CLI does (`rotorid.app.run`).
"""

from rotorid.app.server import Server, create_app, serve

__all__ = ["Server", "create_app", "serve"]
