"""Plan files: schema "fuselens-plan/1".

    {"schema", "model": {"name", "sha256", "input_shapes", "layout"}, "strategy", "hardware": {profile},
     "nodes": [{"id", "name", "pattern"}], "groups": [{"id", "nodes", "estimated_us"}],
     "estimated_us", "planning_ms", "explanations": [...], "notes": {...}, "measured": {...}?}

Loading reads a regular file of at most MAX_PLAN_BYTES (a FIFO or /dev/zero is refused, not read),
checks the schema (`check_schema`: every field's type and every string's length, before anything
reads or draws it: node ids and names at most MAX_ID_CHARS, any other text MAX_TEXT_CHARS; the
`notes` and `explanations` fields the app shows, by type), that the plan belongs to the loaded model
(its channel layout, "NCHW" or "NCHW16c" (opgraph.py; a file without one is NCHW), hash and node ids), and that the groups are a legal partition; any failure is one PlanError
message. A plan is data: it is parsed as JSON, never evaluated.
Saving writes atomically (a temp file in the same folder, then os.replace).
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from engine.util.errors import PlanError
from engine.util.numbers import finite

from .plan import Plan, count_kernels
from .validate import check_convex_acyclic, check_partition, check_tuple_outputs

SCHEMA = "fuselens-plan/1"


def to_dict(plan: Plan, graph, hw, measured: dict | None = None) -> dict:
    d = {
        "schema": SCHEMA,
        "model": {"name": graph.name, "sha256": graph.sha256, "input_shapes": graph.input_shapes,
                  "layout": graph.layout},
        "strategy": plan.strategy,
        "hardware": hw.to_dict(),
        "nodes": [{"id": n.id, "name": n.op, "pattern": n.pattern} for n in graph.nodes],
        "groups": [{"id": gi, "nodes": list(g), "estimated_us": round(plan.group_us[gi], 4) if plan.group_us else None,
                    **(plan.group_kinds[gi] if gi < len(plan.group_kinds) else {})}
                   for gi, g in enumerate(plan.groups)],
        "kernels": plan.kernels,
        "estimated_us": round(plan.estimated_us, 4),
        "planning_ms": round(plan.planning_ms, 3),
        "explanations": plan.explanations,
        "notes": plan.notes,
    }
    if measured:
        d["measured"] = measured
    return d


def save(path, plan: Plan, graph, hw, measured: dict | None = None) -> None:
    from engine.util.outpath import write

    write(path, dumps(to_dict(plan, graph, hw, measured), indent=1))


def jsonable(o):
    """json.dumps's `default` for plan files: sets and tuples as lists."""
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    raise TypeError(type(o).__name__)


# Strict JSON has no Infinity or NaN (Python writes them by default; other languages' parsers refuse
# them): a non-finite number is written as one of these strings, and read back (restore) as the number.
NONFINITE = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}


def strict(o):
    """`o` with every non-finite float replaced by its NONFINITE string (tuples and sets as lists,
    numpy scalars as the Python numbers and bools they hold)."""
    stack, root = [], [o]
    stack.append((root, 0))
    while stack:   # without recursion: a deep structure cannot exhaust the stack
        box, k = stack.pop()
        v = box[k]
        if type(v).__module__ == "numpy" and getattr(v, "shape", None) == ():
            box[k] = v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            box[k] = "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")
        elif isinstance(v, dict):
            box[k] = v = dict(v)
            stack.extend((v, key) for key in v)
        elif isinstance(v, (list, tuple, set, frozenset)):
            box[k] = v = list(v)
            stack.extend((v, i) for i in range(len(v)))
    return root[0]


def restore(o):
    """strict's inverse, in place, for parsed JSON (a plan's notes): the NONFINITE strings as their numbers."""
    root = [o]
    stack = [(root, 0)]
    while stack:
        box, k = stack.pop()
        v = box[k]
        if isinstance(v, str) and v in NONFINITE:
            box[k] = NONFINITE[v]
        elif isinstance(v, dict):
            stack.extend((v, key) for key in v)
        elif isinstance(v, list):
            stack.extend((v, i) for i in range(len(v)))
    return root[0]


def dumps(obj, **kw) -> str:
    """json.dumps for every file FuseLens writes (plans, bench and table results): strict JSON
    (allow_nan=False), non-finite numbers as NONFINITE strings, sets and tuples as lists."""
    return json.dumps(strict(obj), allow_nan=False, default=jsonable, **kw)


def load(path, graph) -> Plan:
    """Read a plan file for `graph`; refuse one for another model or an illegal partition."""
    return from_dict(read(path), graph, str(path))


def read(path) -> dict:
    """A plan file's contents, checked by `check_schema` (types and sizes) but not yet against a
    model: the command line reads its plan files before any work, and checks them against the
    model once it is loaded (from_dict). Every failure is one PlanError."""
    from engine.util.cache_dir import FileTooLargeError, NotRegularFileError, read_file

    src = str(path)
    if not src.strip():
        raise PlanError("an empty path is not a plan file")
    try:
        d = json.loads(read_file(Path(path), MAX_PLAN_BYTES).decode("utf-8"))
    except FileNotFoundError:
        raise PlanError(f"{src}: file not found") from None
    except IsADirectoryError:
        raise PlanError(f"{src}: is a folder, not a plan file") from None
    except NotRegularFileError:   # a FIFO would block the read forever, /dev/zero fill the memory
        raise PlanError(f"{src}: not a regular file (a device, pipe or socket), not a plan file") from None
    except FileTooLargeError as e:
        raise PlanError(f"{src}: not a plan file ({e.strerror})") from None
    except PermissionError:
        raise PlanError(f"{src}: permission denied (cannot read the file)") from None
    except OSError as e:
        raise PlanError(f"{src}: cannot read the file ({e.strerror or e})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PlanError(f"{src}: not a plan file (invalid JSON: {e})") from None
    except ValueError:  # json's int(): a number of more than sys.get_int_max_str_digits() digits
        raise PlanError(f"{src}: not a plan file (a number with too many digits)") from None
    except RecursionError:
        raise PlanError(f"{src}: not a plan file (JSON nested too deeply)") from None
    check_schema(d, src)
    return d


# the provenance fields that say how a plan was planned and priced: an imported plan's are worked out again
_PLANNING_NOTES = ("cost", "cost_note", "measure", "measured_group_us", "estimate", "roofline_us", "group_source")


def imported(plan: Plan, src: str, graph, setup) -> Plan:
    """A plan read from `src` (from_dict), made ready to print, build and time: re-estimated for
    profile setup.hardware as the app prices a plan for setup.cost (setup.py; gui/planning.price: the
    roofline for "roofline", else the learned model of setup.target's kernel times where one serves
    it; kernel count, group costs
    and kinds), its explanations those of its groups' edges now (the file's reason kept where the
    edge is still between groups: a hand edit may have moved them), and its provenance saying where it
    came from (imported_from, imported_strategy; cost "imported"). The strategy name stays the
    file's. It was not planned here: planning_ms is 0 (the file's figure kept as provenance.planning_ms_in_file)."""
    from dataclasses import replace

    from . import annotate, cost_source, explain

    plan.set_provenance(**dict.fromkeys(_PLANNING_NOTES), imported_from=src, imported_strategy=plan.strategy,
                        planning_ms_in_file=plan.planning_ms)
    plan.planning_ms = 0.0
    est = cost_source.resolve(graph, replace(setup, cost="roofline" if setup.cost == "roofline" else "learned"),
                              costed=False)
    cm = annotate(plan, graph, setup.hardware, estimates=est.estimates)   # the roofline's model: explain's words
    plan.set_provenance(cost="imported", cost_note=f"imported from {src} (planned by {plan.strategy!r}); "
                                                   f"estimates: {est.note}")
    given = {(e.get("src"), e.get("dst")): e for e in plan.explanations
             if isinstance(e.get("reason"), str) and isinstance(e.get("detail"), str)}
    out = []
    for e in explain.explain(graph, plan.groups, cm, "custom"):
        k = (e["src"], e["dst"])
        if k in given:
            e = {**given[k], "src_group": e["src_group"], "dst_group": e["dst_group"]}
        elif e["reason"] == "cost" and e["fused_us"] < e["split_us"]:   # explain's words are the DP's
            e["detail"] = (f"fusing these two alone would save {e['split_us'] - e['fused_us']:.1f} us; the imported "
                           "plan keeps them apart")
        out.append(e)
    plan.explanations = out
    return plan


_NUMBER = (int, float)
MAX_FIGURE = 1e12   # the largest time or estimate a plan file may hold (us or ms: 11 days at least)
MAX_PLAN_BYTES = 64 << 20   # a plan of a 10,000-op model is a few MB
MAX_ID_CHARS = 256          # node ids, group members, names of the model, strategy and profile
MAX_TEXT_CHARS = 10_000     # any other string (notes, explanations): one line of a panel, not a page


def _type_name(v) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(v), type(v).__name__)


def check_schema(d, src: str = "plan") -> None:
    """PlanError naming the first field whose type is wrong (or that is missing), so that reading
    the plan afterwards cannot fail with a TypeError, KeyError or AttributeError."""
    def bad(where: str, want: str, v) -> PlanError:
        return PlanError(f"{src}: {where} must be {want}, not {_type_name(v)}"
                         + (f" ({json.dumps(v)[:40]})" if isinstance(v, (str, int, float)) else ""))

    def number(where: str, v, optional=True):
        if v is None and optional:
            return
        if isinstance(v, bool) or not isinstance(v, _NUMBER) or v != v or abs(v) > sys.float_info.max:  # inf, 1e400
            raise bad(where, "a finite number", v)
        if not finite(v, 0.0, MAX_FIGURE):   # times and estimates: -5 ms or 1.8e308 ms is no figure
            raise PlanError(f"{src}: {where} must be a number from 0 to {MAX_FIGURE:.0e}, not {json.dumps(v)[:40]}")

    if not isinstance(d, dict):
        raise PlanError(f"{src}: not a FuseLens plan (the file holds {_type_name(d)}, not an object)")
    if d.get("schema") != SCHEMA:
        raise PlanError(f"{src}: not a FuseLens plan (schema {str(d.get('schema'))[:40]!r}, expected {SCHEMA!r})")
    _check_strings(d, src)
    for key in ("model", "groups"):
        if key not in d:
            raise PlanError(f"{src}: the plan has no {key!r} field")
    model = d["model"]
    if not isinstance(model, dict):
        raise bad("'model'", "an object with 'name', 'sha256' and 'input_shapes'", model)
    if not isinstance(model.get("sha256"), str):
        raise bad("'model.sha256'", "a string", model.get("sha256"))
    if not isinstance(model.get("layout", "NCHW"), str):
        raise bad("'model.layout'", "a string (NCHW or NCHW<x>c)", model.get("layout"))
    if "strategy" in d and not isinstance(d["strategy"], str):
        raise bad("'strategy'", "a string", d["strategy"])
    hw = d.get("hardware")
    if hw is not None and not isinstance(hw, dict):
        raise bad("'hardware'", "an object", hw)
    if isinstance(hw, dict) and "name" in hw and not isinstance(hw["name"], str):
        raise bad("'hardware.name'", "a string", hw["name"])
    groups = d["groups"]
    if not isinstance(groups, list):
        raise bad("'groups'", "a list of objects with a 'nodes' list", groups)
    for gi, g in enumerate(groups):
        if not isinstance(g, dict):
            raise bad(f"'groups[{gi}]'", "an object with a 'nodes' list", g)
        nodes = g.get("nodes")
        if not isinstance(nodes, list):
            raise bad(f"'groups[{gi}].nodes'", "a list of node ids", nodes)
        for k, n in enumerate(nodes):
            if not isinstance(n, str):
                raise bad(f"'groups[{gi}].nodes[{k}]'", "a node id string", n)
        number(f"'groups[{gi}].estimated_us'", g.get("estimated_us"))
    nodes = d.get("nodes", [])
    if not isinstance(nodes, list):
        raise bad("'nodes'", "a list of objects with an 'id'", nodes)
    for k, n in enumerate(nodes):
        if not isinstance(n, dict):
            raise bad(f"'nodes[{k}]'", "an object with an 'id'", n)
        if not isinstance(n.get("id"), str):
            raise bad(f"'nodes[{k}].id'", "a node id string", n.get("id"))
    for key in ("estimated_us", "planning_ms"):
        number(f"{key!r}", d.get(key))
    if d.get("explanations") is not None:
        if not isinstance(d["explanations"], list) or not all(isinstance(e, dict) for e in d["explanations"]):
            raise bad("'explanations'", "a list of objects", d["explanations"])
    for k, e in enumerate(d.get("explanations") or []):
        for key in ("src", "dst"):
            if key in e and not isinstance(e[key], str):
                raise bad(f"'explanations[{k}].{key}'", "a node id string", e[key])
        for key in ("fused_us", "split_us"):
            if key in e:
                number(f"'explanations[{k}].{key}'", e[key], optional=False)
    notes = d.get("notes")
    if notes is not None and not isinstance(notes, dict):
        raise bad("'notes'", "an object", notes)
    for key, want in _NOTE_TYPES.items():   # what the app reads of an imported plan's notes
        if (notes or {}).get(key) is None:
            continue
        v = notes[key]
        if want == "text" and not isinstance(v, str):
            raise bad(f"'notes.{key}'", "a string", v)
        if want == "number":
            number(f"'notes.{key}'", v)
        if want == "texts" and not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
            raise bad(f"'notes.{key}'", "a list of strings", v)
        if want == "numbers":
            if not isinstance(v, list):
                raise bad(f"'notes.{key}'", "a list of numbers (or nulls)", v)
            for i, x in enumerate(v):
                number(f"'notes.{key}[{i}]'", x)
        if want == "object":
            if not isinstance(v, dict):
                raise bad(f"'notes.{key}'", "an object", v)
            if v.get("target") is not None and not isinstance(v["target"], str):
                raise bad(f"'notes.{key}.target'", "a string", v["target"])


# the notes a Provenance is read from (plan.py; shown by engine/report/result_rows.py, the app's panels) -> their type
_NOTE_TYPES = {"estimate": "text", "cost": "text", "cost_note": "text", "imported_strategy": "text",
               "imported_from": "text", "group_source": "texts", "measured_group_us": "numbers",
               "roofline_us": "number", "measure": "object"}


def _check_strings(d: dict, src: str) -> None:
    """PlanError for a string longer than the plan may hold (node ids and names MAX_ID_CHARS, any
    other MAX_TEXT_CHARS, object keys MAX_ID_CHARS), walked without recursion, so that no oversized
    text reaches a message, a panel or the graph."""
    short = {("model", "name"), ("model", "sha256"), ("model", "layout"), ("strategy",), ("hardware", "name")}
    stack = [((), d)]
    while stack:
        path, v = stack.pop()
        if isinstance(v, dict):
            for k, x in v.items():
                if len(k) > MAX_ID_CHARS:
                    raise PlanError(f"{src}: {_where(path)} has a key of {len(k):,} characters; "
                                    f"a plan's keys are at most {MAX_ID_CHARS}")
                stack.append(((*path, k), x))
        elif isinstance(v, list):
            stack.extend(((*path, i), x) for i, x in enumerate(v))
        elif isinstance(v, str):
            is_id = (path in short or (len(path) == 4 and path[0] == "groups" and path[2] == "nodes")
                     or (len(path) == 3 and path[0] == "nodes"))
            cap = MAX_ID_CHARS if is_id else MAX_TEXT_CHARS
            if len(v) > cap:
                what = "node id" if is_id and path[0] in ("groups", "nodes") else "string"
                raise PlanError(f"{src}: {_where(path)} is a {what} of {len(v):,} characters; a plan's "
                                f"{what}s are at most {cap:,}")


def _where(path) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    out = out if len(out) <= 120 else out[:117] + "..."
    return f"'{out}'" if out else "the plan"


def from_dict(d: dict, graph, src: str = "plan") -> Plan:
    check_schema(d, src)
    model = d["model"]
    layout = model.get("layout", "NCHW")   # plans from before layouts were NCHW
    if layout != graph.layout:
        raise PlanError(f"{src}: this plan is for the {layout[:40]} channel layout, but the loaded {graph.name!r} is "
                        f"in {graph.layout}; open the model in {layout[:40]} (--layout "
                        f"{'nchw' if layout == 'NCHW' else 'blocked'}, or a device of that layout) to use it")
    if model.get("sha256") != graph.sha256:
        raise PlanError(f"{src}: this plan is for model {model.get('name')!r} "
                        f"(sha256 {str(model.get('sha256'))[:12]}..., shapes {str(model.get('input_shapes'))[:80]}), not for the "
                        f"loaded {graph.name!r} (sha256 {graph.sha256[:12]}..., shapes {graph.input_shapes})")
    groups = [list(g["nodes"]) for g in d["groups"]]
    ids = {n["id"] for n in d.get("nodes", [])}
    if ids and ids != {n.id for n in graph.nodes}:
        raise PlanError(f"{src}: the plan's node ids do not match the model's operator graph")
    try:
        check_partition(graph, groups)
        check_convex_acyclic(graph, groups)
        check_tuple_outputs(graph, groups)
    except PlanError as e:
        raise PlanError(f"{src}: {e}") from None
    return Plan(strategy=str(d.get("strategy", "custom")), groups=groups,
                hardware=(d.get("hardware") or {}).get("name", ""), estimated_us=float(d.get("estimated_us") or 0),
                group_us=[float(g.get("estimated_us") or 0) for g in d["groups"]],
                explanations=list(d.get("explanations") or []), planning_ms=float(d.get("planning_ms") or 0),
                notes={k: v if _NOTE_TYPES.get(k) in ("text", "texts") else restore(v)
                       for k, v in (d.get("notes") or {}).items()}, kernel_count=count_kernels(graph, groups))
