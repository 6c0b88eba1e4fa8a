"""What tests/unit/test_child.py shares between its tiers and with other test
modules (the area is described there)."""
from __future__ import annotations

import time


class Box:
    def __init__(self, v):
        self.v = v


def _echo(job, say):
    say("halfway", 0.5)
    return Box(job), ("a", 1)


def _sleep(job, say):
    say("sleeping", 0.0)
    time.sleep(job)
    return "woke"
