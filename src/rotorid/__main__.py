"""`python -m rotorid`: the same command line as `rotorid`."""

from rotorid.cli import app

app(prog_name="rotorid")
