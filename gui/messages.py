"""Where the app's messages go (no Qt; napari's ViewerModel.status): the status line and the last error.
Controllers are given this model and call `show` / `fail`; the window subscribes (the status bar shows
`events.status`, the banner and the status bar `events.error`, which is empty when the banner hides; the
graph area `events.placeholder`). A message shown again emits again (its
timeout restarts)."""
from __future__ import annotations

from .evented import EventedModel


class Messages(EventedModel):
    status: str = ""      # the status line's last message: events.status(value=text, old=..., ms=how long)
    error: str = ""       # the last error, as shown (cut to MAX_ERROR_CHARS): events.error(value=text, old=...)
    line: str = ""        # what the status line shows now: the last message, or an error's first line
    placeholder: str = ""  # what the graph area says where it shows no graph (events.placeholder: show it)

    MAX_ERROR_CHARS = 2000   # a message quoting a huge field (a 1 MB node id) must not freeze the banner's layout

    def show(self, text: str, ms: int = 6000) -> None:
        """A status-line message for `ms` milliseconds."""
        self.line = text
        self.set("status", text, force=True, ms=ms)

    def place(self, text: str) -> None:
        """The graph area shows `text` instead of a graph (until a graph is drawn)."""
        self.set("placeholder", text, force=True)

    def clear_error(self) -> None:
        """The last error is no longer shown (the banner hides)."""
        self.set("error", "", force=True)

    def fail(self, msg: str, where: str = "") -> None:
        """An error: `where: msg` (shown in the banner and the status line)."""
        text = f"{where}: {msg}" if where else msg
        if len(text) > self.MAX_ERROR_CHARS:
            text = text[: self.MAX_ERROR_CHARS - 3] + "..."
        self.line = text.splitlines()[0][:200] if text else ""
        self.set("error", text, force=True)
