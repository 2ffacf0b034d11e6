#!/usr/bin/env python3
"""scripts/installed_programs.py on this tree: every program the tree starts is installed by
FG_PACKAGES; and the same check without nftables in the list refuses the syn-proxy lab's nft,
which shows it can fail (issue 41: a new Debian 12 machine had no nft)."""
import os
import subprocess
import sys

ROOT = sys.argv[1]
CHECK = [sys.executable, os.path.join(ROOT, "scripts/installed_programs.py")]

failed = 0
ok = subprocess.run(CHECK, capture_output=True, text=True, timeout=300)
print(ok.stdout, end="")
if ok.returncode != 0:
    print(f"FAIL the tree starts programs FG_PACKAGES does not install (exit {ok.returncode})")
    failed += 1
bad = subprocess.run(CHECK + ["--without", "nftables"], capture_output=True, text=True, timeout=300)
refused = [line for line in bad.stdout.splitlines() if line.startswith("nft (tests/lab/")]
if bad.returncode != 1 or len(refused) != 1 or "package nftables" not in refused[0]:
    print(f"FAIL without nftables the check exited {bad.returncode} and said:\n{bad.stdout}")
    failed += 1
else:
    print(f"ok   without nftables: {refused[0]}")
sys.exit(1 if failed else 0)
