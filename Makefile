# cextend -- the README's two commands are `make demo` and `make test`.
# Each sets up a virtual environment (.venv), installs the package in
# editable mode with its test dependencies, builds the C kernels, and runs.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Extra pytest arguments for the test targets: PYTEST_ARGS="-k linear" make test
PYTEST_ARGS ?=
# make test runs on every core (pytest-xdist; a worker that finishes early
# takes tests queued for the others).  PARALLEL= runs serially.
PARALLEL ?= -n auto --dist worksteal
# The differential tester's fixed-seed programs: the first 500 in make test,
# all 2000 (its default) in make test-all.
TEST_DIFFTEST_PROGRAMS ?= 500
ACCEPTANCE := ../shared/acceptance
C_SOURCES := $(wildcard src/*.c src/*.h src/generic/*.c src/kernels/*.c src/kernels/*.h src/python/*.c src/python/*.h)
INSTALLED := $(VENV)/.installed
BUILT := build/.built

.PHONY: help install build test test-all test-torch demo demo-cnn bench cross-check sanitize fuzz valgrind cuda clean

install: $(INSTALLED)

# The test extra (pytest, pytest-xdist, ...) and the demo extra (tqdm's
# progress bar, threadpoolctl); a plain `pip install .` needs only numpy and cffi.
$(INSTALLED): pyproject.toml setup.py ffi_build.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test,demo]'
	@touch $@

# Rebuild the extension in place whenever a C source or the builder changes.
$(BUILT): $(INSTALLED) $(C_SOURCES) ffi_build.py
	$(PY) ffi_build.py
	@mkdir -p build && touch $@

build: $(BUILT)

# The maintainers keep PyTorch's "Extending PyTorch" listings (run with only
# their imports changed) beside the repository in ../shared/acceptance; a
# user's clone has none, and then only the test suite runs.
# make test leaves out the long runs (tests marked long_run, the later
# difftest programs); make test-all runs them too.  Neither runs make fuzz:
# its seeds are new each time, so a finding there is news, not a red build.
# (pytest's status 5: PYTEST_ARGS selected none of the acceptance tests.)
ACCEPTANCE_RUN = if [ -d $(ACCEPTANCE) ]; then \
		echo "== acceptance: $(ACCEPTANCE)"; \
		$(PY) -m pytest $(ACCEPTANCE) -q -p no:cacheprovider $(PYTEST_ARGS) || [ $$? -eq 5 ]; \
	fi

test: build
	DIFFTEST_PROGRAMS=$(TEST_DIFFTEST_PROGRAMS) $(PY) -m pytest tests $(PARALLEL) $(PYTEST_ARGS)
	@$(ACCEPTANCE_RUN)

test-all: build
	CEXTEND_TEST_ALL=1 $(PY) -m pytest tests $(PARALLEL) $(PYTEST_ARGS)
	@$(ACCEPTANCE_RUN)

# torch 2.13.0 into .venv: the torch-parity tests (about 3,000) run instead
# of skipping.  Exactly this spec: where the CPU wheel is served (CI's
# machines), another spec can resolve to a multi-GB CUDA build.
test-torch: $(INSTALLED)
	$(PY) -m pip install --quiet --disable-pip-version-check torch==2.13.0

demo: build
	$(PY) -m cextend.demo

demo-cnn: build
	$(PY) -m cextend.demo --model cnn

# The benchmark table (bench/results.json too, rendered as BENCHMARKS.md).
# torch's columns appear when torch is installed in $(VENV); numpy runs on
# its full-speed OpenBLAS kernel (bench/environment.py) with its threads
# limited by threadpoolctl.
bench: build
	$(PY) -m pip install --quiet --disable-pip-version-check -e ".[test,bench]"
	$(PY) bench/bench.py --settle 120 $(BENCH_ARGS)
	@# On an AVX-512 CPU, also cextend's AVX2 kernels against OpenBLAS's Haswell kernel.
	if grep -q avx512f /proc/cpuinfo; then $(PY) bench/bench.py --pairing avx2 --suite gemm --threads 1 $(BENCH_ARGS); fi
	$(PY) bench/conv_bench.py $(CONV_BENCH_ARGS)
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(PY) bench/autograd_bench.py --json bench/autograd_results.json
	$(PY) bench/table.py bench/results.json --out BENCHMARKS.md
	$(PY) bench/training_targets.py

# The whole test suite against an ASan + UBSan build of the extension.  The
# sanitizer runtimes are preloaded into the (unsanitised) Python; any report
# aborts the run (under xdist a report kills its worker, which fails the
# run as "node down").  The normal build is restored afterwards, pass or fail.
ASAN_RT := $(shell $(CC) -print-file-name=libasan.so)
UBSAN_RT := $(shell $(CC) -print-file-name=libubsan.so)
sanitize: $(INSTALLED)
	CEXTEND_SANITIZE=1 $(PY) ffi_build.py
	@status=0; \
	LD_PRELOAD="$(ASAN_RT) $(UBSAN_RT)" \
	ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=1:allocator_may_return_null=1 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	CEXTEND_SANITIZED=1 CEXTEND_TEST_ALL=1 PYTHONMALLOC=malloc \
		$(PY) -m pytest tests -s -q -p no:cacheprovider $(PARALLEL) $(PYTEST_ARGS) || status=$$?; \
	$(PY) ffi_build.py >/dev/null; rm -f $(BUILT); \
	exit $$status

# valgrind memcheck over a focused workload; counts only errors whose stack
# passes through cextend's extension modules (Python itself is not checked).
# valgrind 3.19 cannot run AVX-512 and hides it, so dispatch picks AVX2 here.
valgrind: build
	@# The real interpreter binary (valgrind would trace a wrapper script), given
	@# the venv's packages and this tree on its path, as the venv would.
	PYTHONMALLOC=malloc PYTHONPATH=$(CURDIR):$$($(PY) -c "import site; print(site.getsitepackages()[0])") \
		valgrind --tool=memcheck --num-callers=30 --log-file=build/valgrind.log \
		$$($(PY) -c "import os, sys; print(os.path.realpath(sys.executable))") tests/valgrind_subset.py
	@errors=$$(grep -c -E "^==[0-9]+== (Invalid|Conditional|Use of uninitialised|Syscall param|Mismatched|Source and destination)" build/valgrind.log); \
	ours=$$(awk '/^==[0-9]+== [A-Z]/{block=$$0; keep=0} /_(C|engine)\.(abi3|cpython)/{keep=1} /^==[0-9]+== *$$/{if (keep && block ~ /(Invalid|uninitialised|Conditional)/) n++; keep=0} END{print n+0}' build/valgrind.log); \
	echo "valgrind: $$errors memcheck errors in the process, $$ours in cextend's code (build/valgrind.log)"; \
	test "$$ours" -eq 0

# The optional CUDA library (nvcc); with a GPU present, its tests run too.
cuda: build
	$(PY) cuda_build.py
	CEXTEND_TEST_ALL=1 $(PY) -m pytest tests/test_cuda.py -q $(PYTEST_ARGS)

# Long fuzzing and property testing on new seeds (the test targets run
# short, fixed-seed counts).
FUZZ_EXAMPLES ?= 20000
DIFFTEST_PROGRAMS ?= 50000
fuzz: build
	$(PY) tests/fuzz_api.py --examples $(FUZZ_EXAMPLES) --seed $$(date +%s)
	$(PY) tests/fuzz_serialization.py --cases 5000 --seed $$(date +%s)
	HYPOTHESIS_PROFILE=fuzz $(PY) -m pytest tests/test_properties.py -q
	PYTHONPATH=tests $(PY) -m difftest --programs $(DIFFTEST_PROGRAMS) --seed $$(date +%s)

# Compile every C source for aarch64 (only the portable kernels exist there):
# no -march anywhere, so the build must not depend on x86.
CROSS_CC ?= aarch64-linux-gnu-gcc
cross-check:
	@mkdir -p build/cross
	@for f in src/*.c src/kernels/*.c; do \
		$(CROSS_CC) -std=c11 -O2 -Wall -Wextra -Werror -fopenmp -Isrc -c $$f -o build/cross/$$(basename $$f .c).o || exit 1; \
	done
	@echo "cross-check: every C source compiles for $$($(CROSS_CC) -dumpmachine)"

clean:
	rm -rf build $(VENV) cextend/_C.*so cextend/_engine.*so cextend/libcextend_cuda.so *.egg-info .pytest_cache \
		examples/*/_ext examples/*/build examples/*/src/*.egg-info

help:
	@echo "make demo         train an MLP on the bundled digits (gradchecks, accuracy, epoch times)"
	@echo "make demo-cnn     the same with a CNN (Conv2d, BatchNorm2d, MaxPool2d, ...; AdamW)"
	@echo "make test         the test suite on every core (PYTEST_ARGS=\"-k linear\" picks tests)"
	@echo "make test-all     the test suite with its long runs (what CI runs)"
	@echo "make test-torch   install torch 2.13.0 (CPU) into .venv: the torch-parity tests run"
	@echo "make install      create .venv with cextend (editable) and its test and demo extras"
	@echo "make build        rebuild the C extension in place after a C change"
	@echo "make bench        the benchmark tables against numpy and torch (bench/results.json)"
	@echo "make sanitize     the test suite under AddressSanitizer + UBSan"
	@echo "make valgrind     memcheck over a focused workload"
	@echo "make fuzz         long fuzzing, property tests and differential programs against torch"
	@echo "make cross-check  compile the C for aarch64 (needs aarch64-linux-gnu-gcc)"
	@echo "make cuda         build the CUDA library with nvcc and run its tests"
	@echo "make clean        remove .venv, build outputs and the compiled extension"
	@echo "Targets set up .venv first when needed; use it with .venv/bin/python."
	@echo "python -m cextend.demo --help lists the demo's options."
