"""The graph area's drawing: the scene (operators and edges, scene.py) with its fused-group boxes
(boxes.py) and shared item shapes (items.py), the view that zooms and pans it (view.py), and the
overlays in the view's corners (minimap.py, legend.py)."""
