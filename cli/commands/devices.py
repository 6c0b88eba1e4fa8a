"""`main.py devices`: the devices a benchmark can run on, and the boards it cross-compiles for."""
from __future__ import annotations

from cli.output import say

HELP = "list the devices a benchmark can run on"
ARGS = ()


def run(a) -> int:
    from engine.devices import targets

    found = targets.devices()   # first: a bad devices.json is one line, with no table header before it
    say(f"{'device':<40} {'kind':<5} {'profile':<22} description")
    for d in found:
        flag = "" if d.get("reachable", True) is not False else "  (unreachable)"
        say(f"{d['name']:<40} {d['kind']:<5} {d.get('profile') or '-':<22} {d['description']}{flag}")
    say()
    say("boards (cross-compiled; reach one with rpc://TRACKER:PORT/KEY?device=BOARD):")
    for b in targets.boards_summary():
        cc = "installed" if b["cc_installed"] else f"missing: apt-get install {b['cc_package']}"
        say(f"  {b['name']:<22} {b['title']}: {b['arch']} {b['mcpu']}, cross compiler {b['cc']} ({cc})")
    return 0
