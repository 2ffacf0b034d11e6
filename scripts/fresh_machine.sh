#!/usr/bin/env bash
# The README's two commands on a new Debian 12 machine, as near as one box can make one:
# debootstrap's minbase (Priority required, nothing else) in a chroot of DIR with this
# kernel's /proc, /sys and /dev and a /run of its own, a clean clone of this tree's HEAD in it,
# then as root scripts/demo.sh, then scripts/test.sh (or the one named). A green CI on a
# machine that already has the packages hides a missing install step; this does not. Hugepages
# come from the host's kernel, so scripts/hugepages.sh reserves them as on any box where it
# can. Takes about an hour on 2 cores (packages, three builds, every test). As root.
#
#   scripts/fresh_machine.sh DIR [demo|test|both]    (DIR must not exist; removed at the end
#                                                     unless FG_FRESH_KEEP is set)
source "$(dirname "$0")/lib.sh"
dir="${1:?usage: scripts/fresh_machine.sh DIR [demo|test|both]}"
what="${2:-both}"
root="$FG_ROOT"
[ ! -e "$dir" ] || { echo "fresh_machine: $dir exists" >&2; exit 2; }
FG_PACKAGES=(debootstrap git)  # all this host needs: the chroot installs the rest itself
fg_install_deps

cleanup() {
  set +e
  mountpoint -q "$dir" && umount -R "$dir"
  # Nothing of the host may still be mounted under DIR when it is removed.
  if [ -z "${FG_FRESH_KEEP:-}" ] && ! findmnt -rn -o TARGET | grep -q "^$dir\(/\|$\)"; then
    rm -rf --one-file-system "$dir"
  else
    echo "fresh_machine: kept $dir"
  fi
}
trap cleanup EXIT

debootstrap --variant=minbase bookworm "$dir" http://deb.debian.org/debian
git clone -q "$root" "$dir/root/floodgate"
# DIR a mount point of its own, as a machine's / is: `ip netns exec` makes / a slave mount.
mount --bind "$dir" "$dir"
mount -t proc proc "$dir/proc"
mount --rbind /sys "$dir/sys" && mount --make-rslave "$dir/sys"
mount --rbind /dev "$dir/dev" && mount --make-rslave "$dir/dev"
mount -t tmpfs tmpfs "$dir/run"
cp /etc/resolv.conf "$dir/etc/resolv.conf"
# What Debian's installer writes and debootstrap does not: localhost by name.
printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$dir/etc/hosts"
# The host's apt mirrors, where they are not Debian's own.
cp /etc/apt/sources.list "$dir/etc/apt/" 2>/dev/null || true
cp -r /etc/apt/sources.list.d "$dir/etc/apt/" 2>/dev/null || true

in_chroot() {
  chroot "$dir" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}
status=0
if [ "$what" = demo ] || [ "$what" = both ]; then
  echo "==> fresh machine: bash scripts/demo.sh"
  in_chroot bash -c 'cd /root/floodgate && bash scripts/demo.sh' || status=$?
  echo "==> fresh machine: demo.sh exited $status"
fi
if [ "$what" = test ] || [ "$what" = both ]; then
  echo "==> fresh machine: bash scripts/test.sh"
  in_chroot bash -c 'cd /root/floodgate && bash scripts/test.sh' || status=$?
  echo "==> fresh machine: test.sh exited $status"
fi
exit "$status"
