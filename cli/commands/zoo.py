"""`main.py zoo list | export NAME OUT [--resolution N]`: the built-in models."""
from __future__ import annotations

from cli.arguments import arg, subcommands
from cli.output import say

HELP = "the built-in models"
ARGS = (subcommands("zoo_command", ("list", "one line per built-in model", ()),
                    ("export", "write a built-in model as ONNX",
                     (arg("name"), arg("out"), arg("--resolution", type=int)))),)


def check(a) -> None:
    """export: a known model, a resolution it takes, an output file that can be written."""
    if a.zoo_command == "export":
        from engine.util import outpath
        from engine.model import zoo

        zoo.entry(a.name)
        zoo.check_resolution(a.name, a.resolution)
        outpath.check_file(a.out, "output file")


def run(a) -> int:
    from engine.model import zoo

    if a.zoo_command == "list":
        import onnx

        for name, e in zoo.MODELS.items():
            m = onnx.load(str(zoo.path(name)))
            r = e.default_resolution
            say(f"{name:<16} {zoo.count_nodes(m):>5} nodes {zoo.count_params(m) / 1e6:>8.2f} M params   "
                f"input 1x3x{r}x{r}   {e.title}")
        return 0
    from engine.util import outpath

    m = zoo.build(zoo.entry(a.name).name, a.resolution)
    outpath.write(a.out, m.SerializeToString())
    say(f"wrote {a.out}: {zoo.count_nodes(m)} nodes, {zoo.count_params(m) / 1e6:.2f} M params")
    return 0
