"""`python -m kinetoscope.cli ...`: the `kinetoscope` command."""
from . import run

run()
