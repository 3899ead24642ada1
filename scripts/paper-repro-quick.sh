#!/usr/bin/env bash
# Runs every paper-repro binary in its --quick mode (seconds each), so a study that no longer
# builds, a flag the CLI no longer takes or a results file no longer written fails CI. Quick
# runs write under target/paper-repro-quick/, never over paper-repro/results/. The kernel
# scaling study runs the release CLI, so target/release/clustr is built first.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --bin clustr --examples
out=target/paper-repro-quick
rm -rf "$out"
run() {
  echo "-- cargo run --release --example $* --quick"
  "target/release/examples/$1" "${@:2}" --quick > /dev/null
}
run kmedoids_speedup
run kmedoids_speedup --clara
run ppp_study
run road_accidents
run kernel_power_kmeans
run kernel_power_kmeans --grid
run kernel_power_kmeans --scaling
run magmaclust
run magmaclust --scaling
run magmaclust --scheme-a
run model_files
for f in kmedoids_speedup.md kmedoids_speedup_blobs.md kmedoids_speedup_blobs.svg kmedoids_clara.md \
         ppp.md road_accidents.md road_accidents.png kernel_power_kmeans.md \
         kernel_power_kmeans_grid.md kernel_power_kmeans_scaling.md kernel_power_kmeans_scaling.png \
         magmaclust.md magmaclust_prediction.png magmaclust_scaling.md magmaclust_scheme_a.md model_files.md; do
  [ -s "$out/$f" ] || { echo "paper-repro quick: $out/$f was not written"; exit 1; }
  case "$f" in
    *.md) grep -q '^- command: `cargo run --release --example' "$out/$f" \
            || { echo "paper-repro quick: $out/$f does not start with its provenance"; exit 1; } ;;
  esac
done
echo "paper-repro quick: every study ran and wrote its files"
