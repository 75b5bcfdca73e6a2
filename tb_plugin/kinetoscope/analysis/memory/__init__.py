"""Where does device memory go? The allocation timeline per device: allocated, reserved and the peak."""
