# cextend -- the README's two commands are `make demo` and `make test`.
# Each sets up a virtual environment (.venv), installs the package in
# editable mode with its test dependencies, builds the C kernels, and runs.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=
C_SOURCES := $(wildcard src/*.c src/*.h src/generic/*.c)
INSTALLED := $(VENV)/.installed
BUILT := build/.built

.PHONY: install build test demo clean

install: $(INSTALLED)

$(INSTALLED): pyproject.toml setup.py ffi_build.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@touch $@

# Rebuild the extension in place whenever a C source or the builder changes.
$(BUILT): $(INSTALLED) $(C_SOURCES) ffi_build.py
	$(PY) ffi_build.py
	@mkdir -p build && touch $@

build: $(BUILT)

test: build
	$(PY) -m pytest tests $(PYTEST_ARGS)

demo: build
	$(PY) -m cextend.demo

clean:
	rm -rf build $(VENV) cextend/_C.*so *.egg-info .pytest_cache
