"""Which op captured each kernel a CUDA/HIP graph replays: replays aligned with a reference run's launches."""
