#!/usr/bin/env bash
# Runs each reader fuzz target of tests/fuzz_readers.rs for a long while (stable toolchain;
# cargo fuzz needs nightly). FUZZ_CASES cases per target (default 2,000,000, about ten
# minutes each here); a failure prints the minimal failing input to add as a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
export FUZZ_CASES="${FUZZ_CASES:-2000000}"
for target in csv_parser npy_reader label_reader magmaclust_long_format; do
  echo "== $target: $FUZZ_CASES cases"
  /usr/bin/time -f "%e s" cargo test --release --test fuzz_readers -- --exact "$target"
done
