"""How do the ranks of a job wait on each other? Communication and its overlap, collectives, the ranks view, jobs and the straggler what-if."""
