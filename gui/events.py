"""Callbacks for the app's models, without Qt (in the style of napari's EmitterGroup): a model owns an
`EmitterGroup` with one emitter per kind of change, its own setters and methods emit, and whoever
draws or persists that state subscribes:

    doc.events.plans.connect(lambda ev: ...)      # ev.type == "plans", ev.source is doc

Every change goes through the model, so a view cannot miss one and no caller has to remember which
refreshes follow which change. Callbacks run synchronously, in the order they were connected; an
exception in one propagates to the code that made the change (a broken view should fail loudly).
"""
from __future__ import annotations

from typing import Callable


class Event:
    """What changed: `type` (the emitter's name), `source` (the model) and the emitter's keyword
    arguments as attributes (`value`, `old`, ... as each model documents)."""

    def __init__(self, type: str, source, **kwargs):
        self.type = type
        self.source = source
        self.__dict__.update(kwargs)

    def __repr__(self) -> str:
        extra = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items() if k not in ("type", "source"))
        return f"Event({self.type!r}{', ' + extra if extra else ''})"


class EventEmitter:
    """One kind of change: `connect(fn)` subscribes fn(event), calling the emitter tells them all."""

    def __init__(self, source, type: str):
        self.source = source
        self.type = type
        self._callbacks: list[Callable] = []

    def connect(self, callback: Callable) -> Callable:
        """Subscribe `callback(event)`; returns it (so this works as a decorator). Connecting the same
        callback twice calls it once."""
        if callback not in self._callbacks:
            self._callbacks.append(callback)
        return callback

    def disconnect(self, callback: Callable | None = None) -> None:
        """Unsubscribe `callback` (every callback when None); one that is not connected is ignored."""
        if callback is None:
            self._callbacks.clear()
        elif callback in self._callbacks:
            self._callbacks.remove(callback)

    def __call__(self, **kwargs) -> Event:
        ev = Event(self.type, self.source, **kwargs)
        for cb in list(self._callbacks):  # a callback may disconnect itself
            cb(ev)
        return ev


class EmitterGroup:
    """A model's emitters by name: `group.NAME` is an EventEmitter; `names` lists them."""

    def __init__(self, source, *names: str):
        self.source = source
        self.names = tuple(names)
        for n in names:
            if hasattr(self, n):
                raise ValueError(f"event name {n!r} is taken")
            setattr(self, n, EventEmitter(source, n))

    def __getitem__(self, name: str) -> EventEmitter:
        if name not in self.names:
            raise KeyError(name)
        return getattr(self, name)
