"""The main window: loads a model off the UI thread and lists its operator graph."""
from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from . import worker

COLUMNS = ["id", "op", "pattern", "shape", "FLOPs", "bytes", "inputs", "ONNX node"]


class MainWindow(QtWidgets.QMainWindow):
    model_loaded = QtCore.Signal(object)

    def __init__(self):
        super().__init__()
        self.graph = None
        self.setWindowTitle("FuseLens")
        self.resize(1100, 700)
        self.summary = QtWidgets.QLabel("No model loaded.")
        self.summary.setTextInteractionFlags(QtCore.Qt.TextSelectableByMouse)
        self.table = QtWidgets.QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.NoEditTriggers)
        self.table.horizontalHeader().setStretchLastSection(True)
        central = QtWidgets.QWidget()
        lay = QtWidgets.QVBoxLayout(central)
        lay.addWidget(self.summary)
        lay.addWidget(self.table)
        self.setCentralWidget(central)
        self.statusBar().showMessage("Ready")

    def open_model(self, spec: str, shapes: list[str] | None = None):
        from engine import loader, onnx_input

        self.statusBar().showMessage(f"Loading {spec} ...")
        self._task = worker.submit(lambda: loader.load(spec, onnx_input.parse_shape_args(shapes)),
                                   on_done=self._show_graph, on_failed=self._show_error)

    def _show_error(self, msg: str):
        self.statusBar().showMessage("Error")
        self.summary.setText(f"<b>Could not open the model.</b><br>{msg}")

    def _show_graph(self, g):
        from engine.report import human

        self.graph = g
        self.setWindowTitle(f"{g.name} - FuseLens")
        counts = ", ".join(f"{k} {v}" for k, v in sorted(g.pattern_counts().items(), key=lambda kv: -kv[1]))
        self.summary.setText(f"<b>{g.name}</b> &nbsp; {len(g)} operators &nbsp; "
                             f"{human(sum(n.flops for n in g.nodes))}FLOPs &nbsp; {counts}")
        self.table.setRowCount(len(g.nodes))
        for r, n in enumerate(g.nodes):
            vals = [n.id, n.op, n.pattern, "x".join(map(str, n.shape)), human(n.flops), human(n.bytes, "B"),
                    ", ".join(n.inputs), n.onnx_name or ""]
            for c, v in enumerate(vals):
                self.table.setItem(r, c, QtWidgets.QTableWidgetItem(str(v)))
        self.statusBar().showMessage(f"Loaded {g.name}", 5000)
        self.model_loaded.emit(g)
