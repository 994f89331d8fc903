# Two commands on a fresh machine: `make run` and `make test` (see README.md).
# CI (.ci/run) runs `make ci`: the tests, the sanitizer suites and a fuzz smoke
# run (docs/reliability.md).
PRESET ?= default
BUILD_DIR := build/$(PRESET)
# Seconds per fuzz target for `make fuzz`; `make fuzz-smoke` runs each briefly.
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 20
FUZZ_SMOKE_RUNS ?= 2000
# Extra configure arguments, e.g. CMAKE_ARGS=-DTENSORMEM_WARNINGS_AS_ERRORS=ON (CI).
CMAKE_ARGS ?=

VENV ?= .venv

.PHONY: all deps configure build run test python sanitize fuzz fuzz-build fuzz-smoke ci \
        reliability-report format clean gpu-bundle

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake --preset $(PRESET) $(CMAKE_ARGS) >/dev/null

build: configure
	@cmake --build --preset $(PRESET)

run: build
	@bash tools/run_main_job.sh $(BUILD_DIR)

# With PRESET=asan: every test (but Python's) under ASan+UBSan+LeakSanitizer;
# with PRESET=tsan: the threaded tests under ThreadSanitizer. The default
# preset's tests include the GPU bundle's (cuda.gpu_bundle), so it is built too.
test: build
	@if [ "$(PRESET)" = default ]; then $(MAKE) --no-print-directory gpu-bundle; fi
	@ctest --preset $(PRESET)

# The Python package, installed into $(VENV): a venv that also sees Debian's
# python3-numpy and python3-torch (Debian's pip refuses system-wide installs).
python: configure
	@/usr/bin/python3 -m venv --system-site-packages $(VENV)
	@TENSORMEM_CMAKE_BUILD_DIR=$(CURDIR)/$(BUILD_DIR) $(VENV)/bin/python -m pip install \
		--no-build-isolation --no-deps --no-index --quiet ./python
	@echo "tensormem $$(cd /tmp && $(CURDIR)/$(VENV)/bin/python -c 'import tensormem; print(tensormem.__version__)') installed in $(VENV)"

# The GPU bundle (docs/gpu-bundle.md): a Release build whose binaries find their
# libraries inside build/gpu-bundle/, for a machine with a GPU but none of
# Debian's libraries. `build/gpu-bundle/gpu-check.sh` runs its check there.
gpu-bundle: deps
	@cmake --preset gpu-bundle $(CMAKE_ARGS) >/dev/null
	@cmake --build --preset gpu-bundle
	@bash tools/gpu-bundle/make-bundle.sh build/gpu-bundle-build build/gpu-bundle

sanitize:
	@$(MAKE) --no-print-directory test PRESET=asan
	@$(MAKE) --no-print-directory test PRESET=tsan

fuzz-build: deps
	@cmake --preset fuzz $(CMAKE_ARGS) >/dev/null
	@cmake --build --preset fuzz

fuzz: fuzz-build
	@bash fuzz/run_fuzzers.sh build/fuzz $(FUZZ_SECONDS)

fuzz-smoke: fuzz-build
	@FUZZ_RUNS=$(FUZZ_SMOKE_RUNS) bash fuzz/run_fuzzers.sh build/fuzz $(FUZZ_SMOKE_SECONDS)

ci:
	@bash .ci/run

reliability-report:
	@python3 tools/reliability-report --update docs/reliability.md

format:
	@git ls-files '*.h' '*.cc' | xargs clang-format-14 -i

clean:
	@rm -rf build out python/build python/*.egg-info
