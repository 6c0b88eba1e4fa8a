"""What the window is doing: the work in flight by name, what the progress bar and the Cancel button
say (gui/activity_bar.py draws them in the status bar), and whether the window is busy.

Every controller that runs something off the UI thread goes through `Activity.run`: it submits the
job, shows its progress, lets Cancel stop it, and drops its answer (result or failure) when the
`Request` it was made for is no longer current (see workspace.py). Work that is not a task of tasks.py (a
layout asked for, a layout being applied a slice at a time) is `hold`-ed and `release`-d by name.
"""
from __future__ import annotations

import itertools

from PySide6 import QtCore

from . import tasks
from .events import EmitterGroup

QUIET_TASKS = ("devices",)   # run without progress bar or Cancel, and Cancel leaves them alone


class Activity:
    """The work in flight (the window's `busy`) and what the status bar says of it. Given the AppModel:
    its Workspace's requests decide what is current; the stage of work in flight is its status line
    (Messages). events.progress(name=, stage=, fraction=): a task says how far it is (fraction < 0 or
    None: unknown); events.shown(value=): whether the progress bar and Cancel are shown;
    events.busy(value=): the window turned busy or idle."""

    def __init__(self, app):
        self.model, self.messages = app.workspace, app.messages
        self.events = EmitterGroup(self, "progress", "shown", "busy")
        self._tasks: dict[str, tasks.Task] = {}
        self._holds: dict[str, dict] = {}        # name -> {"progress": shows the bar, "cancel": callable or None}
        self._serial = itertools.count()
        self.last_cancelled: list[str] = []      # the tasks the last Cancel stopped
        self._stage = ""                         # the stage last put in the status line

    # ---- running work --------------------------------------------------------------------------

    def run(self, name: str, text: str, fn, *args, request=None, on_done=None, on_failed=None, on_cancelled=None,
            background: bool = False, **kwargs) -> tasks.Task:
        """Run `fn(*args, **kwargs)` off the UI thread as the task `name` (one at a time per name: a new
        one cancels the old), with `text` in the status bar until it reports progress. `on_done(result)`
        and `on_failed(message)` are called only while `request` (if given) is current."""
        model = self.model

        def fresh(cb):
            return lambda x: (request is None or model.current(request)) and cb(x)

        t = tasks.submit(fn, *args, name=name, background=background,
                          on_done=fresh(on_done) if on_done else None,
                          on_failed=fresh(on_failed) if on_failed else None,
                          on_cancelled=on_cancelled, **kwargs)
        self._track(name, t, text)
        return t

    def _track(self, name: str, task: tasks.Task, text: str):
        old = self._tasks.get(name)
        if old is not None and old.running:
            old.cancel()
        self._tasks[name] = task
        task.signals.progress.connect(lambda st, f, name=name: self.show_progress(name, st, f))
        task.signals.finished.connect(lambda name=name, task=task: self._finish(name, task))
        if name not in QUIET_TASKS:
            self.show_progress(name, text, -1)
            self.events.busy(value=True)
        # the task started before these connections: what it said or did before them is not lost
        if task.last_progress is not None:
            self.show_progress(name, *task.last_progress)
        if not task.running:
            QtCore.QTimer.singleShot(0, lambda name=name, task=task: self._finish(name, task))

    def _finish(self, name: str, task: tasks.Task):
        if self._tasks.get(name) is task:
            del self._tasks[name]
        self._refresh()

    def hold(self, name: str, text: str | None = None, cancel=None) -> str:
        """Work in flight that is not a task of tasks.py: busy until `release(name)`. With `text`, the
        progress bar shows it; with `cancel`, Cancel calls it. name=None: a new unique name. Returns
        the name."""
        name = name or f"hold-{next(self._serial)}"
        self._holds[name] = {"progress": text is not None, "cancel": cancel}
        if text is not None:
            self.show_progress(name, text, -1)
            self.events.busy(value=True)
        return name

    def release(self, name: str):
        if self._holds.pop(name, None) is not None:
            self._refresh()

    # ---- what it looks like --------------------------------------------------------------------

    @property
    def running(self) -> tuple[str, ...]:
        """The names of the tasks in flight ("load", "plan", "plan-tvm", "bench", "tune", ...), but
        the quiet ones."""
        return tuple(k for k in self._tasks if k not in QUIET_TASKS)

    @property
    def busy(self) -> bool:
        """Whether anything is in flight: a task (but the quiet ones), a layout asked for (a quiet
        relayout after a toggle included), or a layout still being applied to the view."""
        return bool(self.running) or bool(self._holds)

    def _refresh(self):
        shown = bool(self.running) or any(h["progress"] for h in self._holds.values())
        self.events.shown(value=shown)
        if not shown:
            if self._stage and self.messages.line == self._stage:
                self.messages.show("", 0)   # a stage of work that has finished is not left standing
            self._stage = ""
            self.events.busy(value=False)

    def show_progress(self, name: str, stage: str, fraction: float):
        if name in QUIET_TASKS:
            return
        if name not in self._tasks and not self._holds.get(name, {}).get("progress"):
            return  # a late report from work that was cancelled or has finished
        self.events.progress(name=name, stage=stage, fraction=fraction)   # the bar and Cancel show it
        self._stage = stage
        self.messages.show(stage, 0)   # the whole stage in the status line, until the next message

    def cancel(self):
        """Cancel loading, planning, layout, benchmarks and tuning in flight."""
        named = [k for k, t in self._tasks.items() if k not in QUIET_TASKS and t.running]
        for k in named:
            self._tasks[k].cancel()
        for k, h in list(self._holds.items()):
            if h["cancel"] is not None:
                del self._holds[k]
                h["cancel"]()
        self._tasks = {k: t for k, t in self._tasks.items() if k in QUIET_TASKS}
        self._refresh()
        if named:
            self.last_cancelled = named
            self.messages.show("Cancelled: " + ", ".join(named))

    def stop(self, name: str):
        """Cancel the task `name`, if it is in flight."""
        t = self._tasks.get(name)
        if t is not None:
            t.cancel()

    def close(self):
        """The window closes: stop every task."""
        for t in self._tasks.values():
            t.cancel()
