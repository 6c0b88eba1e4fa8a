"""The model as TVM sees it: ONNX input, Relax import, constant folding, the channel layout,
the operator graph, the loader and its caches, and the built-in zoo."""
