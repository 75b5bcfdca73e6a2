"""How close does each op run to what the device can do? The work of each op call (operations and bytes moved), toward
the roofline."""
