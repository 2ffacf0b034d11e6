"""Writes small pcap files of Ethernet/IPv4 and IPv6 frames for the control-plane tests.

Independent of floodgate's own frame builder (tests/pkt_builder.*) on purpose: the tests should
not share code with what they test. Addresses stay inside 198.18.0.0/15 and 2001:db8::/32.
"""
import ipaddress
import struct


def _checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def udp4(src, dst, sport, dport, payload=b"x" * 18):
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                     ipaddress.IPv4Address(src).packed, ipaddress.IPv4Address(dst).packed)
    ip = ip[:10] + struct.pack("!H", _checksum(ip)) + ip[12:]
    return b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x01" + b"\x08\x00" + ip + udp


def tcp4(src, dst, sport, dport, flags=0x02):
    tcp = struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, flags, 65535, 0, 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0, 64, 6, 0,
                     ipaddress.IPv4Address(src).packed, ipaddress.IPv4Address(dst).packed)
    ip = ip[:10] + struct.pack("!H", _checksum(ip)) + ip[12:]
    return b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x01" + b"\x08\x00" + ip + tcp


def udp6(src, dst, sport, dport, payload=b"x" * 18):
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    ip = struct.pack("!IHBB16s16s", 6 << 28, len(udp), 17, 64,
                     ipaddress.IPv6Address(src).packed, ipaddress.IPv6Address(dst).packed)
    return b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x01" + b"\x86\xdd" + ip + udp


def write_pcap(path, frames, times_us=None):
    """A microsecond pcap of frames; frame i at times_us[i] microseconds since the epoch, or,
    without times_us, at i microseconds."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, frame in enumerate(frames):
            t_us = i if times_us is None else times_us[i]
            f.write(struct.pack("<IIII", t_us // 1000000, t_us % 1000000, len(frame), len(frame)))
            f.write(frame)
