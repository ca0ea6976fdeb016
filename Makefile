# tritium: build, test and demo entry points.  See CMakeLists.txt for targets.
#
#   make deps     install what the project needs (idempotent, fast when present)
#   make build    deps + configure (once) + ninja
#   make test     build + GoogleTest + lit/FileCheck + pytest (not gpu)
#   make test-gpu build + pytest -m gpu (GPU machine)
#   make demo     build + examples/run_all.py
#   make fuzz     build + differential fuzzing of the tile passes (SEEDS=200 START=0)
#   make fuzz-mutate  build + mutated sources/IR must fail cleanly (SEEDS=200 START=0)
#   make test-sanitize  C++ tests, lit and pytest (CPU) under ASan/UBSan + leaks (clang,
#                       build-asan/)
#   make fuzz-parser    libFuzzer on the IR parser/verifier/printer (FUZZ_SECONDS=60)
#   make clean
#
# Variables: BUILD_DIR=build  JOBS=2  PYTHON=python3  CMAKE_BUILD_TYPE=Release
#            CMAKE_ARGS="-DTRITIUM_SANITIZE=ON ..."   TRITIUM_SKIP_DEPS=1 (skip deps)
#            PYTEST_ARGS="-x -k foo"  LIT_ARGS="-a"

.DEFAULT_GOAL := build
SHELL := /bin/bash

PYTHON ?= python3
BUILD_DIR ?= build
JOBS ?= 2
CMAKE ?= cmake
CMAKE_BUILD_TYPE ?= Release
CMAKE_ARGS ?=
PYTEST_ARGS ?=
LIT_ARGS ?=
LIT ?= $(PYTHON) -c 'import lit.main; lit.main.main()'

# lit.cfg.py reads this to find tritium-opt.
export TRITIUM_BUILD_DIR := $(abspath $(BUILD_DIR))
PYPATH := PYTHONPATH=$(CURDIR)/python$${PYTHONPATH:+:$$PYTHONPATH}

.PHONY: all deps configure build demo test unittest lit pytest test-gpu clean \
        _unittest _lit _pytest fuzz fuzz-mutate test-sanitize fuzz-parser

all: build

deps:
	@bash scripts/setup-deps.sh

# Configure only when there is no build.ninja yet; afterwards ninja re-runs
# CMake by itself when a CMakeLists.txt changes or a globbed file appears.
configure: deps
	@if [ ! -f "$(BUILD_DIR)/build.ninja" ]; then \
	  set -x; \
	  $(CMAKE) -S . -B "$(BUILD_DIR)" -G Ninja \
	    -DCMAKE_BUILD_TYPE=$(CMAKE_BUILD_TYPE) \
	    -DPython_EXECUTABLE="$$($(PYTHON) -c 'import sys; print(sys.executable)')" \
	    $(CMAKE_ARGS); \
	fi

build: configure
	@$(CMAKE) --build "$(BUILD_DIR)" -j $(JOBS)

demo: build
	$(PYPATH) $(PYTHON) examples/run_all.py

# Random tile programs: raw IR vs each pass / the pipeline, bit for bit (tools/fuzz/kernel_fuzz.py).
SEEDS ?= 200
START ?= 0
fuzz: build
	$(PYPATH) $(PYTHON) tools/fuzz/kernel_fuzz.py --seeds $(SEEDS) --start $(START)

# Mutated kernel sources and IR text into the frontend, _C and tritium-opt: nothing may crash,
# hang or escape without a located error (tools/fuzz/mutate_fuzz.py; SEEDS inputs per kind,
# findings minimised into fuzz-findings/).
fuzz-mutate: build
	$(PYPATH) $(PYTHON) tools/fuzz/mutate_fuzz.py --ptx --execute --seeds $(SEEDS) --start $(START)

# Each test step has a build-free variant (_unittest, _lit, _pytest) so that
# `make test` builds once and then runs them in order.
unittest: build
	@$(MAKE) --no-print-directory _unittest
lit: build
	@$(MAKE) --no-print-directory _lit
pytest: build
	@$(MAKE) --no-print-directory _pytest

# Sequential on purpose: unittests, then lit, then pytest; the first failure stops.
test: build
	@$(MAKE) --no-print-directory _unittest
	@$(MAKE) --no-print-directory _lit
	@$(MAKE) --no-print-directory _pytest

_unittest:
	@if [ -x "$(BUILD_DIR)/tritium-unittests" ]; then \
	  set -x; "$(BUILD_DIR)/tritium-unittests"; \
	else \
	  echo "tritium-unittests not built (no GoogleTest or no unittest/**/*.cpp): skipped"; \
	fi

_lit:
	@if [ -n "$$(find test -name '*.tir' -print -quit)" ]; then \
	  set -x; $(LIT) -v $(LIT_ARGS) test/; \
	else \
	  echo "no test/**/*.tir: lit skipped"; \
	fi

# pytest exits 5 when it collects no test; that is not a failure here.
_pytest:
	@echo '+ $(PYPATH) $(PYTHON) -m pytest -q python/test -m "not gpu" $(PYTEST_ARGS)'; \
	  $(PYPATH) $(PYTHON) -m pytest -q python/test -m "not gpu" $(PYTEST_ARGS); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest: no tests collected"; rc=0; fi; exit $$rc

# The C++ tests, lit and pytest (CPU) under AddressSanitizer + UndefinedBehaviorSanitizer,
# leaks included: a clang build in build-asan/ whose _C goes to build-asan/python/ (the
# in-tree _C stays).  Installs clang-14 + libclang-rt-14-dev when missing.  See
# scripts/sanitize.sh.
test-sanitize: deps
	@JOBS=$(JOBS) PYTHON=$(PYTHON) PYTEST_ARGS='$(PYTEST_ARGS)' LIT_ARGS='$(LIT_ARGS)' \
	  bash scripts/sanitize.sh test

# libFuzzer on the IR parser, verifier and printer (tools/fuzz/parse_fuzzer.cpp), in
# build-asan/, its corpus seeded from test/**/*.tir.
FUZZ_SECONDS ?= 60
fuzz-parser: deps
	@JOBS=$(JOBS) PYTHON=$(PYTHON) bash scripts/sanitize.sh fuzz $(FUZZ_SECONDS)

test-gpu: build
	@echo '+ $(PYPATH) $(PYTHON) -m pytest -q python/test -m gpu $(PYTEST_ARGS)'; \
	  $(PYPATH) $(PYTHON) -m pytest -q python/test -m gpu $(PYTEST_ARGS); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest: no gpu tests collected"; rc=0; fi; exit $$rc

clean:
	rm -rf "$(BUILD_DIR)" python/tritium/_C*.so
	find test -type d -name Output -prune -exec rm -rf {} +
