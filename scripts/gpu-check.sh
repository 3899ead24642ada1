#!/usr/bin/env bash
# The CUDA backend's device check (issue #8), in two steps:
#
#   scripts/gpu-check.sh build   # here, with Rust: test and bench binaries and the kernels'
#                                # PTX into target/gpu-check/ (carry that folder)
#   scripts/gpu-check.sh run     # on a machine with an NVIDIA GPU and no Rust, from the
#                                # repository root: CUDA-vs-CPU tests, then the timings;
#                                # output in ${OUT:-target/gpu-check/out}
#
# The binaries need only glibc and the CUDA driver at run time: libcuda, libnvrtc and
# libcublas are opened by cudarc when first used. Where libnvrtc is missing the kernels come
# from the prebuilt PTX (CLUSTR_CUDA_PTX), which NVRTC 13.5 from PyPI makes for compute_90
# (PTX ISA 9.5: the driver must be CUDA 13.5 or newer to load it; --arch picks another target).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=target/gpu-check
arch="${ARCH:-90}"

case "${1:-}" in
build)
  rm -rf "$dir" && mkdir -p "$dir"
  cargo build --release --features cuda --example cuda_bench
  cp target/release/examples/cuda_bench "$dir/"
  # The executable cargo builds for a test target of KIND ("test" or "lib").
  test_binary() {
    local kind="$1"; shift
    cargo test --release --features cuda "$@" --no-run --message-format=json 2>/dev/null \
      | python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == [sys.argv[1]]:
        print(m["executable"])' "$kind"
  }
  cp "$(test_binary test --test cuda)" "$dir/test-cuda"
  cp "$(test_binary lib --lib)" "$dir/test-lib"
  # The PTX, compiled here with NVRTC from PyPI (no GPU needed).
  venv=target/refs
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r tests/fixtures/requirements-nvrtc.txt
  nvrtc_lib="$("$venv/bin/python" -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13", "lib"))')"
  LD_LIBRARY_PATH="$nvrtc_lib" "$dir/cuda_bench" --write-ptx "$dir/kernels.ptx" --arch "$arch"
  du -sh "$dir"/*
  ;;
run)
  out="${OUT:-$dir/out}"
  mkdir -p "$out"
  export CLUSTR_CUDA_PTX="$PWD/$dir/kernels.ptx"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt" || true
  status=0
  "$dir/test-cuda" --nocapture 2>&1 | tee "$out/tests.txt" || status=1
  "$dir/test-lib" backend::cuda --nocapture 2>&1 | tee -a "$out/tests.txt" || status=1
  "$dir/cuda_bench" ${BENCH_ARGS:-} 2>&1 | tee "$out/bench.md" || status=1
  exit $status
  ;;
*)
  echo "usage: $0 build | run" >&2
  exit 2
  ;;
esac
