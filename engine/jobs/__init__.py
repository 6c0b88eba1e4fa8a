"""The app's worker-side jobs, without Qt: each module is one piece of work the app runs off its UI
thread (gui/tasks.py submits them), in a child process where it would otherwise hold Python's
global lock for seconds (engine/util/child.py).

    open_model   read a model file, resolve its input shapes or say which are needed, load the graph
    plan_tvm     plan with TVM's FuseOps in a child, for a graph that was read in one
    layout       lay out the graph: the layout cache, graphviz dot under a time limit, the built-in layout

Benchmarks, kernel profiling and tuning run their own child jobs (engine/measure/runner.py, roundrobin.py,
planner/kernel_timing.py, tuning.py) through the same engine/util/child.run_in_child.
"""
