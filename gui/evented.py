"""The one evented base for the app's models (napari's EventedModel idea, without pydantic and without Qt):
a model declares typed fields as class annotations with defaults, and gets one emitter per field,

    class ScopeView(EventedModel):
        shown: bool = True
        collapsed: frozenset = frozenset()

    sv.events.shown.connect(lambda ev: ...)      # ev.value (new), ev.old; emitted on a change only
    sv.shown = False                             # emits events.shown(value=False, old=True)

A field's value is converted by its annotation when it is one of bool, int, float, str, tuple, frozenset
(so `collapsed = {...}` stores a frozenset); a field annotated `object` changes when another object is
set (identity, not equality). `EVENTS` names extra emitters that are not fields (a model's
own notifications, such as Layouts' "drawn"). `set(name, value, force=True, **extra)` emits even when the
value is unchanged and passes `extra` to the callbacks (a status message shown again restarts its timeout).

Models live outside the views: controllers change them, views subscribe to `events.<field>`, and
headless tests use them as they are (this module imports no Qt; the structure test checks that).
"""
from __future__ import annotations

from typing import Any

from .events import EmitterGroup

_CONVERT = {"bool": bool, "int": int, "float": float, "str": str, "tuple": tuple, "frozenset": frozenset}


class _Field:
    """A model attribute whose setter emits `events.<name>(value=new, old=old)` on a change."""

    def __init__(self, name: str, default: Any, annotation: str):
        self.name, self.default, self.annotation = name, default, annotation
        self.slot = "_" + name
        self.convert = _CONVERT.get(annotation.replace(" ", ""))
        self.by_identity = annotation == "object"   # e.g. a Layout: the same object, not an equal one

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return getattr(obj, self.slot)

    def __set__(self, obj, value):
        obj.set(self.name, value)


class EventedModel:
    """Typed fields (class annotations with a default) with one `events.<field>` emitter each; see the
    module's docstring. `FIELDS` lists the fields in declaration order (bases first)."""

    FIELDS: tuple = ()
    EVENTS: tuple = ()        # emitters that are not fields

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        fields = list(getattr(cls, "FIELDS", ()))
        for name, ann in cls.__dict__.get("__annotations__", {}).items():
            if name.startswith("_") or name.isupper() or "ClassVar" in str(ann):
                continue
            if name not in cls.__dict__:
                raise TypeError(f"{cls.__name__}.{name}: an evented field needs a default")
            default = cls.__dict__[name]
            setattr(cls, name, _Field(name, default, str(ann)))
            if name not in fields:
                fields.append(name)
        cls.FIELDS = tuple(fields)

    def __init__(self, **values):
        self.events = EmitterGroup(self, *self.FIELDS, *self.EVENTS)
        for name in self.FIELDS:
            f = type(self).__dict__.get(name) or getattr(type(self), name)
            setattr(self, f.slot, self._converted(f, f.default))
        for name, value in values.items():      # initial values: set without emitting
            if name not in self.FIELDS:
                raise TypeError(f"{type(self).__name__} has no field {name!r}")
            f = getattr(type(self), name)
            setattr(self, f.slot, self._converted(f, value))

    @staticmethod
    def _converted(f: _Field, value):
        return f.convert(value) if f.convert is not None and value is not None else value

    def set(self, name: str, value, force: bool = False, **extra) -> bool:
        """Set field `name`, emitting `events.<name>(value=, old=, **extra)` if it changed (or `force`);
        returns whether it emitted."""
        f = getattr(type(self), name)
        value = self._converted(f, value)
        old = getattr(self, f.slot)
        same = old is value if f.by_identity else old == value
        if same and not force:
            return False
        setattr(self, f.slot, value)
        self.events[name](value=value, old=old, **extra)
        return True

    def as_dict(self) -> dict:
        return {n: getattr(self, n) for n in self.FIELDS}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.as_dict().items())})"
