#!/usr/bin/env bash
# The Debian packages as an operator gets them (docs/packages.md): built from a copy of this
# tree with `dpkg-buildpackage -b -us -uc`, checked by lintian (no errors), then installed with
# apt on a clean Debian 12 root (debootstrap's minbase in a chroot, its dependencies from the
# mirror): floodctl alone first, as on a monitoring host, then floodgate and
# floodgate-monitoring. The installed binaries run, the units verify and are not enabled, two
# `floodgate replay` runs of the installed binary write the same bytes as BUILD_DIR's, and
# `apt remove` keeps the rules while `apt purge` removes them. Prints TAP, then
# "N passed, N failed".
#
#   install_packages.sh BUILD_DIR     as root; exit 77 (skipped) when not root or without the tools
#
# FG_PACKAGE_CACHE (default /var/cache/floodgate-package-test) keeps the minbase root as a tar
# and apt's downloads between runs; remove it for a root bootstrapped anew. FG_PACKAGE_DEBS=DIR
# takes the .debs (and their .changes) from DIR instead of building them.
set -uo pipefail
build="$(cd "${1:?usage: install_packages.sh BUILD_DIR}" && pwd)"
src="$(cd "$(dirname "$0")/../.." && pwd)"
[ "$(id -u)" -eq 0 ] || { echo "not root: skipped (a chroot needs root)"; exit 77; }
for tool in debootstrap dpkg-buildpackage lintian systemd-analyze systemctl tshark; do
  command -v "$tool" >/dev/null || { echo "no $tool: skipped"; exit 77; }
done
cache="${FG_PACKAGE_CACHE:-/var/cache/floodgate-package-test}"
mirror=http://deb.debian.org/debian
# Not /tmp, which may be a small tmpfs: the root and the build take about 2 GB.
work="$(mktemp -d /var/tmp/floodgate-package.XXXXXX)"
root="$work/root"
started=$SECONDS

cleanup() {
  set +e
  mountpoint -q "$root" && umount -R "$root"
  # Nothing of the host may still be mounted under the root when it is removed.
  if findmnt -rn -o TARGET | grep -q "^$root\(/\|$\)"; then
    echo "# kept $work: something is still mounted under it"
  else
    rm -rf --one-file-system "$work"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

n=0
failed=0
# check DESCRIPTION COMMAND...: one TAP line; a failure's output follows as comments.
check() {
  local what="$1" out
  shift
  n=$((n + 1))
  if out="$("$@" 2>&1)"; then
    echo "ok $n - $what"
  else
    failed=$((failed + 1))
    echo "not ok $n - $what"
    tail -n 40 <<<"$out" | sed 's/^/# /'
  fi
}
finish() {
  echo "1..$n"
  echo "# $((SECONDS - started)) s"
  echo "$((n - failed)) passed, $failed failed"
  exit $((failed > 0))
}
# A step the rest needs: on failure, the run ends here.
need() {
  local before=$failed
  check "$@"
  [ "$failed" -eq "$before" ] || finish
}

in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

# The tree as it is (tracked and new files, not the ignored ones) copied and built, so that the
# packages' parent directory, where dpkg-buildpackage writes them, is this run's. Debian's DPDK
# source for the memif driver is copied from build-deps/ when it is there (else debian/rules
# fetches it). The copy is always at one path, and ccache's own directory named (debhelper gives
# the build a HOME of its own): a second run's compiles are cache hits.
build_packages() {
  local copy="$cache/build/floodgate" version
  rm -rf "$cache/build" && mkdir -p "$copy" || return 1
  (cd "$src" && git ls-files -z -c -o --exclude-standard | grep -zv '^build-deps' |
    tar --null -T - --ignore-failed-read -cf -) | tar -C "$copy" -xf - || return 1
  version="$(dpkg-query -W -f='${source:Version}' libdpdk-dev)"
  if [ -f "$src/build-deps/dpdk-$version/.complete" ]; then
    mkdir -p "$copy/build-deps" && cp -rL "$src/build-deps/dpdk-$version" "$copy/build-deps/"
  fi
  (cd "$copy" && CCACHE_DIR="$(ccache -k cache_dir 2>/dev/null)" \
    DEB_BUILD_OPTIONS="parallel=${FG_JOBS:-2}" nice -n 19 dpkg-buildpackage -b -us -uc) \
    >"$work/build.log" 2>&1 || {
    tail -n 30 "$work/build.log"
    return 1
  }
  mkdir -p "$work/debs" &&
    mv "$cache/build"/*.deb "$cache/build"/*.changes "$cache/build"/*.buildinfo "$work/debs/" &&
    rm -rf "$cache/build"
}

packages_built() {
  local p
  for p in floodgate floodctl floodgate-monitoring; do
    ls "$work/debs/${p}_"*.deb >/dev/null 2>&1 || { echo "no ${p}_*.deb"; return 1; }
  done
  ls -l "$work/debs"
}

# What lintian says goes to lintian.txt, printed after the check whatever its result.
lintian_clean() {
  lintian --fail-on error "$work/debs"/*.changes >"$work/lintian.txt" 2>&1
}

# debootstrap's minbase, bootstrapped once and kept as a tar; this kernel's /proc, /sys and /dev,
# a /run of its own and the host's apt mirrors, as scripts/fresh_machine.sh makes one; and
# systemd, as on the box (not booted: the units are verified and their state read offline).
make_root() {
  local tarball="$cache/bookworm-minbase.tar"
  mkdir -p "$cache/archives/partial" || return 1
  if [ ! -f "$tarball" ]; then
    debootstrap --variant=minbase bookworm "$work/fresh" "$mirror" >"$work/debootstrap.log" 2>&1 || {
      tail -n 20 "$work/debootstrap.log"
      return 1
    }
    tar -C "$work/fresh" -cf "$tarball.part" . && mv "$tarball.part" "$tarball" &&
      rm -rf --one-file-system "$work/fresh" || return 1
  fi
  mkdir "$root" && tar -C "$root" -xf "$tarball" || return 1
  mount --bind "$root" "$root" &&
    mount -t proc proc "$root/proc" &&
    mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys" &&
    mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev" &&
    mount -t tmpfs tmpfs "$root/run" &&
    mount --bind "$cache/archives" "$root/var/cache/apt/archives" || return 1
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  cp /etc/apt/sources.list "$root/etc/apt/" 2>/dev/null
  cp -r /etc/apt/sources.list.d "$root/etc/apt/" 2>/dev/null
  # apt keeps what it downloads here for the next run.
  echo 'Binary::apt::APT::Keep-Downloaded-Packages "true";' >"$root/etc/apt/apt.conf.d/keep-debs"
  mkdir -m 0755 "$root/debs" && install -m 0644 "$work/debs"/*.deb "$root/debs/" &&
    in_root apt-get -q update && in_root apt-get install -y -q --no-install-recommends systemd
}

deb() { basename "$(ls "$work/debs/${1}_"*.deb)"; }

apt_install() {
  local args=() p
  for p in "$@"; do args+=("/debs/$(deb "$p")"); done
  in_root apt-get install -y -q "${args[@]}"
}

floodctl_alone() {
  [ "$(in_root dpkg-query -W -f='${db:Status-Abbrev}' floodgate 2>/dev/null)" != "ii " ] || {
    echo "floodgate is installed too"
    return 1
  }
  in_root floodctl --help
}

same_version() {
  local installed tree
  installed="$(in_root floodgate --version)" && tree="$("$build/dataplane/floodgate" --version)" || return 1
  echo "installed: $installed; tree: $tree"
  [ "$installed" = "$tree" ] && [ "$(in_root floodctl --version)" = "$("$build/control/floodctl" --version)" ]
}

# verify exits 0 even on a bad directive: any message is a failure. It looks up the man pages
# the units name (Documentation=), here the root's.
units_verify() {
  local out
  out="$(MANPATH="$root/usr/share/man" systemd-analyze verify --root="$root" \
    floodgate-dataplane.service floodctl.service 2>&1)"
  [ -z "$out" ] || { echo "$out"; return 1; }
  # And the files they name are there, uncompressed (the docs' links lead on from them).
  local doc
  for doc in $(grep -ho 'file://[^ ]*' "$root/lib/systemd/system/floodgate-dataplane.service" \
    "$root/lib/systemd/system/floodctl.service" | sort -u); do
    [ -f "$root${doc#file://}" ] || { echo "Documentation= names ${doc#file://}: not installed"; return 1; }
  done
}

units_not_enabled() {
  local state links
  state="$(systemctl --root="$root" is-enabled floodgate-dataplane.service floodctl.service)"
  links="$(find "$root/etc/systemd/system" -name 'floodgate-dataplane.service' -o -name 'floodctl.service')"
  echo "is-enabled: $(tr '\n' ' ' <<<"$state"); links: ${links:-none}"
  [ "$state" = $'disabled\ndisabled' ] && [ -z "$links" ]
}

installed_files() {
  local f
  for f in /usr/bin/floodgate /usr/bin/floodctl /etc/floodgate/rules.yaml \
    /usr/lib/x86_64-linux-gnu/floodgate/floodgate_xdp.bpf.o \
    /usr/lib/x86_64-linux-gnu/floodgate/librte_net_memif_floodgate.so \
    /usr/share/floodgate/grafana/floodgate.json \
    /usr/share/floodgate/prometheus/floodgate-alerts.yaml \
    /usr/share/floodgate/prometheus/floodgate-destination-alerts.yaml \
    /usr/share/man/man8/floodgate.8.gz /usr/share/man/man8/floodctl.8.gz \
    /usr/share/man/man5/floodgate-rules.5.gz; do
    [ -f "$root$f" ] || { echo "missing $f"; return 1; }
  done
  cmp "$root/etc/floodgate/rules.yaml" "$src/config/default.yaml" &&
    in_root dpkg-query -W -f='${Conffiles}\n' floodgate | grep -q '^ /etc/floodgate/rules.yaml '
}

# The files a replay writes into DIR, as options.
outputs() {
  echo --pass "$1/pass.pcap" --drop "$1/drop.pcap" --answers "$1/answers.pcap" --stats "$1/stats.json"
}

# replay NAME PACKETS CAPTURE RULES_IN_TREE RULES_IN_ROOT [OPTIONS...]: the tree's and the
# installed floodgate on one capture whose PACKETS frames come from outside (counted apart
# from floodgate); every file each writes, and what it prints, compared byte for byte.
replay() {
  local name="$1" packets="$2" capture="$3" tree_rules="$4" root_rules="$5" f out
  shift 5
  local opts=("$@")
  mkdir -p "$work/replay/$name/tree" "$root/replay/$name/installed" || return 1
  cp "$capture" "$root/replay/$name/in.pcap" || return 1
  # shellcheck disable=SC2046 # the paths have no spaces
  "$build/dataplane/floodgate" replay --config "$tree_rules" --in "$capture" "${opts[@]}" \
    $(outputs "$work/replay/$name/tree") >"$work/replay/$name/tree/replay.txt" || return 1
  # shellcheck disable=SC2046
  in_root floodgate replay --config "$root_rules" --in "/replay/$name/in.pcap" "${opts[@]}" \
    $(outputs "/replay/$name/installed") >"$root/replay/$name/installed/replay.txt" || return 1
  for f in pass.pcap drop.pcap answers.pcap stats.json replay.txt; do
    out="$root/replay/$name/installed/$f"
    cmp "$work/replay/$name/tree/$f" "$out" || return 1
    echo "$f: $(stat -c %s "$out") bytes, the same"
  done
  # Not two empty runs: both read the capture's every frame from outside.
  head -n 1 "$out"
  grep -q "^packets $packets: " "$out"
}

# The frame count floodgate-gen says it wrote ("wrote N frames to FILE").
frames_written() { sed -n 's/^wrote \([0-9]*\) frames to .*/\1/p' <<<"$1"; }

replay_demo() {
  local said
  said="$("$build/perf/floodgate-gen" demo --out "$work/demo.pcap")" &&
    replay demo "$(frames_written "$said")" "$work/demo.pcap" "$src/config/default.yaml" \
      /etc/floodgate/rules.yaml
}

replay_syn_proxy() {
  cat >"$work/syn-proxy.yaml" <<'EOF'
rules:
  - name: web
    match: { tcp_flags: "syn !ack", dst_port: 80 }
    limit: { rate: 20/s, burst: 10 }
    action: syn-proxy
EOF
  local outside
  mkdir -p "$root/replay" && cp "$work/syn-proxy.yaml" "$root/replay/syn-proxy.yaml" &&
    "$build/perf/floodgate-gen" proxied --out "$work/two-way.pcap" >/dev/null || return 1
  # The server's frames are --inside's, which floodgate does not count as packets.
  outside="$(tshark -r "$work/two-way.pcap" -Y '!(ip.src == 198.18.1.1 || ipv6.src == 2001:db8:1::1)' |
    wc -l)"
  replay syn-proxy "$outside" "$work/two-way.pcap" "$work/syn-proxy.yaml" \
    /replay/syn-proxy.yaml --inside 198.18.1.1/32,2001:db8:1::1/128
}

status_of() { in_root dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null; }

remove_keeps_rules() {
  in_root apt-get remove -y -q floodgate >/dev/null || return 1
  echo "status: '$(status_of floodgate)'"
  [ "$(status_of floodgate)" = "rc " ] && [ ! -e "$root/usr/bin/floodgate" ] &&
    cmp "$root/etc/floodgate/rules.yaml" "$src/config/default.yaml"
}

purge_removes_rules() {
  local status
  in_root apt-get purge -y -q floodgate >/dev/null || return 1
  status="$(status_of floodgate)"
  echo "status: '$status'"
  [ ! -e "$root/etc/floodgate/rules.yaml" ] && { [ -z "$status" ] || [ "$status" = "un " ]; }
}

purge_leaves_nothing() {
  local left
  in_root apt-get purge -y -q floodctl floodgate-monitoring >/dev/null || return 1
  left="$(find "$root/etc" "$root/usr" "$root/var/lib/systemd" -name '*flood*' 2>/dev/null)"
  [ -z "$left" ] || { echo "left: $left"; return 1; }
}

if [ -n "${FG_PACKAGE_DEBS:-}" ]; then
  mkdir -p "$work/debs" &&
    cp "$FG_PACKAGE_DEBS"/*.deb "$FG_PACKAGE_DEBS"/*.changes "$FG_PACKAGE_DEBS"/*.buildinfo "$work/debs/"
  need "the packages from $FG_PACKAGE_DEBS" packages_built
else
  need "dpkg-buildpackage -b -us -uc builds floodgate, floodctl, floodgate-monitoring" build_packages
  need "the three packages are there" packages_built
fi
check "lintian --fail-on error: no errors" lintian_clean
sed 's/^/# lintian: /' "$work/lintian.txt"
need "a clean Debian 12 root (debootstrap minbase, systemd) with apt's lists" make_root
need "apt install ./$(deb floodctl) alone" apt_install floodctl
check "floodctl --help runs without floodgate installed" floodctl_alone
need "apt install ./$(deb floodgate) ./$(deb floodgate-monitoring)" \
  apt_install floodgate floodgate-monitoring
check "floodgate --version and floodctl --version as the tree's" same_version
check "the installed files: binaries, XDP object, memif driver, rules as a conffile, dashboards, alerts, man pages" \
  installed_files
check "systemd-analyze verify on the installed units prints nothing; the docs they name are installed" units_verify
check "neither unit is enabled" units_not_enabled
check "floodgate replay (demo capture, /etc/floodgate/rules.yaml): the tree's bytes" replay_demo
check "floodgate replay (syn-proxy, two-way capture, --inside): the tree's bytes" replay_syn_proxy
check "apt remove floodgate keeps /etc/floodgate/rules.yaml" remove_keeps_rules
check "apt purge floodgate removes /etc/floodgate/rules.yaml" purge_removes_rules
check "apt purge floodctl floodgate-monitoring: nothing of floodgate left" purge_leaves_nothing
finish
