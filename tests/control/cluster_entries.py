"""Signed cluster entries written by a test, as a box holding the cluster key writes them: the
key file the tests' daemons share, the MAC made here, in Python's hmac, from docs/cluster.md's
description of what an entry signs ("Signed entries"), and a box that numbers its entries."""
import hashlib
import hmac
import os
import struct
import time

CLUSTER = "fgtest"  # the cluster every control test's rules name
KEY_ID, SECRET = "k1", "3f" * 32


def key_file(work, key_id=KEY_ID, secret=SECRET):
    """The file of one key, written once, readable by its owner only as the daemon requires."""
    path = os.path.join(work, "cluster-%s.key" % key_id)
    if not os.path.exists(path):
        with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write("%s %s\n" % (key_id, secret))
    return path


def field(b):
    return struct.pack(">Q", len(b)) + b


def mac(secret, key_id, box, seq, t_ms, payload, cluster=CLUSTER):
    """HMAC-SHA256 over the cluster, the box, its sequence number, its time, the key id and the
    payload, each variable field after its length."""
    data = (b"floodgate cluster entry v1" + field(cluster.encode()) + field(box) +
            struct.pack(">QQ", seq, t_ms) + field(key_id.encode()) + field(payload))
    return hmac.new(secret.encode(), data, hashlib.sha256).hexdigest()


class SigningBox:
    """A box that holds the key and numbers its entries as a box does."""

    def __init__(self, name):
        self.name = name if isinstance(name, bytes) else name.encode()
        self.seq = time.time_ns() // 1000

    def fields(self, payload, secret=SECRET, key_id=KEY_ID, skew_ms=0):
        """The XADD fields of one entry: box, sequence, time, key id, MAC, payload."""
        payload = payload if isinstance(payload, bytes) else payload.encode()
        self.seq += 1
        t = int(time.time() * 1000) + skew_ms
        return [b"b", self.name, b"s", str(self.seq).encode(), b"t", str(t).encode(),
                b"k", key_id.encode(), b"m",
                mac(secret, key_id, self.name, self.seq, t, payload).encode(), b"d", payload]
