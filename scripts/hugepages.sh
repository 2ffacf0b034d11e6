#!/usr/bin/env bash
# Reserves 2 MiB hugepages if needed, then prints the EAL memory options to use:
# "--in-memory -m MB" (hugepages, no files left behind) when enough are free, else
# "--no-huge --no-shconf -m MB" (ordinary memory: fine for tests and software ports, not for
# line rate on a NIC). Counts 2 MiB pages through their own sysfs folder, whatever the
# system's default hugepage size.
#
#   scripts/hugepages.sh MB      (as root)
set -u
mb="${1:-512}"
pages=$(( (mb + 1) / 2 ))
sys=/sys/kernel/mm/hugepages/hugepages-2048kB
if [ -w "$sys/nr_hugepages" ]; then
  have=$(cat "$sys/free_hugepages")
  if [ "$have" -lt "$pages" ]; then
    echo $(( $(cat "$sys/nr_hugepages") + pages - have )) > "$sys/nr_hugepages" 2>/dev/null
  fi
fi
free=$(cat "$sys/free_hugepages" 2>/dev/null || echo 0)
if [ "$free" -ge "$pages" ]; then
  echo "--in-memory -m $mb"
else
  echo "--no-huge --no-shconf -m $mb"
fi
