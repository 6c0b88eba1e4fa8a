"""Helpers of the test_child tests (shared by its tiers' halves and other test modules).

engine/util/child.py: run_in_child returns any picklable result, relays progress, reports a failure in one
line (a FuseLensError's message as-is), and ends its child on cancel and past the time limit. Started from
a worker thread (as the app does), the child ignores Ctrl+C, which the caller handles.
"""
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
