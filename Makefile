# Thin wrapper around CMake. `make demo` and `make test` work on a fresh
# Debian 12 machine: they install what is missing, build, then run.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
# CUDA is built when nvcc is found (on PATH or in /usr/local/cuda).
NVCC := $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
ifneq ($(NVCC),)
CMAKE_FLAGS += -DCMAKE_CUDA_COMPILER=$(NVCC)
endif

# Fuzzing (tests/fuzz/README.md): a clang build with ASan + UBSan + libFuzzer.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 20
RUNS ?= 10000000
# The sanitizer build (AddressSanitizer + UndefinedBehaviorSanitizer +
# LeakSanitizer, -O1, CPU only) and the test suite under it.
ASAN_BUILD ?= build-asan

.PHONY: all deps build demo test test-sanitize bench clean fuzz-build fuzz-smoke fuzz-long wheel-test wheel-cuda

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# The binary CPU wheel of the Python package (docs/python.md, scripts/wheel-test.sh):
# built, repaired by auditwheel to a manylinux tag, installed into a fresh virtual
# environment with no compiler on PATH, python/tests run against it and this build's
# tool. The wheel: $(BUILD)/wheel/wheelhouse; timings: $(BUILD)/wheel/summary.txt.
wheel-test: build
	bash scripts/wheel-test.sh $(BUILD) $(BUILD)/ctrecon

# The CUDA 13 wheel pyctrecon-cu13 (docs/python.md, "CUDA wheel"; not in CI: it
# needs CUDA 13's nvcc and builds GPU code for seven architectures): built,
# repaired (the CUDA libraries left to NVIDIA's wheels), installed with them into a
# fresh venv, python/tests on the CPU; $(BUILD)/wheel-cuda/carry holds the wheel for
# scripts/wheel-cuda-gpu-test.sh on a GPU machine.
wheel-cuda: build
	bash scripts/wheel-test.sh --cuda $(BUILD) $(BUILD)/ctrecon

# --force: a second `make demo` replaces the first's files in demo-out/
demo: build
	./$(BUILD)/ctrecon demo --force

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Every test, the CLI tests included (they run the sanitized ctrecon); any
# sanitizer report fails the test (tests/sanitized.sh).
test-sanitize: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCTRECON_CUDA=off -DCTRECON_SANITIZE=on
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS)

bench: build
	./$(BUILD)/bench/bench_fdk_cpu --json $(BUILD)/bench_fdk_cpu.json

$(FUZZ_BUILD)/CMakeCache.txt:
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang \
	  -DCTRECON_FUZZ=ON -DCTRECON_CUDA=off

fuzz-build: deps $(FUZZ_BUILD)/CMakeCache.txt
	cmake --build $(FUZZ_BUILD) -j $(JOBS)

# Every target over its committed corpus for FUZZ_SECONDS; non-zero on any finding.
fuzz-smoke: fuzz-build
	bash scripts/fuzz.sh smoke $(FUZZ_BUILD) $(FUZZ_SECONDS)

# Every target to RUNS executions, JOBS at a time; $(FUZZ_BUILD)/fuzz-long/summary.txt.
fuzz-long: fuzz-build
	bash scripts/fuzz.sh long $(FUZZ_BUILD) $(RUNS) $(JOBS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
