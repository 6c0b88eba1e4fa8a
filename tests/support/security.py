"""What tests/{integration,unit}/test_security.py shares between its tiers and with other test
modules (the area is described there)."""

import os
import shutil
from pathlib import Path
import onnx
from tests.support.models import tiny_onnx


def _external_model(tmp_path: Path, case: str) -> tuple[Path, str]:
    """model/m.onnx whose weights point outside model/ as `case` says; the weights exist there (so
    only the location check can refuse them). Returns (model path, the message to expect)."""
    d, outside = tmp_path / "model", tmp_path / "outside"
    d.mkdir()
    outside.mkdir()
    onnx.save(tiny_onnx(), d / "m.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
              location="w.bin", size_threshold=0)
    shutil.move(d / "w.bin", outside / "w.bin")
    location, expect = {
        "dotdot": ("../outside/w.bin", "points outside the directory"),
        "absolute": (str(outside / "w.bin"), "should be a relative path"),
        "symlink": ("w.bin", "is a symbolic link"),
        "symlinked-folder": ("sub/w.bin", "resolves outside model directory"),
        "hardlink": ("w.bin", "multiple hard links"),
    }[case]
    if case == "symlink":
        (d / "w.bin").symlink_to(outside / "w.bin")
    elif case == "symlinked-folder":
        (d / "sub").symlink_to(outside, target_is_directory=True)
    elif case == "hardlink":
        os.link(outside / "w.bin", d / "w.bin")
    m = onnx.load(d / "m.onnx", load_external_data=False)
    for t in m.graph.initializer:
        for e in t.external_data:
            if e.key == "location":
                e.value = location
    onnx.save(m, d / "m.onnx")
    return d / "m.onnx", expect

