"""The spoofed sources of floodgate-gen's syn-flood trace (perf/floodgate_gen.cpp), as the
answers and syn-proxy labs recognise them at the server: any address of 198.19.0.0/16 or
2001:db8:66::/48 (the trace's are 198.19.0.0/20 and that /48)."""
import ipaddress

SPOOFED = [ipaddress.ip_network("198.19.0.0/16"), ipaddress.ip_network("2001:db8:66::/48")]


def spoofed(src):
    try:
        a = ipaddress.ip_address(src)
    except ValueError:
        return False
    return any(a.version == n.version and a in n for n in SPOOFED)
