"""The one way data text reaches Qt (issue 31, class 3).

Qt renders a QLabel's text (in its default Qt::AutoText format), every tooltip and a QTextEdit's
`setHtml` as rich text when Qt::mightBeRichText says the text looks like HTML. Text from a file (ONNX node,
input and op names, plan files, cache files, error messages that quote them, model paths) must never be
parsed as HTML: a node named `<img src="file:///etc/passwd">` would be rendered. So:

- `plain_label(label, text)`: the label shows `text` as plain text (Qt::PlainText), whatever it holds;
- `rich(template, **data)`: our own markup, each data value HTML-escaped into it; gives a `Rich`, the only
  thing `rich_label` and `set_html` take;
- `esc(text)`: text for pyqtgraph's labels and legends (setLabel, setTitle, LabelItem), which are HTML;
- `tooltip(text)`: a tooltip (which has no text format) for `text`, escaped and wrapped so that Qt never
  parses the data as HTML; it looks as a plain-text tooltip does (no wrapping, the same lines).

tests/gui/test_gui_plain_text.py checks that every setText / setToolTip / setHtml / QLabel(...) in gui/ takes a
literal or one of these helpers.
"""
from __future__ import annotations

import html

from PySide6 import QtCore

__all__ = ["Rich", "esc", "plain_label", "rich", "rich_label", "set_html", "tooltip", "label"]


def esc(value, quote: bool = True) -> str:
    """`value` as text, HTML-escaped (quotes too, unless quote=False: text outside attributes). Also for
    pyqtgraph's labels (setLabel, setTitle, LabelItem: its legends), which take HTML."""
    return html.escape("" if value is None else str(value), quote=quote)


class Rich(str):
    """Markup whose data parts were escaped: made only by `rich()` (and `Rich.join`, `+` of two). Adding
    plain text to a Rich escapes that text, as markupsafe's Markup does; an f-string or `%` of a Rich is a
    plain `str` again, which `rich_label` and `set_html` refuse."""
    __slots__ = ()

    def __add__(self, other):
        return Rich(str.__add__(self, other if isinstance(other, Rich) else esc(other)))

    def __radd__(self, other):
        return Rich((other if isinstance(other, Rich) else esc(other)) + str(self))

    def join(self, parts):
        return Rich(str.join(self, [p if isinstance(p, Rich) else esc(p) for p in parts]))


def _value(v):
    if isinstance(v, Rich):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v          # numbers hold no markup, and keep their format specs ({x:.1f})
    return esc(v)


def rich(template: str, **data) -> Rich:
    """Our markup `template` (a literal, with str.format fields) with every data value escaped into it
    (a Rich value goes in as it is; numbers keep their format specs)."""
    return Rich(template.format(**{k: _value(v) for k, v in data.items()}))


def plain_label(label, text) -> None:
    """`label` shows `text` as plain text, never as HTML (a `Rich`, our markup made by `rich()`, as rich text)."""
    if isinstance(text, Rich):
        rich_label(label, text)
        return
    label.setTextFormat(QtCore.Qt.PlainText)
    label.setText("" if text is None else str(text))


def rich_label(label, markup: Rich) -> None:
    """`label` shows our markup (made by `rich()`)."""
    if not isinstance(markup, Rich):
        raise TypeError("rich_label takes markup made by gui.plain.rich(), not a plain str")
    label.setTextFormat(QtCore.Qt.RichText)
    label.setText(str(markup))


def set_html(widget, markup: Rich) -> None:
    """A QTextEdit/QTextBrowser/QGraphicsTextItem shows our markup (made by `rich()`)."""
    if not isinstance(markup, Rich):
        raise TypeError("set_html takes markup made by gui.plain.rich(), not a plain str")
    widget.setHtml(str(markup))


def label(text="", parent=None):
    """A new QLabel showing `text` as plain text."""
    from PySide6 import QtWidgets

    w = QtWidgets.QLabel(parent)
    plain_label(w, text)
    return w


def tooltip(text) -> str:
    """A tooltip showing `text` as it is: escaped into a paragraph that keeps its spaces and lines (no
    wrapping, as a plain-text tooltip has), so Qt never parses the data as HTML. Empty: no tooltip."""
    if text is None or str(text) == "":
        return ""
    return f"<p style='white-space:pre'>{esc(text)}</p>"
