# ringtool: `make trace` and `make test` each set everything up first (idempotent).
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
ARGS  ?=

.PHONY: setup uninstall trace test test-unit test-vm test-kernels lint bench doctor clean

setup:
	@bash scripts/setup.sh

# Removes what setup put outside the checkout (scripts/host-files.sh): the
# /usr/local/bin/ringtool link, completion, man page, the kernel header links it made.
uninstall:
	@bash scripts/host-files.sh uninstall "$(CURDIR)/$(VENV)"

trace: setup
	$(VENV)/bin/ringtool trace $(ARGS)

# The suite in parallel (pytest-xdist, five workers): the tests that load BPF programs
# are placed by tests/helpers/machine_share.py (a file per worker at a time; a few run
# alone, the floods one at a time), in the order tests/conftest.py gives them (hence no
# reordering by xdist). PARALLEL= runs everything in one process (the emulated test VM
# does: one emulated CPU thread gains nothing from two workers).
PARALLEL ?= -n 5 --dist loadgroup --no-loadscope-reorder

test: setup
	$(PY) -m pytest $(PARALLEL) --durations=20 $(ARGS)

test-unit: setup
	$(PY) -m pytest $(PARALLEL) -m "not kernel" $(ARGS)

# The whole suite in a Debian 12 VM (root; builds the box once): see vagrant/README.md.
# ARGS go to pytest in the VM (CI: ARGS='-m kernel').
test-vm:
	@RINGTOOL_VM_PYTEST_ARGS="$(ARGS)" bash vagrant/test-vm.sh

# The tests marked all_kernels (and newest_kernel) on Debian's 6.12 and newest kernels,
# each booted directly by QEMU on the box's disk (root): see vagrant/README.md.
# ARGS replace that selection (pytest arguments); RINGTOOL_KERNELS="sid" picks kernels.
test-kernels:
	@RINGTOOL_KERNELS_PYTEST_ARGS="$(ARGS)" bash vagrant/test-kernels.sh

lint: setup
	$(VENV)/bin/ruff check ringtool tests scripts
	$(VENV)/bin/ruff format --check ringtool tests scripts
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache
	$(PY) scripts/check_architecture.py
	$(PY) scripts/check_api_docs.py
	$(PY) scripts/gen_schema.py --check

bench: setup
	$(VENV)/bin/ringtool bench all $(ARGS)

doctor: setup
	$(VENV)/bin/ringtool doctor

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
