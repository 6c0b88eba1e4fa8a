"""What results say: text tables, per-kernel reports and tables, plan deltas, group names and the
decision-tree recommendation."""
