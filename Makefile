# VELO: the two commands are `make demo` and `make test` (see README.md).
BUILD   ?= build
JOBS    ?= $(shell nproc)
CMAKE_FLAGS ?=
# compilers behind ccache when the machine has it (a rebuild of the Verilated models from the cache
# takes seconds instead of minutes); nothing changes without it
CCACHE := $(shell command -v ccache 2>/dev/null)
CCACHE_FLAGS := $(if $(CCACHE),-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

.PHONY: all deps gen configure build demo test bench cosim lint synth-report format clean

all: build

deps:
	@scripts/deps.sh

gen:
	python3 spec/gen_spec.py

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja $(CCACHE_FLAGS) $(CMAKE_FLAGS) > /dev/null

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# a 2-node simulated cluster (velo-fabric: the RTL in Verilator) and a ping-pong program written
# against velo.h (velo-pingpong) run by velo-run: latency in NIC cycles and a rate sweep; then an MPI
# job through the Open MPI BTL (docs/mpi.md): collectives on 4 ranks of a 4-node simulated ring
demo: configure
	cmake --build $(BUILD) -j $(JOBS) --target velo-fabric velo-run velo-pingpong mca_btl_velo mpi_collectives
	@mkdir -p $(BUILD)/demo
	$(BUILD)/sw/tools/velo-run -n 2 -- $(BUILD)/sw/tools/velo-pingpong \
	    --csv $(BUILD)/demo/pingpong.csv --png $(BUILD)/demo/pingpong.png
	$(BUILD)/sw/tools/velo-run --mpi -n 4 --topology ring:4 -- $(BUILD)/sw/btl/mpi_collectives
	@# COSIM=1: then the real velo.ko in two QEMU guests whose NIC is the RTL (docs/cosim.md)
	$(if $(COSIM),cmake --build $(BUILD) -j $(JOBS) --target velo-cosim && \
	    ctest --test-dir $(BUILD) -R driver.cosim.pair --output-on-failure -V)

# every test: spec/header agreement, RTL lint, Yosys synthesis, unit and system benches
test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# benchmarks (not tests): BENCH lines, appended to $(BUILD)/bench/results.txt
bench: configure
	cmake --build $(BUILD) -j $(JOBS) --target velo-bench-hw velo-bench-api velo-pingpong velo-run velo-fabric \
	    mca_btl_velo velo_simtime mpi_pingpong
	@mkdir -p $(BUILD)/bench
	@{ echo "# $$(date -u +%Y-%m-%dT%H:%M:%SZ) $$(git rev-parse --short HEAD 2>/dev/null)"; \
	   $(BUILD)/sim/velo-bench-hw && sh sw/tools/bench_api.sh $(BUILD) && sh sw/btl/bench_btl.sh $(BUILD) && \
	   sh sw/tools/bench_fabric.sh $(BUILD) && \
	   python3 scripts/synth.py --bench && \
	   $(MAKE) -s --no-print-directory -C fpga bench BUILD=$(abspath $(BUILD))/fpga; } \
	   | tee $(BUILD)/bench/last.txt
	@grep -E '^(BENCH|#)' $(BUILD)/bench/last.txt >> $(BUILD)/bench/results.txt
	@echo "appended to $(BUILD)/bench/results.txt"

# the iCE40-HX8K bitstream (open flow, docs/board-guide.md): $(BUILD)/fpga/ice40/velo_ice40.bin
.PHONY: bitstream
# the co-simulation's long mode: two QEMU guests with the real velo.ko on the RTL (docs/cosim.md)
cosim: configure
	cmake --build $(BUILD) -j $(JOBS) --target cosim

bitstream: deps
	$(MAKE) -C fpga ice40 BUILD=$(abspath $(BUILD))/fpga

lint: deps
	scripts/rtl_lint.sh

synth-report: deps
	python3 scripts/synth.py --table

# user space only (the list ctest style.clang_format checks); velo.ko's files are kernel style
format:
	clang-format --style=file:.clang-format -i $$(scripts/user_space_sources.sh)

clean:
	rm -rf $(BUILD)
