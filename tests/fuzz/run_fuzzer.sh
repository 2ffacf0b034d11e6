#!/usr/bin/env bash
# One libFuzzer harness as a meson test (tests/fuzz/meson.build):
#   run_fuzzer.sh corpus BIN CORPUS_DIR ARTIFACT_DIR   each checked-in input once
#   run_fuzzer.sh fuzz   BIN CORPUS_DIR ARTIFACT_DIR   $FUZZ_SECONDS (default 20) of fuzzing
# Fuzzing starts from the checked-in corpus and grows a scratch copy, never the corpus itself;
# an input that fails is written to ARTIFACT_DIR, to be checked in as a regression input with
# its fix. Limits are the ones the harnesses must live within: 2 GB, 10 s an input.
set -euo pipefail
mode=$1 bin=$2 corpus=$3 artifacts=$4
mkdir -p "$artifacts"
# -error_exitcode=1: libFuzzer's default, 77, is what meson reads as "skipped", so a crash or a
# broken invariant would not count as a failure.
limits=(-rss_limit_mb=2048 -timeout=10 -error_exitcode=1 -timeout_exitcode=1
  -artifact_prefix="$artifacts/$(basename "$bin")-")
case "$mode" in
  corpus)
    shopt -s nullglob
    inputs=("$corpus"/*)
    [ "${#inputs[@]}" -gt 0 ] || { echo "no inputs in $corpus"; exit 1; }
    echo "$(basename "$bin"): ${#inputs[@]} inputs from $corpus"
    # Files, not the directory: libFuzzer then runs each one once, as a regression test.
    exec "$bin" "${limits[@]}" "${inputs[@]}"
    ;;
  fuzz)
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' EXIT
    "$bin" "${limits[@]}" -max_total_time="${FUZZ_SECONDS:-20}" -print_final_stats=1 \
      "$scratch" "$corpus"
    ;;
  *)
    echo "usage: $0 corpus|fuzz BIN CORPUS_DIR ARTIFACT_DIR" >&2
    exit 2
    ;;
esac
