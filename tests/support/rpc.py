"""What tests/{integration,unit}/test_rpc.py shares between its tiers and with other test
modules (the area is described there)."""


MODEL = "zoo:mobilenetv2@32"

