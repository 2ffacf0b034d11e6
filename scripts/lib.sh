# Shared by the scripts in this folder: install what is missing, configure and build.
# Sourced, not run. Works on a fresh Debian 12 machine as root (or with sudo available).
set -euo pipefail

FG_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FG_BUILD="${FG_BUILD:-$FG_ROOT/build}"
# The same sources built twice more for the tests: with ASan and UBSan (g++), and with clang
# for the libFuzzer harnesses (tests/fuzz/).
FG_ASAN_BUILD="${FG_ASAN_BUILD:-$FG_ROOT/build-asan}"
FG_FUZZ_BUILD="${FG_FUZZ_BUILD:-$FG_ROOT/build-fuzz}"
# ccache (meson uses it when installed): another clone of the tree, as CI's clean clone is,
# reuses what an earlier one compiled. Without these, the ASan and fuzz trees, which carry debug
# info, hash the build's directory and miss every time (a clean clone's ASan build: about 10
# minutes of the test command's). Their debug info then names the first clone's directory.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$FG_ROOT}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
# And against Vectorscan instead of the installed Hyperscan, to compare the two (issue 28).
FG_VS_BUILD="${FG_VS_BUILD:-$FG_ROOT/build-vs}"

# Debian 12 packages the build, the tests and the tools need. Every program the scripts, tests
# and labs start comes from one of these, what they pull in, or Debian's base: the
# installed-programs test (scripts/installed_programs.py) refuses any other.
FG_PACKAGES=(
  build-essential meson ninja-build pkg-config python3 iproute2 nftables python3-prometheus-client
  dpdk dpdk-dev libdpdk-dev
  libyaml-dev nlohmann-json3-dev libmicrohttpd-dev libhyperscan-dev libcli11-dev libpcap-dev ccache
  redis-server libhiredis-dev libssl-dev openssl
  gobgpd bird2
  googletest libgtest-dev libbenchmark-dev
  clang libclang-rt-14-dev libbpf-dev bpftool
  tshark curl dnsmasq-base bind9-dnsutils systemd
  prometheus apache2-utils python3-yaml libgnutls28-dev libcrypt-dev
  chromium chromium-driver python3-selenium
  man-db groff-base
  debhelper dpkg-dev lintian debootstrap git
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

# Says whether scripts/hugepages.sh can give the labs hugepages here: it reserves one 2 MiB
# page, then puts the count back as it was.
fg_hugepage_path() {
  local count=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages before options
  before="$(cat "$count" 2>/dev/null || echo 0)"
  options="$(bash "$FG_ROOT/scripts/hugepages.sh" 2)"
  [ -w "$count" ] && echo "$before" >"$count"
  case "$options" in
    --in-memory*) echo "hugepages (2 MiB pages, reserved by each lab and given back)" ;;
    *) echo "ordinary memory (--no-huge): this machine cannot reserve hugepages" ;;
  esac
}

fg_build() {
  local dpdk_source
  dpdk_source="$(fg_dpdk_source)"
  if [ ! -f "$FG_BUILD/build.ninja" ]; then
    meson setup "$FG_BUILD" "$FG_ROOT" --buildtype=release -Ddpdk_source="$dpdk_source"
  elif [ "$(meson introspect --buildoptions "$FG_BUILD" |
    python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "dpdk_source"))' 2>/dev/null)" != "$dpdk_source" ]; then
    meson configure "$FG_BUILD" -Ddpdk_source="$dpdk_source"
  fi
  # Two jobs: the machines this runs on in CI have two cores.
  ninja -C "$FG_BUILD" -j "${FG_JOBS:-2}"
}

# The source files of Debian's DPDK that dpdk/ patches (dpdk/meson.build), for the installed
# libdpdk-dev's exact version, kept under build-deps/; prints their directory, or nothing (with
# a warning) when the source cannot be had: floodgate then builds, and warns at run time that
# its memif ports are DPDK's own. apt reads deb-src entries of its own here (the machine's
# sources often have none), and the machine's apt state is not touched.
fg_dpdk_source() {
  local version dir tmp
  version="$(dpkg-query -W -f='${source:Version}' libdpdk-dev)"
  dir="$FG_ROOT/build-deps/dpdk-$version"
  if [ -f "$dir/.complete" ]; then echo "$dir"; return 0; fi
  tmp="$(mktemp -d)"
  if ! fg_fetch_dpdk_source "$version" "$tmp" "$dir" >"$tmp/log" 2>&1; then
    echo "==> warning: no DPDK $version source (memif's disconnect fix is not built):" >&2
    tail -n 5 "$tmp/log" >&2
    rm -rf "$tmp"
    return 0
  fi
  rm -rf "$tmp"
  echo "$dir"
}

# fg_fetch_dpdk_source VERSION TMP DIR: Debian's dpdk source package, only the files dpdk/ uses
# copied to DIR.
fg_fetch_dpdk_source() {
  local version="$1" tmp="$2" dir="$3" suite
  suite="$(. /etc/os-release && echo "$VERSION_CODENAME")"
  mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/get"
  # The machine's own Debian mirrors (a CI's may not be deb.debian.org), then Debian's.
  {
    apt-get indextargets --format '$(TARGET_OF) $(REPO_URI) $(RELEASE) $(COMPONENT)' |
      awk -v s="$suite" '$1 == "deb" && $4 == "main" && ($3 == s || index($3, s "-") == 1) { print "deb-src " $2 " " $3 " main" }' |
      sort -u
    echo "deb-src http://deb.debian.org/debian $suite main"
    echo "deb-src http://deb.debian.org/debian $suite-updates main"
    echo "deb-src http://deb.debian.org/debian-security $suite-security main"
  } >"$tmp/sources.list"
  local apt_opts=(-o "Dir::Etc::SourceList=$tmp/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache=$tmp/cache" -o APT::Sandbox::User=root)
  local files=(drivers/net/memif lib/ethdev/ethdev_driver.h lib/ethdev/ethdev_vdev.h
    drivers/bus/vdev/bus_vdev_driver.h lib/eal/include/dev_driver.h)
  # A mirror without sources fails its part of the update; the source is looked up in the rest.
  apt-get "${apt_opts[@]}" -q update || true
  (cd "$tmp/get" && apt-get "${apt_opts[@]}" -q source --download-only "dpdk=$version") &&
    dpkg-source --no-check -x "$tmp/get"/dpdk_*.dsc "$tmp/src" &&
    rm -rf "$dir" && mkdir -p "$dir" &&
    (cd "$tmp/src" && cp -r --parents "${files[@]}" "$dir/") &&
    touch "$dir/.complete"
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

# Vectorscan beside the installed Hyperscan: Debian's libvectorscan-dev conflicts with
# libhyperscan-dev, so its two packages are unpacked under build-deps/vectorscan (not
# installed; the machine's packages are not touched) and their libhs.pc pointed there. Prints
# the directory of that libhs.pc. The packaged one names /usr for every path, and its
# -I.../include/hs alone would let `#include <hs/hs.h>` find Hyperscan's header in
# /usr/include: -I.../include is added.
fg_vectorscan_deps() {
  local dir="$FG_ROOT/build-deps/vectorscan" tmp pc
  pc="$dir/usr/lib/x86_64-linux-gnu/pkgconfig"
  if [ -f "$dir/.complete" ]; then echo "$pc"; return 0; fi
  tmp="$(mktemp -d)"
  # apt's lists may be missing (a fresh container) or stale: updated once, then tried again.
  if ! (cd "$tmp" && apt-get -q -o APT::Sandbox::User=root download libvectorscan-dev libvectorscan5) >&2; then
    fg_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 || true
    (cd "$tmp" && apt-get -q -o APT::Sandbox::User=root download libvectorscan-dev libvectorscan5) >&2 || {
      echo "==> error: could not download libvectorscan-dev and libvectorscan5" >&2
      rm -rf "$tmp"
      return 1
    }
  fi
  rm -rf "$dir" && mkdir -p "$dir"
  for deb in "$tmp"/*.deb; do dpkg -x "$deb" "$dir"; done
  rm -rf "$tmp"
  sed -i -e "s#^\(prefix\|exec_prefix\|libdir\|includedir\)=/usr#\1=$dir/usr#" \
    -e 's#^\(Cflags: -I${includedir}/hs\)$#\1 -I${includedir}#' "$pc/libhs.pc"
  PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs libhs | grep -q -- "-L$dir/usr/lib" || {
    echo "==> error: $pc/libhs.pc does not point into $dir" >&2
    return 1
  }
  touch "$dir/.complete"
  echo "$pc"
}

# The Vectorscan build: release, the same options as fg_build's, libhs looked up in
# fg_vectorscan_deps's libhs.pc first (pkg_config_path is kept by meson, so a reconfigure
# finds it too) and required (-Dpayload=enabled: no silent build without payload rules); meson
# links with a run path into build-deps/vectorscan, so the binaries load Vectorscan's
# libhs.so.5 and not the installed one. Builds the targets given (all without).
fg_build_vectorscan() {
  local pc
  pc="$(fg_vectorscan_deps)"
  if [ ! -f "$FG_VS_BUILD/build.ninja" ]; then
    meson setup "$FG_VS_BUILD" "$FG_ROOT" --buildtype=release -Dpkg_config_path="$pc" \
      -Ddpdk_source="$(fg_dpdk_source)" -Dpayload=enabled
  fi
  ninja -C "$FG_VS_BUILD" -j "${FG_JOBS:-2}" "$@"
}
