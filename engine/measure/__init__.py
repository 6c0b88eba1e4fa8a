"""Building and timing whole plans: build, runner (one strategy), roundrobin (several, interleaved),
benchmark (the front ends' entry), statistics, run ids, numeric checks, ONNX Runtime as a
reference, MetaSchedule tuning and its store."""
