"""Helpers shared by several test files (and by the fuzz benchmarks): `helpers_cf`, an
independent Crazyflie uSD-log encoder; `fuzzing`, the readers' mutation-fuzzing engine;
`bench`, loading a benchmarks/ script as a module; `fixtures`, pytest fixtures several test
files use (made available to every test by tests/conftest.py)."""
