"""Why does the device sit idle? Its idle gaps by cause and the CPU work behind them, launch offsets, DataLoader
stalls and the step breakdown."""
