# Shared by the scripts in this folder: install what is missing, configure and build.
# Sourced, not run. Works on a fresh Debian 12 machine as root (or with sudo available).
set -euo pipefail

FG_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FG_BUILD="${FG_BUILD:-$FG_ROOT/build}"
# The same sources built twice more for the tests: with ASan and UBSan (g++), and with clang
# for the libFuzzer harnesses (tests/fuzz/).
FG_ASAN_BUILD="${FG_ASAN_BUILD:-$FG_ROOT/build-asan}"
FG_FUZZ_BUILD="${FG_FUZZ_BUILD:-$FG_ROOT/build-fuzz}"

# Debian 12 packages the build, the tests and the tools need.
FG_PACKAGES=(
  build-essential meson ninja-build pkg-config python3 iproute2 python3-prometheus-client
  dpdk dpdk-dev libdpdk-dev
  libyaml-dev nlohmann-json3-dev libmicrohttpd-dev libhyperscan-dev libcli11-dev libpcap-dev ccache
  googletest libgtest-dev libbenchmark-dev
  clang libclang-rt-14-dev libbpf-dev bpftool
  tshark curl dnsmasq-base bind9-dnsutils
  chromium chromium-driver python3-selenium
)

fg_as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

fg_install_deps() {
  local missing=()
  for p in "${FG_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "==> installing: ${missing[*]}"
    fg_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
    fg_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
}

fg_build() {
  if [ ! -f "$FG_BUILD/build.ninja" ]; then
    meson setup "$FG_BUILD" "$FG_ROOT" --buildtype=release
  fi
  # Two jobs: the machines this runs on in CI have two cores.
  ninja -C "$FG_BUILD" -j "${FG_JOBS:-2}"
}

# Unit and scenario suites under ASan and UBSan, any report fatal. -O1 keeps the scenario
# traces fast enough; the benchmarks are not built. A unity build (each target's files compiled
# as one) compiles in about two thirds of the time of file by file, and building is most of
# CI's time; names in anonymous namespaces must then differ between the files of one target.
fg_build_asan() {
  if [ ! -f "$FG_ASAN_BUILD/build.ninja" ]; then
    meson setup "$FG_ASAN_BUILD" "$FG_ROOT" -Dunity=on -Doptimization=1 -Ddebug=true -Db_ndebug=false \
      -Db_sanitize=address,undefined -Db_lundef=false -Dbenchmarks=disabled \
      -Dc_args=-fno-sanitize-recover=all -Dcpp_args=-fno-sanitize-recover=all
  fi
  ninja -C "$FG_ASAN_BUILD" -j "${FG_JOBS:-2}"
}

# The fuzz harnesses only: the rest of a -Dfuzz=enabled directory is never built. Without
# Hyperscan: the fuzzers check floodgate's own parsing of payload patterns (escapes, domains,
# limits), not how long Hyperscan takes to compile a random regular expression.
fg_build_fuzz() {
  if [ ! -f "$FG_FUZZ_BUILD/build.ninja" ]; then
    CC=clang CXX=clang++ meson setup "$FG_FUZZ_BUILD" "$FG_ROOT" --buildtype=debugoptimized \
      -Dfuzz=enabled -Dtests=disabled -Dbenchmarks=disabled -Dpayload=disabled
  fi
  ninja -C "$FG_FUZZ_BUILD" -j "${FG_JOBS:-2}" fuzz
}
