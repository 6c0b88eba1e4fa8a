"""What every schedule rule shares, in the style of tvm.s_tir.dlight's `base` and `analysis`:

- `analysis.py`: block facts (loop kinds, trivial bindings, padding blocks, fusible loop pairs,
  safe tile consumers);
- `config.py`: `AnchorConfig`, the per-target knobs of the CPU anchor tile and the Chain rule,
  chosen by `config_for(target)` (dlight's `Config` per target);
- `target.py`: the host's LLVM target, CUDA targets, and the target facts rules read (vector
  lanes, cores, L2 per core);
- `fastmath.py`: the vectorisable float32 exp/sigmoid rewrite (CPU);
- `rule.py`: `CPURule` / `GPURule`, the rules' base classes;
- `primitives.py`: schedule steps shared by several rules (inlining, parallel and vector loops,
  padding passes, de-interleaved strided reads);
- `anchor.py`: the anchor finder (CPU Anchor, GPU Conv) and the CPU anchor tile, step by step
  (CPU Anchor, Stages).

Nothing here is a rule; a rule (cpu/, gpu/) imports from here, never from another rule's file.
"""
