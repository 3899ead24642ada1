#!/usr/bin/env bash
# Runs each reader fuzz target of tests/fuzz_readers.rs, then the command-line target of
# tests/fuzz_cli.rs, for a long while (stable toolchain;
# cargo fuzz needs nightly). FUZZ_CASES cases per target (default 2,000,000, about ten
# minutes each here); a failure prints the minimal failing input to add as a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
export FUZZ_CASES="${FUZZ_CASES:-2000000}"
for target in csv_parser npy_reader label_reader magmaclust_long_format; do
  echo "== $target: $FUZZ_CASES cases"
  /usr/bin/time -f "%e s" cargo test --release --test fuzz_readers -- --exact "$target"
done
# The command line: each case runs the clustr binary, so far fewer cases fit in ten minutes.
export FUZZ_CASES="${FUZZ_CLI_CASES:-300000}"
echo "== command_line_arguments: $FUZZ_CASES cases"
/usr/bin/time -f "%e s" cargo test --release --test fuzz_cli -- --exact command_line_arguments
