"""Benchmarking whole plans: runner (one strategy), roundrobin (several, interleaved), benchmark (the
front ends' entry), statistics, run ids, numeric checks, ONNX Runtime as a reference, MetaSchedule
tuning. Plans and kernels are built and timed by engine/kernels."""
