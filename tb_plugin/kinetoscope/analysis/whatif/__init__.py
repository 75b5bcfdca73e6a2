"""What would a fix save? The replay of the trace's dependencies with edits, the critical path of each step, and every suggestion's saving."""
