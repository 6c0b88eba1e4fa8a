"""Exporting the graph scene: every label made, then rendered to PNG or SVG. A mixin of GraphScene
(scene.py)."""
from __future__ import annotations


from PySide6 import QtCore, QtGui


class SceneExport:
    """GraphScene's export methods (the state they use is set up in GraphScene.__init__)."""

    def full_detail(self):
        """A context in which the scene draws everything as at 100 % zoom, whatever the view's zoom: every
        op's labels made and shown, the text of collapsed nodes shown, badges at their own size. An export
        (render_png, render_svg) always carries full detail; the view's level of detail comes back after."""
        import contextlib

        @contextlib.contextmanager
        def ctx():
            was_text, was_badge = self.text_visible, self.group_boxes.badge_scale
            self.ensure_labels(None)
            self.set_text_visible(True)
            self.set_badge_zoom(1.0)
            try:
                yield
            finally:
                self.set_text_visible(was_text)
                self.group_boxes.set_badge_zoom(1.0 / was_badge if was_badge > 1.0 else 1.0)

        return ctx()

    def render_png(self, path: str, max_side: int = 16000) -> tuple[int, int]:
        with self.full_detail():
            return self._render_png(path, max_side)

    def _render_png(self, path: str, max_side: int) -> tuple[int, int]:
        r = self.content_rect().adjusted(-20, -20, 20, 20)
        scale = min(2.0, max_side / max(r.width(), r.height(), 1))
        img = QtGui.QImage(max(1, int(r.width() * scale)), max(1, int(r.height() * scale)),
                           QtGui.QImage.Format_ARGB32)
        img.fill(self.theme.background)
        p = QtGui.QPainter(img)
        p.setRenderHint(QtGui.QPainter.Antialiasing)
        self.render(p, QtCore.QRectF(img.rect()), r)
        p.end()
        if not img.save(path):
            raise OSError(f"cannot write {path}")
        return img.width(), img.height()

    def render_svg(self, path: str, title: str = "FuseLens graph"):
        from PySide6 import QtSvg

        with self.full_detail():
            r = self.content_rect().adjusted(-20, -20, 20, 20)
            gen = QtSvg.QSvgGenerator()
            gen.setFileName(path)
            gen.setSize(QtCore.QSize(int(r.width()), int(r.height())))
            gen.setViewBox(QtCore.QRectF(0, 0, r.width(), r.height()))
            gen.setTitle(title)
            p = QtGui.QPainter(gen)
            p.fillRect(QtCore.QRectF(0, 0, r.width(), r.height()), self.theme.background)
            self.render(p, QtCore.QRectF(0, 0, r.width(), r.height()), r)
            p.end()
