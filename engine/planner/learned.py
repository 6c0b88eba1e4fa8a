"""The learned cost model: a kernel's time predicted from features of its group (features.py).

What it predicts is the log of measured / roofline (the profile's own estimate, which is also a
feature): gradient-boosted trees (xgboost, as MetaSchedule's cost model) learn where the roofline
is wrong (depthwise against dense convolutions, chains whose intermediate outgrows L2, odd
channel counts against the vector width) and keep its scale, so a model trained on one machine
transfers to another of the same kind through that machine's own roofline. An ensemble of
ENSEMBLE boosters on bootstrap resamples gives each prediction a spread; the model's uncertainty
of a prediction is sqrt(spread^2 + residual^2), `residual` the out-of-fold RMS error (log) it was
trained with. Ridge regression and the calibrated roofline were tried against it on held-out
models (scripts/bench_cost_model.py prints all three); the trees predict best.

Where models come from, per target (`target_key`: the CPU kind, as the measure cache keys kernels):

    assets/costmodel/<kind>.json     shipped: trained on the zoo's kernels (scripts/train_cost_model.py)
                                     with the samples it was trained on (features + measured us)
    <cache>/kernels/learned-<tkey>.json      this machine's samples (every kernel measured here
                                     while the machine was quiet) and the model refined on them

`for_target(setup)` (setup.py: its target and profile) returns the best model there is: refined (trained on the shipped samples
and this machine's, once it has MIN_REFINE of its own, and again each time they double), shipped
otherwise, None when neither exists (the planner then uses the roofline and says so). A file that does not parse or holds wrong fields is
a miss (a cache file is deleted; a shipped one is ignored), never a crash.

    m = learned.for_target(Setup(hw))               # this CPU, priced on profile hw
    mean_us, sigma = m.predict(X, roofline_us)     # sigma: log-space uncertainty per row
"""
from __future__ import annotations

import base64
import hashlib
import math
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.util import cache_dir as _files
from engine.util import numbers
from . import features

FORMAT = 1
ENSEMBLE = 5
ROUNDS = 200
MAX_RESIDUAL = 20.0   # the out-of-fold RMS error, in log: e^20 is a factor of 5e8 (a stored one beyond: damaged)
PARAMS = {"max_depth": 6, "eta": 0.06, "subsample": 0.8, "colsample_bytree": 0.8, "min_child_weight": 2.0,
          "lambda": 1.0, "objective": "reg:squarederror", "nthread": 1, "verbosity": 0}
LOCAL_WEIGHT = 3.0          # a kernel measured on this machine counts three times a shipped one
MIN_LOCAL = 8               # a target with no shipped model needs this many of its own samples
MIN_REFINE = 100            # this machine's samples before a shipped model is retrained with them
SHIPPED = Path(__file__).resolve().parent.parent.parent / "assets" / "costmodel"


# ---- which model serves a target ------------------------------------------------------------

def cpu_kind() -> str:
    """The kind of this CPU a shipped model is trained for: architecture and vector width."""
    from engine.devices.hardware import cpu_facts

    arch = platform.machine().lower() or "cpu"
    bits = int(cpu_facts()["vector_bits"])
    isa = {"x86_64": {512: "avx512", 256: "avx2"}}.get(arch, {}).get(bits, f"v{bits}")
    return f"{arch}-{isa}"


def target_kind(t) -> str | None:
    """The shipped model's name for the Target `t`: this CPU's kind for `cpu`, None elsewhere (a
    board or GPU learns only from its own timings)."""
    return cpu_kind() if t.backend.host_cpu else None


def applies(hw, t) -> bool:
    """Whether a model for the Target `t` may price kernels for profile `hw`: the profile must
    describe that device (this machine's host profiles for cpu; a board's own profile for it)."""
    if t.backend.host_cpu:
        return hw.kind == "cpu" and str(hw.name).startswith("host")
    return hw.kind == ("gpu" if t.is_gpu else "cpu")


# ---- samples --------------------------------------------------------------------------------

@dataclass
class Samples:
    """Training rows: X (features), y (log measured / roofline), the kernel hashes, models, weights."""
    X: list = field(default_factory=list)
    y: list = field(default_factory=list)
    keys: list = field(default_factory=list)
    models: list = field(default_factory=list)
    weights: list = field(default_factory=list)

    def __len__(self):
        return len(self.y)

    def add(self, key: str, x, us: float, model: str, weight: float = 1.0) -> None:
        self.keys.append(key)
        self.X.append([float(v) for v in x])
        self.y.append(math.log(us) - float(x[0]))
        self.models.append(model)
        self.weights.append(weight)

    def _take(self, other: "Samples", k: int) -> None:
        """Append row k of `other`."""
        for name in ("keys", "X", "y", "models", "weights"):
            getattr(self, name).append(getattr(other, name)[k])

    def subset(self, keep) -> "Samples":
        s = Samples()
        for k in range(len(self)):
            if keep(k):
                s._take(self, k)
        return s

    def merged(self, other: "Samples") -> "Samples":
        """self + other; a kernel in both keeps other's row (this machine's figure wins)."""
        theirs = set(other.keys)
        s = self.subset(lambda k: self.keys[k] not in theirs)
        for k in range(len(other)):
            s._take(other, k)
        return s

    def to_json(self) -> list:
        r = (lambda v: float(f"{v:.6g}"))      # six significant digits: far below the timing noise
        return [{"key": k, "x": [r(v) for v in x], "y": r(y), "model": m}
                for k, x, y, m in zip(self.keys, self.X, self.y, self.models)]

    @classmethod
    def from_json(cls, rows, weight: float = 1.0) -> "Samples":
        s = cls()
        n = len(features.NAMES)
        for r in rows if isinstance(rows, list) else []:
            try:
                x, y = [float(v) for v in r["x"]], float(r["y"])
                key, model = str(r["key"]), str(r.get("model", ""))
            except (TypeError, KeyError, ValueError):
                continue
            if len(x) != n or not all(map(math.isfinite, x)) or not math.isfinite(y):
                continue
            s.keys.append(key)
            s.X.append(x)
            s.y.append(y)
            s.models.append(model)
            s.weights.append(weight)
        return s

    def digest(self) -> str:
        h = hashlib.sha256()
        for k, y, w in zip(self.keys, self.y, self.weights):
            h.update(f"{k}:{y:.6f}:{w}".encode())
        return h.hexdigest()[:16]


# ---- the model ------------------------------------------------------------------------------

class LearnedModel:
    """An ensemble of xgboost boosters predicting log(measured / roofline)."""

    def __init__(self, boosters, residual: float, meta: dict | None = None):
        self.boosters, self.residual = list(boosters), float(residual)
        self.meta = dict(meta or {})

    @property
    def source(self) -> str:
        """'shipped' (trained on the zoo's kernels elsewhere) or 'refined' (with this machine's)."""
        return self.meta.get("source", "shipped")

    @property
    def title(self) -> str:
        m = self.meta
        return (f"learned ({self.source}: {m.get('n', '?')} kernels"
                + (f", {m.get('local', 0)} measured here" if m.get("local") else "")
                + f"; {m.get('kind', '?')}" + (f"; {m['stale']}" if m.get("stale") else "") + ")")

    def predict_log(self, X) -> tuple[np.ndarray, np.ndarray]:
        """(mean log ratio, log-space uncertainty) per row of X."""
        import xgboost as xgb

        X = np.asarray(X, dtype=np.float32).reshape(-1, len(features.NAMES))
        if len(X) == 0:
            return np.zeros(0), np.zeros(0)
        preds = np.stack([b.inplace_predict(X) for b in self.boosters]) if self.boosters else np.zeros((1, len(X)))
        del xgb
        mean = preds.mean(axis=0)
        spread = preds.std(axis=0) if len(self.boosters) > 1 else np.zeros(len(X))
        return mean, np.sqrt(spread ** 2 + self.residual ** 2)

    def predict(self, X) -> tuple[np.ndarray, np.ndarray]:
        """(predicted us, log-space uncertainty) per row of X (X[:, 0] is the roofline's log us)."""
        X = np.asarray(X, dtype=float).reshape(-1, len(features.NAMES))
        mean, sig = self.predict_log(X)
        return np.exp(X[:, 0] + mean), sig

    # -- persistence: the boosters in xgboost's own JSON format, inside one JSON file --
    def to_json(self) -> dict:
        raws = [base64.b64encode(bytes(b.save_raw("ubj"))).decode() for b in self.boosters]
        return {"format": FORMAT, "feature_version": features.FEATURE_VERSION, "features": list(features.NAMES),
                "residual": self.residual, "meta": self.meta, "boosters_ubj_base64": raws}

    @classmethod
    def from_json(cls, d) -> "LearnedModel | None":
        """The model in `d`, or None when it is of another format or feature set, or damaged."""
        import xgboost as xgb

        try:
            if (d.get("format") != FORMAT or d.get("feature_version") != features.FEATURE_VERSION
                    or list(d.get("features") or []) != list(features.NAMES)):
                return None
            boosters = []
            for raw in d["boosters_ubj_base64"]:
                b = xgb.Booster(params={"nthread": 1})
                b.load_model(bytearray(base64.b64decode(raw, validate=True)))
                boosters.append(b)
            residual = d["residual"]
            if not numbers.finite(residual, 0.0, MAX_RESIDUAL):   # a bool, 1e300 (overflows when squared)
                return None
            residual = float(residual)
            meta = d.get("meta") if isinstance(d.get("meta"), dict) else {}
        except Exception:  # noqa: BLE001 - xgboost's own errors, bad base64, wrong types: a miss
            return None
        if not boosters or not math.isfinite(residual) or residual < 0:
            return None
        probe = np.zeros((1, len(features.NAMES)), dtype=np.float32)
        try:
            if not np.isfinite(boosters[0].inplace_predict(probe)).all():
                return None
        except Exception:  # noqa: BLE001 - a booster trained on another feature count
            return None
        return cls(boosters, residual, meta)


def _fit(X, y, w, seed: int, rounds: int = ROUNDS):
    import xgboost as xgb

    d = xgb.DMatrix(np.asarray(X, dtype=np.float32), label=np.asarray(y), weight=np.asarray(w),
                    feature_names=list(features.NAMES))
    return xgb.train({**PARAMS, "seed": seed}, d, num_boost_round=rounds)


def train(s: Samples, ensemble: int = ENSEMBLE, rounds: int = ROUNDS, folds: int = 5, meta: dict | None = None,
          residual: float | None = None) -> LearnedModel:
    """Train on the samples: `ensemble` boosters on bootstrap resamples (seeded), and the residual
    error from `folds`-fold cross-validation grouped by model (a model's kernels are held out
    together), unless `residual` is given."""
    if len(s) < 3:
        raise ValueError(f"a learned model needs at least 3 measured kernels, got {len(s)}")
    X, y, w = np.asarray(s.X), np.asarray(s.y), np.asarray(s.weights)
    rng = np.random.default_rng(0)
    boosters = []
    for k in range(ensemble):
        pick = rng.integers(0, len(y), len(y)) if ensemble > 1 else np.arange(len(y))
        boosters.append(_fit(X[pick], y[pick], w[pick], seed=k, rounds=rounds))
    if residual is None:
        residual = cross_validated_residual(s, folds, rounds)
    m = dict(meta or {})
    m.setdefault("n", len(s))
    m.setdefault("models", sorted(set(s.models)))
    m.setdefault("when", time.strftime("%Y-%m-%d %H:%M:%S"))
    return LearnedModel(boosters, residual, m)


def cross_validated_residual(s: Samples, folds: int = 5, rounds: int = ROUNDS) -> float:
    """RMS (log) error of out-of-fold predictions, folds grouped by model (else by row)."""
    X, y, w = np.asarray(s.X), np.asarray(s.y), np.asarray(s.weights)
    models = sorted(set(s.models))
    if len(models) >= 3:
        fold_of = {m: i % folds for i, m in enumerate(models)}
        fold = np.array([fold_of[m] for m in s.models])
    else:
        fold = np.arange(len(y)) % folds
    err = []
    for f in sorted(set(fold.tolist())):
        test, tr = fold == f, fold != f
        if tr.sum() < 3 or test.sum() == 0:
            continue
        b = _fit(X[tr], y[tr], w[tr], seed=100 + f, rounds=rounds)
        err.extend((b.inplace_predict(X[test].astype(np.float32)) - y[test]).tolist())
    return float(np.sqrt(np.mean(np.square(err)))) if err else 0.5


# ---- shipped and local files ----------------------------------------------------------------

def shipped_file(kind: str) -> Path:
    return SHIPPED / f"{kind}.json"


def local_file(tkey: str, cache=None) -> Path:
    from .kernel_timing import _slug

    folder = Path(cache) if cache is not None else _files.cache_dir("kernels")
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"learned-{_slug(tkey)}.json"


def _read(path: Path, is_cache: bool) -> dict:
    """A JSON object from `path` ({} when missing or damaged); a damaged cache file is deleted."""
    if is_cache:
        d = _files.read_json(path, numbers=True)   # a damaged number (1e300, NaN): a miss, deleted
        return d if isinstance(d, dict) else {}
    try:
        if not path.is_file() or path.stat().st_size > 64 << 20:
            return {}
        d = numbers.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return {}
    return d if isinstance(d, dict) else {}


_SHIPPED: dict = {}


def shipped(kind: str | None) -> tuple[LearnedModel | None, Samples]:
    """The shipped model for a CPU kind and the samples it was trained on (None, empty: none);
    read once per process (and again when the file changes)."""
    if not kind:
        return None, Samples()
    path = shipped_file(kind)
    try:
        st = path.stat()
        stamp = (str(path), st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = (str(path), None, None)
    if stamp not in _SHIPPED:
        _SHIPPED.clear()
        _SHIPPED[stamp] = _read_shipped(path, kind)
    return _SHIPPED[stamp]


def _read_shipped(path: Path, kind: str) -> tuple[LearnedModel | None, Samples]:
    d = _read(path, is_cache=False)
    if d.get("feature_version") != features.FEATURE_VERSION:
        return None, Samples()
    model = LearnedModel.from_json(d.get("model") or {}) if isinstance(d.get("model"), dict) else None
    if model is not None:
        model.meta.setdefault("kind", kind)
        model.meta["source"] = "shipped"
        why = staleness(d)
        if why:
            model.meta["stale"] = why
    return model, Samples.from_json(d.get("samples"))


def staleness(d: dict) -> str:
    """'' when the shipped model's kernels were timed with the schedules and layout this build
    makes, else what differs ("trained on schedule v4 kernels, this build's are v5"). A stale model
    is still used (its trees know where the roofline errs by op kind, shape and fusion, which a new
    schedule shifts but does not undo) and says so in its title; this machine's own timings
    (LocalStore, which keeps only current-version samples) refine it once there are MIN_REFINE."""
    from .kernel_timing import schedule_version

    have, now = d.get("schedule_version"), schedule_version()
    if have == now:
        return ""
    return (f"trained on schedule v{have} kernels, this build's are v{now}" if isinstance(have, int)
            else f"trained on kernels of an unrecorded schedule version, this build's are v{now}")


class LocalStore:
    """This machine's samples for one target key, and the model refined on them (one file)."""

    def __init__(self, tkey: str, cache=None):
        self.tkey = tkey
        self.path = local_file(tkey, cache)

    def _load(self) -> dict:
        d = _read(self.path, is_cache=True)
        if d.get("format") != FORMAT or d.get("target") != self.tkey or d.get("feature_version") != features.FEATURE_VERSION:
            return {}
        from .kernel_timing import schedule_version

        if d.get("schedule_version") != schedule_version():
            return {}
        return d

    def samples(self) -> Samples:
        return Samples.from_json(self._load().get("samples"), weight=LOCAL_WEIGHT)

    def add(self, new: Samples) -> int:
        """Add rows (a kernel already there is replaced). Returns how many rows the store holds.
        The refined model stays until retrain_due() says it is time for another."""
        from .kernel_timing import schedule_version

        d = self._load()
        have = Samples.from_json(d.get("samples"), weight=LOCAL_WEIGHT).merged(new)
        _files.write_json(self.path, {"format": FORMAT, "target": self.tkey, "feature_version": features.FEATURE_VERSION,
                                      "schedule_version": schedule_version(), "samples": have.to_json(),
                                      "model": d.get("model"), "model_local": d.get("model_local")})
        return len(have)

    def model(self) -> tuple[LearnedModel | None, int]:
        """The refined model kept here and how many local samples it was trained with (None, 0)."""
        d = self._load()
        n = d.get("model_local")
        if not isinstance(d.get("model"), dict) or not isinstance(n, int) or isinstance(n, bool) or n < 0:
            return None, 0
        return LearnedModel.from_json(d["model"]), n

    def save_model(self, model: LearnedModel, local: int) -> None:
        d = self._load()
        if not d:
            return
        d.update(model=model.to_json(), model_local=local)
        try:
            _files.write_json(self.path, d)
        except OSError:
            pass


def retrain_due(local: int, trained_with: int) -> bool:
    """A refined model is trained again (from scratch, on the shipped samples and this machine's)
    once this machine has MIN_REFINE samples, and again each time their number doubles: a few
    timings never reshape what thousands taught, and retraining (seconds) stays rare."""
    return local >= MIN_REFINE and local >= 2 * max(trained_with, MIN_REFINE // 2)


_MEMO: dict = {}


def for_target(setup, cache=None, exclude_models=(), exclude_keys=()) -> LearnedModel | None:
    """The learned model for setup.target, pricing for setup.hardware (setup.py; see the module
    docstring), or None where there is none; a profile that does not describe the target gets
    None. exclude_models / exclude_keys: train without those models' samples or those kernels
    (`fidelity` never evaluates a model on kernels it was trained on)."""
    from .kernel_timing import THREADS, FLUSH, target_key

    target = setup.target
    if not applies(setup.hardware, target):
        return None
    kind = target_kind(target)
    tkey = target_key(target, THREADS, FLUSH)
    model, ship = shipped(kind)
    try:
        local = LocalStore(tkey, cache).samples()
    except OSError:
        local = Samples()
    exclude_models, exclude_keys = set(exclude_models), set(exclude_keys)
    if exclude_models or exclude_keys:
        keep = (lambda s: s.subset(lambda k: s.models[k] not in exclude_models and s.keys[k] not in exclude_keys))
        ship, local = keep(ship), keep(local)
        model = None          # the shipped model saw them: train again without
    excluding = bool(exclude_models or exclude_keys)
    memo_key = (tkey, str(cache), local.digest(), excluding, tuple(sorted(exclude_models)), len(exclude_keys))
    if memo_key in _MEMO:
        return _MEMO[memo_key]
    store = LocalStore(tkey, cache)
    meta = {"kind": kind or tkey, "local": len(local)}
    if excluding:                                   # fidelity, evaluation: trained from scratch without them
        both = ship.merged(local)
        if len(both) < (3 if len(ship) else MIN_LOCAL):
            return None
        m = train(both, meta={**meta, "source": "refined" if len(local) else "shipped", "n": len(both)},
                  residual=None if len(both) >= 30 else 0.5, folds=3)
    else:
        kept, trained_with = store.model()
        if kept is not None and not retrain_due(len(local), trained_with):
            m = kept
        elif model is not None and not retrain_due(len(local), trained_with):
            m = model                               # too few of this machine's timings to retrain on yet
        elif model is None and len(local) < MIN_LOCAL:
            return None
        else:
            both = ship.merged(local)
            m = train(both, meta={**meta, "source": "refined", "n": len(both)},
                      residual=model.residual if model is not None else (None if len(both) >= 30 else 0.5), folds=3)
            store.save_model(m, len(local))
    _MEMO[memo_key] = m
    return m


def clear_memo() -> None:
    _MEMO.clear()
    _SHIPPED.clear()


# ---- learning from what was measured -----------------------------------------------------------

def samples_from_cache(graph, hw, target="cpu", cache=None, busy_ok: bool = False) -> Samples:
    """One row per distinct kernel of `graph` with a measured figure in the measure cache (taken
    while the machine was quiet, unless busy_ok)."""
    from . import kernel_timing
    from .cost import CostModel

    kc = kernel_timing.KernelCache(Path(cache) if cache is not None else None,
                             kernel_timing.target_key(target, kernel_timing.THREADS, kernel_timing.FLUSH), graph.sha256)
    seg_hash, times = kc.segments(), kc.times()
    cm = CostModel(graph, hw)
    fz = features.Featurizer(cm)
    out, seen = Samples(), set()
    for key, h in seg_hash.items():
        rec = times.get(h) if h else None
        if h in seen or not isinstance(rec, dict) or "us" not in rec:
            continue
        if rec.get("busy") and not busy_ok:
            continue
        ids = key.split(",")
        if any(i not in cm.index for i in ids):
            continue
        seen.add(h)
        out.add(h, fz.row([cm.index[i] for i in ids]), float(rec["us"]), graph.name)
    return out


def learn(graph, setup, cache=None) -> int:
    """Add this graph's quietly measured kernels to this machine's samples for setup.target (online
    refinement: the next for_target() trains on them), featurized on setup.hardware. Only this
    machine's CPU learns: over RPC an emulated board (qemu-user) cannot be told from a real one, so
    boards keep the roofline. Returns the number of rows added; 0 where the target or profile does
    not qualify."""
    from . import kernel_timing

    hw, target = setup.hardware, setup.target
    if not applies(hw, target) or target_kind(target) is None:
        return 0
    s = samples_from_cache(graph, hw, target, cache)
    if not len(s):
        return 0
    for k in range(len(s)):
        s.weights[k] = LOCAL_WEIGHT
    LocalStore(kernel_timing.target_key(target, kernel_timing.THREADS, kernel_timing.FLUSH), cache).add(s)
    try:
        for_target(setup, cache)      # refine now (and keep it), so the next plan only loads it
    except Exception:  # noqa: BLE001 - refining is a bonus: the samples are kept either way
        pass
    return len(s)

