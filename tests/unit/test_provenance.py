"""Every operator names the ONNX node it came from (issue 21): on the zoo's MobileNetV2, the ops a
BatchNormalization lowers into name that BatchNormalization, and no op of block k names block k+1."""

import re
from tests.support.provenance import mobilenet  # noqa: F401


def _block(name: str) -> int:
    m = re.match(r"features\.(\d+)\b", name)
    return int(m[1]) if m else (10 ** 6 if name else -1)  # the classifier after every block


def test_no_op_names_a_later_block_than_its_consumers(mobilenet):
    _, g = mobilenet
    for n in g.nodes:
        for c in g.consumers[n.id]:
            assert _block(n.onnx_name or "") <= _block(g.by_id[c].onnx_name or ""), \
                f"{n.id} {n.op} ({n.onnx_name}) feeds {c} {g.by_id[c].op} ({g.by_id[c].onnx_name})"

