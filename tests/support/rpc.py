"""Helpers of the test_rpc tests (shared by its tiers' halves and other test modules).

Benchmark through TVM's own RPC on loopback: a direct server and a tracker-registered device.
"""


MODEL = "zoo:mobilenetv2@32"

