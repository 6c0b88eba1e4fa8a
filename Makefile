# make setup : .venv with the project installed, and graphviz's `dot` where apt can provide it
# make run   : setup, then the app on the built-in MobileNetV2
# make test  : setup, then the whole test suite, headless (the emulated-board tests run when its root is built;
#              36-52 minutes on 2 cores, by machine); CI (.ci/run) runs this one
# make test-fast : setup, then the fast tier, tests/unit (a test's tier is its folder: tests/unit, tests/gui,
#              tests/integration; no whole-model builds, benchmarks, tuning, board emulation or CLI
#              runs that build; about 3.5 minutes on 2 cores)
# make test-boards : build the emulated Raspberry Pi 4B (arm64 Debian root + qemu-user), then run its tests
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.fuselens-installed
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo -n)

QT_DEBS := libxcb-cursor0 libxkbcommon-x11-0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 libxcb-render-util0 \
           libxcb-image0 libxcb-xinerama0 libxcb-randr0 libegl1 libgl1 libfontconfig1 libdbus-1-3

.PHONY: setup run test test-fast test-gui dot qt-libs cross board-root test-boards clean

setup: $(STAMP) dot qt-libs cross

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

# graphviz is optional: without `dot` the graph view uses its built-in layout and says so.
dot:
	@command -v dot >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1 || \
	  { echo "installing Debian's graphviz (for graph layout)"; \
	    $(SUDO) apt-get install -y -qq graphviz >/dev/null 2>&1 || \
	    { $(SUDO) apt-get update -qq >/dev/null 2>&1 && $(SUDO) apt-get install -y -qq graphviz >/dev/null 2>&1; } || \
	    echo "could not install graphviz; the app will use its built-in layout"; }

# Qt's xcb plugin needs these X libraries to open a window (not needed headless); apt only, best effort.
qt-libs:
	@missing=$$(for p in $(QT_DEBS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done 2>/dev/null); \
	if [ -n "$$missing" ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Qt's X11 libraries: $$missing"; \
	  $(SUDO) apt-get install -y -qq $$missing >/dev/null 2>&1 || \
	  { $(SUDO) apt-get update -qq >/dev/null 2>&1 && $(SUDO) apt-get install -y -qq $$missing >/dev/null 2>&1; } || \
	  echo "could not install $$missing; the app needs them to open a window (tests run headless without them)"; \
	fi

# the cross compiler for boards (engine/devices/boards.py); optional: without it a board target says what to install
cross:
	@command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1 || \
	  { echo "installing Debian's gcc-aarch64-linux-gnu (cross-compiling for boards)"; \
	    $(SUDO) apt-get install -y -qq gcc-aarch64-linux-gnu >/dev/null 2>&1 || \
	    { $(SUDO) apt-get update -qq >/dev/null 2>&1 && $(SUDO) apt-get install -y -qq gcc-aarch64-linux-gnu >/dev/null 2>&1; } || \
	    echo "could not install gcc-aarch64-linux-gnu; board targets will say so"; }

# debian-archive-keyring: debootstrap checks the bookworm Release with it (installed on Debian, not on Ubuntu)
BOARD_DEBS := qemu-user-static debootstrap debian-archive-keyring gcc-aarch64-linux-gnu

# the emulated board's root (.boards/arm64, about 600 MB, a minute): needs root for debootstrap
board-root: setup
	@missing=$$(for p in $(BOARD_DEBS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done 2>/dev/null); \
	if [ -n "$$missing" ]; then \
	  echo "installing $$missing"; \
	  $(SUDO) apt-get install -y -qq $$missing >/dev/null 2>&1 || \
	  { $(SUDO) apt-get update -qq >/dev/null 2>&1 && $(SUDO) apt-get install -y -qq $$missing >/dev/null 2>&1; }; \
	fi
	$(SUDO) env PIP="$(PY) -m pip" scripts/board_root.sh

test-boards: board-root
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q tests/integration/test_boards.py $(PYTEST_ARGS)

run: setup
	@$(PY) main.py zoo:mobilenetv2; rc=$$?; [ $$rc = 3 ] || exit $$rc

test: setup
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q $(PYTEST_ARGS)

test-fast: setup
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q tests/unit $(PYTEST_ARGS)

test-gui: setup
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q tests/gui $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .boards
