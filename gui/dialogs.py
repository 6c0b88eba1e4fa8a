"""Dialogs: input shapes for dynamic dims, the keyboard shortcuts list, the Tune budget, and a
read-only text report (the tuning report)."""
from __future__ import annotations

from PySide6 import QtGui, QtWidgets

from engine.model.onnx_input import example_dim, given_dims

from . import plain

def default_dim(name: str, index: int, rank: int) -> int:
    """A dynamic dim's example size: the engine's (onnx_input.example_dim), as the command line suggests it."""
    return example_dim(name, index, rank)


def prefill(inputs: list[tuple[str, list]], remembered: dict | None = None,
            examples: dict | None = None) -> dict[str, list[int]]:
    """Each input's shape to offer: the remembered one, else the engine's example shape
    (onnx_input.example_shapes: `examples`, with the dims the weights pin, as `main.py` suggests it;
    without them, example_dim per dim)."""
    out = {}
    for name, dims in inputs:
        r = given_dims((remembered or {}).get(name))
        ex = (examples or {}).get(name)
        if r is not None and len(r) == len(dims):
            out[name] = list(r)
        elif ex is not None and len(ex) == len(dims):
            out[name] = list(ex)
        else:
            out[name] = [d if isinstance(d, int) else default_dim(d, i, len(dims)) for i, d in enumerate(dims)]
    return out


class ShapesDialog(QtWidgets.QDialog):
    """One line per model input, prefilled; dims the file fixes are shown for reference. An input
    whose value chooses an If's branch (`values`) gets a value field instead (--input-value), and
    "Override dims the file fixes" lets a shape replace declared fixed dims (--override-fixed-dims)."""

    def __init__(self, source: str, inputs: list[tuple[str, list]], remembered: dict | None = None, parent=None,
                 values: list[str] | None = None, examples: dict | None = None):
        super().__init__(parent)
        self.setWindowTitle("Input shapes")
        self.inputs = inputs
        self.value_inputs = [n for n, _ in inputs if n in (values or [])]
        lay = QtWidgets.QVBoxLayout(self)
        text = plain.rich("<b>{source}</b>: give a static shape for each input (comma-separated){more}; the answer "
                          "is remembered for this file.", source=source,
                          more=", and a value for each input that chooses a branch of the model"
                          if self.value_inputs else "")
        msg = QtWidgets.QLabel()
        plain.rich_label(msg, text)
        msg.setWordWrap(True)
        lay.addWidget(msg)
        form = QtWidgets.QFormLayout()
        self.edits: dict[str, QtWidgets.QLineEdit] = {}
        pre = prefill(inputs, remembered, examples)   # examples: onnx_input.example_shapes, as the CLI suggests
        for name, dims in inputs:
            declared = "[" + ", ".join(str(d) for d in dims) + "]"
            entry = (remembered or {}).get(name)
            if name in self.value_inputs:
                old = entry.get("value") if isinstance(entry, dict) else None
                e = QtWidgets.QLineEdit(",".join(map(str, old)) if old else "")
                e.setPlaceholderText("value, e.g. 16000")
                e.setToolTip("An If in the model takes its branch from this input's value: FuseLens keeps the branch "
                             "this value takes (--input-value)")
                label = f"{name}  value"
            else:
                e = QtWidgets.QLineEdit(",".join(map(str, pre[name])))
                e.setToolTip(plain.tooltip("in the file: " + declared))
                label = f"{name}  {declared}"
            lbl = plain.label(label)   # input names come from the file
            form.addRow(lbl, e)
            self.edits[name] = e
        lay.addLayout(form)
        self.override = QtWidgets.QCheckBox("Override dims the file fixes (the model is used at other sizes)")
        self.override.setToolTip("Taken only where ONNX shape inference succeeds over the whole model at the new size")
        self.override.setChecked(any(isinstance(e, dict) and e.get("override") for e in (remembered or {}).values()))
        self.override.setVisible(any(isinstance(d, int) for n, dims in inputs if n not in self.value_inputs for d in dims))
        lay.addWidget(self.override)
        self.error = plain.label("")
        self.error.setStyleSheet("color: #d62728")
        lay.addWidget(self.error)
        bb = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.Ok | QtWidgets.QDialogButtonBox.Cancel)
        bb.accepted.connect(self._ok)
        bb.rejected.connect(self.reject)
        lay.addWidget(bb)

    def shapes(self) -> dict | None:
        """What was given per input, as the engine takes it (onnx_input.resolve_shapes): dims, or
        {'dims', 'override'} with the override ticked, or {'value'}; None (and a line) when a field is bad."""
        from engine.model import onnx_input
        from engine.util.errors import FuseLensError

        out = {}
        override = self.override.isChecked()
        for (name, dims), (_, e) in zip(self.inputs, self.edits.items()):
            if name in self.value_inputs:
                try:
                    out.update(onnx_input.parse_value_args([f"{name}={e.text().strip()}"]))
                except FuseLensError:
                    plain.plain_label(self.error, f"{name}: a value, or values separated by commas")
                    return None
                continue
            try:
                vals = [int(x) for x in e.text().replace("x", ",").split(",") if x.strip()]
            except ValueError:
                plain.plain_label(self.error, f"{name}: only whole numbers, separated by commas")
                return None
            if len(vals) != len(dims) or any(v <= 0 for v in vals):
                plain.plain_label(self.error, f"{name}: needs {len(dims)} positive dims")
                return None
            bad = [i for i, (d, v) in enumerate(zip(dims, vals)) if isinstance(d, int) and d != v]
            if bad and not override:
                plain.plain_label(self.error, f"{name}: dim {bad[0]} is fixed to {dims[bad[0]]} in the file "
                                  "(tick Override to replace it)")
                return None
            out[name] = {"dims": vals, "override": True} if bad else vals
        return out

    def _ok(self):
        if self.shapes() is not None:
            self.accept()


class ShortcutsDialog(QtWidgets.QDialog):
    def __init__(self, rows: list[tuple[str, str]], parent=None):
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.resize(460, 560)
        t = QtWidgets.QTableWidget(len(rows), 2)
        t.setHorizontalHeaderLabels(["action", "keys"])
        t.verticalHeader().hide()
        t.setEditTriggers(QtWidgets.QAbstractItemView.NoEditTriggers)
        for r, (a, k) in enumerate(rows):
            t.setItem(r, 0, QtWidgets.QTableWidgetItem(a))
            t.setItem(r, 1, QtWidgets.QTableWidgetItem(k))
        t.horizontalHeader().setSectionResizeMode(0, QtWidgets.QHeaderView.Stretch)
        t.horizontalHeader().setSectionResizeMode(1, QtWidgets.QHeaderView.ResizeToContents)
        self.table = t
        lay = QtWidgets.QVBoxLayout(self)
        lay.addWidget(t)
        bb = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.Close)
        bb.rejected.connect(self.reject)
        lay.addWidget(bb)


class TuneDialog(QtWidgets.QDialog):
    """Tune kernels: the budget as a number of trials or a time limit; the strategy and the target are
    the window's current ones."""

    MAX_TRIALS = 20000
    MAX_MINUTES = 24 * 60

    def __init__(self, model: str, strategy: str, target: str, budget: tuple[str, int] = ("trials", 256),
                 records: int | None = None, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Tune kernels")
        lay = QtWidgets.QVBoxLayout(self)
        head = QtWidgets.QLabel()
        plain.rich_label(head, plain.rich("Tune the kernels of <b>{s}</b>'s plan of <b>{m}</b> on <b>{t}</b>",
                                          s=strategy, m=model, t=target))
        lay.addWidget(head)
        info = QtWidgets.QLabel(
            "Each distinct fused kernel is tuned with MetaSchedule; trials go to the kernels by their share of "
            "the run time. Tuned schedules are kept per target, only where they beat our rules, and every "
            "model and strategy with the same kernel uses them. Cancel keeps what was found so far.")
        info.setWordWrap(True)
        lay.addWidget(info)
        box = QtWidgets.QGroupBox("Budget")
        grid = QtWidgets.QGridLayout(box)
        self.by_trials = QtWidgets.QRadioButton("&Trials")
        self.by_time = QtWidgets.QRadioButton("Time &limit")
        self.trials = QtWidgets.QSpinBox()
        self.trials.setRange(1, self.MAX_TRIALS)
        self.trials.setSingleStep(32)
        self.trials.setValue(256)
        self.trials.setToolTip("Trials in all, spread over the kernels by their weight (32 per kernel is a start)")
        self.minutes = QtWidgets.QSpinBox()
        self.minutes.setRange(1, self.MAX_MINUTES)
        self.minutes.setSuffix(" min")
        self.minutes.setValue(10)
        self.minutes.setToolTip("Stops at this time; trials: 32 per distinct kernel, at most 2000")
        kind, n = budget
        (self.by_time if kind == "minutes" else self.by_trials).setChecked(True)
        (self.minutes if kind == "minutes" else self.trials).setValue(int(n))
        grid.addWidget(self.by_trials, 0, 0)
        grid.addWidget(self.trials, 0, 1)
        grid.addWidget(QtWidgets.QLabel("in all, spread over the kernels"), 0, 2)
        grid.addWidget(self.by_time, 1, 0)
        grid.addWidget(self.minutes, 1, 1)
        grid.addWidget(QtWidgets.QLabel("stop when it is up"), 1, 2)
        lay.addWidget(box)
        self.by_trials.toggled.connect(self._enable)
        self._enable()
        if records is not None:
            lay.addWidget(plain.label(f"Tuning records for {target} so far: {records}"))
        bb = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.Ok | QtWidgets.QDialogButtonBox.Cancel)
        bb.button(QtWidgets.QDialogButtonBox.Ok).setText("Tune")
        bb.accepted.connect(self.accept)
        bb.rejected.connect(self.reject)
        lay.addWidget(bb)

    def _enable(self, *_):
        self.trials.setEnabled(self.by_trials.isChecked())
        self.minutes.setEnabled(self.by_time.isChecked())

    def budget(self) -> tuple[str, int]:
        """("trials", N) or ("minutes", M), as chosen."""
        return ("minutes", self.minutes.value()) if self.by_time.isChecked() else ("trials", self.trials.value())


class ReportDialog(QtWidgets.QDialog):
    """A read-only report in a fixed-width font (the tuning report), with Close."""

    def __init__(self, title: str, text: str, parent=None):
        super().__init__(parent)
        self.setWindowTitle(title)
        self.text = QtWidgets.QPlainTextEdit(text)
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QtWidgets.QPlainTextEdit.NoWrap)
        self.text.setFont(QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.FixedFont))
        fm = QtGui.QFontMetrics(self.text.font())
        wide = max((fm.horizontalAdvance(line) for line in text.splitlines()), default=400)
        self.resize(min(1400, max(600, wide + 60)), min(700, max(260, fm.lineSpacing() * (text.count("\n") + 4) + 80)))
        lay = QtWidgets.QVBoxLayout(self)
        lay.addWidget(self.text)
        bb = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.Close)
        bb.rejected.connect(self.reject)
        lay.addWidget(bb)
