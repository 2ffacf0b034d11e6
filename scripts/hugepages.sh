#!/usr/bin/env bash
# Reserves 2 MiB hugepages and mounts hugetlbfs if needed, then prints the EAL memory options
# to use: "--in-memory -m MB" (hugepages, no files left behind) when enough are free, else
# "--no-huge --no-shconf -m MB" (ordinary memory: fine for tests and software ports, not for
# line rate on a NIC).
#
#   scripts/hugepages.sh MB      (as root)
set -u
mb="${1:-512}"
pages=$(( (mb + 1) / 2 ))
dir=/dev/hugepages
nr=/proc/sys/vm/nr_hugepages
if [ -w "$nr" ]; then
  have=$(cat "$nr")
  [ "$have" -lt "$pages" ] && echo "$pages" > "$nr" 2>/dev/null
fi
if ! mountpoint -q "$dir" 2>/dev/null; then
  mkdir -p "$dir" 2>/dev/null && mount -t hugetlbfs nodev "$dir" 2>/dev/null
fi
free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo 2>/dev/null)
if [ "${free:-0}" -ge "$pages" ] && mountpoint -q "$dir" 2>/dev/null; then
  echo "--in-memory -m $mb"
else
  echo "--no-huge --no-shconf -m $mb"
fi
