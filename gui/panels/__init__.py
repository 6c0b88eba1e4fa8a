"""Dock panels: properties, latency (pyqtgraph), recommendation tree."""
