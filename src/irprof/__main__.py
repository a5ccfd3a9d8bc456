"""`python -m irprof` runs the command-line interface."""

from irprof.cli.main import run

run()
