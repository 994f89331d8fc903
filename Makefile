# Two commands on a fresh machine: `make run` and `make test` (see README.md).
PRESET ?= default
BUILD_DIR := build/$(PRESET)

.PHONY: all deps configure build run test format clean

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

format:
	@git ls-files '*.h' '*.cc' | xargs clang-format -i

clean:
	@rm -rf build out
