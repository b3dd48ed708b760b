# The two commands of the README: `make demo` runs nkc on a bundled example, `make test` runs the
# whole test suite. `make docs` regenerates the README's `nkc compare` tables and docs/compare.svg.
# Each first installs what a fresh machine lacks (scripts/setup.sh).

DEMO ?= examples/tensor_add.nk

.PHONY: setup demo test lint docs

setup:
	@bash scripts/setup.sh

demo: setup
	cargo build --release --bin nkc
	./target/release/nkc check $(DEMO)
	./target/release/nkc run $(DEMO) --check

test: setup
	cargo test --workspace --all-targets

lint: setup
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

docs: setup
	bash scripts/docs.sh
