"""An ONNX Runtime profile as a heat overlay source (issue 30): File > Import ONNX Runtime Profile...
reads a profile file a user made with ORT's `enable_profiling` (engine/measure/ort_import.py: checked,
mapped onto the model's ONNX nodes) off the UI thread, and View > Heat Source chooses what the heat
overlay colours groups by: FuseLens's own figures (measured kernel time, or the plan's estimate) or
ORT's time for each group's operators (an ORT node's time shared among the operators of the ONNX
nodes it covers; a group none of ORT's nodes covers stays grey). The profile belongs to the open
model: another model drops it.

    ort = OrtHeat(app, activity)   # evented: events.changed
    ort.import_file(path)          # read in the background; on success the source becomes "ort", heat on
    ort.source = "fuselens" | "ort"
    ort.heat_for(doc, plan, log)   # the overlay's dict for a plan, or None (FuseLens's own then)
"""
from __future__ import annotations

import os

from .events import EmitterGroup

SOURCES = ("fuselens", "ort")
SOURCE_TITLES = {"fuselens": "FuseLens (measured or estimated)", "ort": "ONNX Runtime Profile"}


def read_profile(path, graph):
    """Worker (no Qt): the checked, mapped profile and its one-line summary."""
    from engine.measure import ort_import

    prof = ort_import.read(path, graph)
    return prof, ort_import.summary(prof, graph)


class OrtHeat:
    """The imported profile of the open model and the heat overlay's source (evented, no Qt:
    `events.changed()` when either changes; the Overlays and the menu follow)."""

    def __init__(self, app, activity):
        self.model, self.state, self.activity = app.workspace, app.view, activity
        self.messages = app.messages
        model = self.model
        self.events = EmitterGroup(self, "changed")
        self.profile = None
        self.path = ""
        self.summary = ""
        self._doc = None
        self._source = "fuselens"
        model.events.document.connect(lambda ev: self._on_document(ev.value))

    @property
    def source(self) -> str:
        return self._source if self.profile is not None else "fuselens"

    @source.setter
    def source(self, value: str):
        if value not in SOURCES:
            raise ValueError(f"heat source must be one of {SOURCES}")
        if value == "ort" and self.profile is None:
            self.messages.fail("import an ONNX Runtime profile first (File > Import ONNX Runtime Profile...)", "Heat source")
            value = "fuselens"
        if value != self._source:
            self._source = value
            self.events.changed()

    def _on_document(self, doc):
        if doc is not self._doc:
            had = self.profile is not None
            self._doc, self.profile, self.path, self.summary = doc, None, "", ""
            self._source = "fuselens"
            if had:
                self.events.changed()

    def import_file(self, path):
        """Read `path` in the background for the open model; on success show it (heat on, source ORT)."""
        doc = self.model.doc
        if doc is None:
            self.messages.fail("open a model first", "Import ONNX Runtime profile")
            return
        req = self.model.request("ort_profile")

        def done(res):
            prof, summary = res
            self._doc, self.profile, self.path, self.summary = doc, prof, str(path), summary
            self._source = "ort"
            self.events.changed()
            self.state.heat = True
            self.messages.show(f"ONNX Runtime profile {os.path.basename(str(path))}: {summary}", 15000)

        self.activity.run("ort_profile", "Reading the ONNX Runtime profile", read_profile, str(path), doc.graph,
                          request=req, on_done=done,
                          on_failed=lambda m: self.messages.fail(m, "Import ONNX Runtime profile"))

    def heat_for(self, doc, plan, log: bool) -> dict | None:
        """The heat overlay's dict for `plan` from the profile (per group: ORT's us), or None when the
        source is FuseLens's own or there is no profile for this model."""
        if self.source != "ort" or self.profile is None or doc is not self._doc or plan is None:
            return None
        from engine.measure import ort_import

        values = ort_import.group_times(self.profile, doc.graph, plan.groups)
        return {"values": values, "log": log, "source": "measured",
                "title": "ONNX Runtime profile"}   # the legend is narrow: the file is named in the status bar
