#!/usr/bin/env bash
# One process with one thread against `mpirun -n P` processes with one thread each, on the same
# .npy (issue #10): wall time of the whole command and of the fit, and whether the labels,
# iterations and objective agree. Blobs with std 12 in the (-10, 10) box overlap, so the
# iterative methods run tens of iterations.
# Usage: paper-repro/mpi_compare.sh N D K P SUBCOMMAND [OPTIONS...]
#   e.g. paper-repro/mpi_compare.sh 2000000 32 16 2 kmeans --algorithm lloyd
#        paper-repro/mpi_compare.sh 1000000 16 16 2 rff-kpkm --n-features 256
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-2000000}; d=${2:-32}; k=${3:-16}; p=${4:-2}; cmd=${5:-kmeans}; shift 5 || true
cargo build --release --features mpi -q
bin=target/release/clustr
data=${DATA:-/tmp/clustr-mpi-$n-$d.npy}
[ -e "$data" ] || $bin datasets export blobs --n "$n" --k "$k" --d "$d" --std 12 --seed 1 --out "$data"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
run() { # label, command...: prints the JSON's fit seconds, total wall seconds, iterations, objective
  local label=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  "$@" > "$work/$label.json"
  t1=$(date +%s.%N)
  python3 - "$work/$label.json" "$t0" "$t1" "$label" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); wall = float(sys.argv[3]) - float(sys.argv[2])
print(f"{sys.argv[4]:>12}: wall {wall:7.2f} s, fit {j['seconds']['fit']:7.2f} s, "
      f"{j['n_iter']} iterations, objective {j['loss']:.15e}, processes {j['processes']}")
PY
}
common=("$cmd" "$data" --k "$k" --seed 0 --threads 1 --json --quiet "$@")
echo "$cmd on $n x $d, k = $k: ${*:-default options}"
run one "$bin" "${common[@]}" --labels-out "$work/one.npy"
run mpirun mpirun --allow-run-as-root --oversubscribe -n "$p" "$bin" "${common[@]}" --distributed --labels-out "$work/mpirun.npy"
cmp -s "$work/one.npy" "$work/mpirun.npy" && echo "labels: identical" || echo "labels: DIFFER"
python3 - "$work/one.json" "$work/mpirun.json" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
print(f"speed-up of the fit: {a['seconds']['fit'] / b['seconds']['fit']:.2f}x; "
      f"of the whole command: {a['seconds']['total'] / b['seconds']['total']:.2f}x; "
      f"objective relative difference {abs(a['loss'] - b['loss']) / abs(a['loss']):.1e}")
PY
