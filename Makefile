# The two commands of the README: `make demo` runs nkc on a bundled example, `make test` runs the
# whole test suite (every library, binary and test target; the benches are compiled by clippy and
# run once each, in release, by `make test-long`). `make test-long` runs the fuzz campaigns of
# tests/fuzz_stable.rs with larger budgets, the campaign over every surface and the widened random
# kernels, the lower-bound sweeps with `--peel` on every path (`NKC_BOUND_SWEEP=all`), then every
# bench once as a test (release build; CI runs it after `make test`). `make docs` regenerates the README's
# `nkc compare` tables and docs/compare.svg. Each first installs what a fresh machine lacks
# (scripts/setup.sh).

DEMO ?= examples/tensor_add.nk

.PHONY: setup demo test test-long lint docs

setup:
	@bash scripts/setup.sh

demo: setup
	cargo build --release --bin nkc
	./target/release/nkc check $(DEMO)
	./target/release/nkc run $(DEMO) --check

test: setup
	cargo test --workspace --lib --bins --tests

# Longer campaigns of the fuzz targets' always-on counterparts: some minutes on two cores.
test-long: setup
	NKC_FUZZ_PIR=1000 NKC_FUZZ_PIR_VALID=60 NKC_FUZZ_NPY=100000 NKC_FUZZ_SUGGEST=30 NKC_FUZZ_RUN_CHECK=1000 \
	NKC_CAMPAIGN_NPY=100000 NKC_CAMPAIGN_PIR_VERIFY=20000 NKC_CAMPAIGN_PIR_RUN=200 NKC_CAMPAIGN_PIR_VALID=40 \
	NKC_CAMPAIGN_FRONTEND=5000 NKC_CAMPAIGN_KERNELS=60 NKC_CAMPAIGN_SUGGEST=10 \
	NKC_CAMPAIGN_ISA=5000 NKC_CAMPAIGN_CLI=300 NKC_WIDE_CASES=300 \
		cargo test --release --test fuzz_stable --test wide_kernels -- --nocapture
	NKC_BOUND_SWEEP=all cargo test --release --test lower_bound --test nki_corpus
	cargo test --release --workspace --benches

lint: setup
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

docs: setup
	bash scripts/docs.sh
