"""How the two transformer test files were made (PyTorch 2.13 CPU, not a project dependency):
transformer_dynamo_export.onnx (dynamo exporter, opset 18) and transformer_torchscript_export.onnx
(TorchScript exporter, opset 17, dynamo=False): a 2-layer encoder with dynamic batch and sequence dims."""
import torch, torch.nn as nn
torch.manual_seed(0)
class M(nn.Module):
    def __init__(s):
        super().__init__()
        s.emb = nn.Embedding(1000, 64)
        s.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 4, 128, batch_first=True), 2)
        s.head = nn.Linear(64, 10)
    def forward(s, ids):
        return s.head(s.enc(s.emb(ids)).mean(1))
m = M().eval()
# then saved as one file: onnx.save(onnx.load(path), path)
torch.onnx.export(m, (torch.randint(0, 1000, (2, 16)),), "transformer_dynamo_export.onnx", input_names=["input_ids"], output_names=["logits"],
                  dynamic_axes={"input_ids": {0: "batch", 1: "seq"}}, opset_version=18, dynamo=True)
print("ok")
