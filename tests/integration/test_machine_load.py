"""How busy the machine was while timing (engine/util/machine_load.py), recorded with every result and said
wherever a figure or verdict from a busy run is shown: the bench table, its verdicts, --json, table rows,
the measured recommendation. (The app's panels: tests/gui/test_gui_labels.py.)"""

import os
import pytest
from engine.util import machine_load
from tests.support.machine_load import LINUX, window  # noqa: F401


@pytest.mark.skipif(not LINUX, reason="/proc/stat is Linux's")
def test_busy_loops_on_every_core_give_a_clearly_higher_share_than_an_idle_window():
    cpus = os.cpu_count() or 1
    tries = []
    for _ in range(3):   # the test machine may be loaded by others: compare, and try again
        idle, busy = window(0.8), window(0.8, busy=cpus)
        tries.append((idle, busy))
        if idle is not None and busy is not None and busy > idle + 0.15:
            assert busy > machine_load.BUSY_SHARE and 0.0 <= idle <= 1.0 and busy <= 1.0
            return
    if all(i is not None and i > 0.85 for i, _ in tries):
        pytest.skip(f"the machine is saturated already: idle windows {tries}")
    pytest.fail(f"busy loops on all {cpus} cores did not raise the share: (idle, busy) {tries}")

