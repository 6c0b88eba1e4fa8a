"""Drawing the operator graph without Qt: what to lay out, graphviz dot, and the layout cache."""
