# make setup : .venv with the project installed, and graphviz's `dot` where apt can provide it
# make run   : setup, then the app on the built-in MobileNetV2
# make test  : setup, then the whole test suite, headless
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.fuselens-installed
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup run test dot clean

setup: $(STAMP) dot

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

run: setup
	@$(PY) main.py zoo:mobilenetv2; rc=$$?; [ $$rc = 3 ] || exit $$rc

test: setup
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
