#!/bin/bash
# Compares the results of two clustr binaries on the shipped data sets, for a refactoring that
# must change nothing: labels files byte for byte, --json results minus timings, MagmaClust's
# model, cluster and prediction files byte for byte. Same seeds, 2 threads.
#
#   scripts/compare-results.sh OLD/clustr NEW/clustr     # exit 1 on any difference
#
# (Build the old one from a worktree: git worktree add /tmp/old REV && cd /tmp/old &&
# cargo build --release --bin clustr.)
set -uo pipefail
OLD=$1
NEW=$2
D="$(cd "$(dirname "$0")/.." && pwd)/datasets"
W=$(mktemp -d)
fail=0
same() { # what, file...
  local what=$1 f
  shift
  for f in "$@"; do
    if ! cmp -s "$W/old.$f" "$W/new.$f"; then
      echo "DIFF  $what ($f)"
      fail=1
      return
    fi
  done
  echo "same  $what"
}
both() { # name, args...: runs both binaries with --labels-out and --json
  local name=$1 b bin
  shift
  for b in old new; do
    bin=$OLD
    [ $b = new ] && bin=$NEW
    "$bin" "$@" --labels-out "$W/$b.$name.csv" --json --threads 2 --quiet >"$W/$b.$name.json" || echo "$name: $b exit $?"
    python3 -c "import json, sys
v = json.load(open(sys.argv[1]))
for key in ('seconds', 'threads'):
    v.pop(key, None)
json.dump(v, open(sys.argv[2], 'w'), sort_keys=True)" "$W/$b.$name.json" "$W/$b.$name.norm"
  done
  same "$name" "$name.csv" "$name.norm"
}
both kmeans_iris kmeans "$D/iris.csv" --k 3 --seed 1
both kmeans_digits_elkan kmeans "$D/digits.csv" --k 10 --algorithm elkan --seed 2
both kmeans_digits_hamerly kmeans "$D/digits.csv" --k 10 --algorithm hamerly --seed 2
both minibatch_digits minibatch-kmeans "$D/digits.csv" --k 10 --seed 3
both gmm_wine gmm "$D/wine.csv" --k 3 --seed 1
both gmm_wine_diag gmm "$D/wine.csv" --k 3 --covariance diag --seed 1
both pam_iris pam "$D/iris.csv" --k 3
both fastpam1_breast_cancer fastpam1 "$D/breast_cancer.csv" --k 4 --seed 1
both fastpam2_digits fastpam2 "$D/digits.csv" --k 10 --seed 1
both fasterpam_digits fasterpam "$D/digits.csv" --k 10 --seed 1 --shuffle --silhouette
both fasterclara_digits fasterclara "$D/digits.csv" --k 10 --seed 1 --silhouette
both fastclarans_iris fastclarans "$D/iris.csv" --k 3 --seed 1
both power_iris power-kmeans "$D/iris.csv" --k 3 --seed 1
both rffkpkm_wine rff-kpkm "$D/wine.csv" --k 3 --seed 1
both dbscan_iris dbscan "$D/iris.csv" --eps 0.5 --min-samples 5
both hdbscan_digits hdbscan "$D/digits.csv" --min-cluster-size 10
# MagmaClust on 30 curves of three shapes, then a new task's prediction.
python3 - "$W/tasks.csv" "$W/new.csv" <<'PY'
import math, random, sys
random.seed(1)
rows = ["ID,Input,Output"]
for t in range(30):
    for j in range(12):
        x = j * 0.8 + random.uniform(-0.1, 0.1)
        y = [math.sin(x), 2 * math.cos(x), 0.3 * x - 1][t % 3] + random.gauss(0, 0.2)
        rows.append(f"t{t},{x:.4f},{y:.4f}")
open(sys.argv[1], "w").write("\n".join(rows) + "\n")
open(sys.argv[2], "w").write("ID,Input,Output\nnew,0.5,0.4\nnew,1.5,1.0\nnew,3.0,0.2\n")
PY
for h in H00 Hk0 Hki; do
  for b in old new; do
    bin=$OLD
    [ $b = new ] && bin=$NEW
    "$bin" magmaclust train "$W/tasks.csv" --k 3 --hypothesis $h --out "$W/$b.m$h.json" \
      --clusters-out "$W/$b.c$h.csv" --quiet --threads 2 || echo "magmaclust $h: $b exit $?"
    "$bin" magmaclust predict "$W/$b.m$h.json" "$W/new.csv" --grid 0:9:40 --out "$W/$b.p$h.csv" \
      --quiet --threads 2 || echo "magmaclust predict $h: $b exit $?"
  done
  same "magmaclust $h" "m$h.json" "c$h.csv" "p$h.csv"
done
rm -rf "$W"
exit $fail
