"""`python -m kinetoscope.cli ...`: the `kinetoscope` command."""
import sys

from .main import main

sys.exit(main())
