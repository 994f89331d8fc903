# Two commands on a fresh machine: `make run` and `make test` (see README.md).
PRESET ?= default
BUILD_DIR := build/$(PRESET)

VENV ?= .venv

.PHONY: all deps configure build run test python format clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake --preset $(PRESET) >/dev/null

build: configure
	@cmake --build --preset $(PRESET)

run: build
	@bash tools/run_main_job.sh $(BUILD_DIR)

test: build
	@ctest --preset $(PRESET)

# The Python package, installed into $(VENV): a venv that also sees Debian's
# python3-numpy and python3-torch (Debian's pip refuses system-wide installs).
python: configure
	@/usr/bin/python3 -m venv --system-site-packages $(VENV)
	@TENSORMEM_CMAKE_BUILD_DIR=$(CURDIR)/$(BUILD_DIR) $(VENV)/bin/python -m pip install \
		--no-build-isolation --no-deps --no-index --quiet ./python
	@echo "tensormem $$(cd /tmp && $(CURDIR)/$(VENV)/bin/python -c 'import tensormem; print(tensormem.__version__)') installed in $(VENV)"

format:
	@git ls-files '*.h' '*.cc' | xargs clang-format -i

clean:
	@rm -rf build out python/build python/*.egg-info
