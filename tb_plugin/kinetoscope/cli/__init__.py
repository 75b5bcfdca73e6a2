"""The command-line door: `kinetoscope report|index|diff|table` (`main.py`), one module per subcommand."""
