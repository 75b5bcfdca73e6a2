"""`python -m kinetoscope.cli ...`: the `kinetoscope` command."""
from .main import run

run()
