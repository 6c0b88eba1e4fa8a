"""Every operator names the ONNX node it came from (issue 21): on the zoo's MobileNetV2, the ops a
BatchNormalization lowers into name that BatchNormalization, and no op of block k names block k+1."""

from tests.support.provenance import mobilenet  # noqa: F401


def test_batch_norm_ops_name_their_batch_norm(mobilenet):
    model, g = mobilenet
    kinds = {n.name: n.op_type for n in model.graph.node}
    bn_of_conv = {}
    for n in model.graph.node:
        if n.op_type == "BatchNormalization":
            conv = next(c for c in model.graph.node if n.input[0] in c.output)
            bn_of_conv[conv.name] = n.name
    checked = 0
    for conv in (n for n in g.nodes if n.op == "conv2d"):
        bn = bn_of_conv[conv.onnx_name]
        chain, cur = [], conv
        for _ in range(4):  # conv -> subtract -> divide -> multiply -> add
            (cur,) = [g.by_id[c] for c in g.consumers[cur.id]]
            chain.append(cur)
        assert [c.op for c in chain] == ["subtract", "divide", "multiply", "add"]
        assert [c.onnx_name for c in chain] == [bn] * 4, (conv.id, conv.onnx_name)
        checked += 1
    assert checked == 52  # MobileNetV2's convolutions, each with its batch norm
    assert all(n.onnx_name in kinds for n in g.nodes if n.kind == "call_tir")

