"""`floodgate probe` on every PMD this machine has, each line checked against what DPDK 22.11
documents for that PMD: its guide (doc/guides/nics/*.rst, features/*.ini) and, where the guide
is silent, its source (drivers/net/*), cited beside each expectation. The expectations are
written here, not read from floodgate.

    probe_pmds.py BUILD_DIR virtual|kernel

virtual: net_null, net_ring and net_memif (floodgate's patched driver, dpdk/, on a socket of the
test's own). kernel (root): net_af_packet and net_af_xdp on a veth pair, net_tap on a tap of its
own, all in a network namespace the test makes and removes. TAP output."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "control"))
from control_lib import BUILD, FLOODGATE, check, finish  # noqa: E402

EAL = ["--no-huge", "-m", "256", "--no-pci", "--lcores", "0@0,1@0,2@0"]  # 2 workers wanted

# rte_ethdev.h's RSS bits, by the names floodgate prints (its own list, dataplane/live/
# offload_names.cpp, is not read here).
IP = ["IPV4", "FRAG_IPV4", "NONFRAG_IPV4_OTHER", "IPV6", "FRAG_IPV6", "NONFRAG_IPV6_OTHER",
      "IPV6_EX"]                                              # RTE_ETH_RSS_IP
PROTO_MASK = ["IPV4", "FRAG_IPV4", "NONFRAG_IPV4_TCP", "NONFRAG_IPV4_UDP", "NONFRAG_IPV4_SCTP",
              "NONFRAG_IPV4_OTHER", "IPV6", "FRAG_IPV6", "NONFRAG_IPV6_TCP", "NONFRAG_IPV6_UDP",
              "NONFRAG_IPV6_SCTP", "NONFRAG_IPV6_OTHER", "L2_PAYLOAD", "IPV6_EX", "IPV6_TCP_EX",
              "IPV6_UDP_EX", "PORT", "VXLAN", "GENEVE", "NVGRE", "MPLS"]  # RTE_ETH_RSS_PROTO_MASK
TAP_RSS = ["IPV4", "FRAG_IPV4", "NONFRAG_IPV4_TCP", "NONFRAG_IPV4_UDP", "NONFRAG_IPV4_OTHER",
           "IPV6", "FRAG_IPV6", "NONFRAG_IPV6_TCP", "NONFRAG_IPV6_UDP", "NONFRAG_IPV6_OTHER",
           "IPV6_EX", "IPV6_TCP_EX", "IPV6_UDP_EX"]  # RTE_ETH_RSS_IP | _UDP | _TCP

CHECKS = ["tier ipv4 /32", "tier ipv4 /24", "tier ipv6 /64", "item eth", "item ipv4 src",
          "item ipv6 src", "action drop", "action count", "action queue", "action rss"]
# A PMD without flow_ops_get: rte_flow.c answers ENOSYS to every call.
NO_FLOW_API = {c: (False, "other") for c in CHECKS}


def no_rss():
    return {"rss.hash_key_size": 0, "rss.reta_size": 0, "rss.offloads": "0x0", "rss.types": [],
            "rss.source_steering": False,
            "rss.refused": "offers no RSS on IP (flow_type_rss_offloads 0x0)"}


# Per PMD: (probe field, expected value, where DPDK says so).
def expected_null():
    return [
        ("driver", "net_null", ""),
        ("link.up", False, "rte_eth_null.c: link down until started (the probe does not start it)"),
        ("link.speed_mbps", 10000, "rte_eth_null.c: pmd_link .link_speed RTE_ETH_SPEED_NUM_10G"),
        ("queues.max_rx", 1024, "rte_eth_null.c: RTE_DIM(rx_null_queues), RTE_MAX_QUEUES_PER_PORT"),
        ("queues.max_tx", 1024, "rte_eth_null.c: RTE_DIM(tx_null_queues)"),
        ("queues.asked", 2, "two worker lcores"),
        ("rss.hash_key_size", 0, "rte_eth_null.c: eth_dev_info sets no hash_key_size (its key is "
         "40 bytes inside)"),
        ("rss.reta_size", 128, "rte_eth_null.c: RTE_ETH_RSS_RETA_SIZE_128 / GROUP_SIZE groups"),
        ("rss.offloads", "0x2003ffffc", "rte_eth_null.c: RTE_ETH_RSS_PROTO_MASK"),
        ("rss.types", PROTO_MASK, "RTE_ETH_RSS_PROTO_MASK's bits"),
        ("rss.l3_src_only", False, "RTE_ETH_RSS_PROTO_MASK has no L3_SRC_ONLY"),
        ("rss.read_back", IP, "eth_rss_hash_conf_get: the rss_hf configured (floodgate asks "
         "RTE_ETH_RSS_IP)"),
        ("rss.source_steering", False, "no L3_SRC_ONLY"),
        ("rss.refused", "offers no L3_SRC_ONLY hashing (flow_type_rss_offloads 0x2003ffffc)", ""),
        ("rx_offloads", [], "rte_eth_null.c: no rx_offload_capa"),
        ("tx_offloads", [], "rte_eth_null.c: no tx_offload_capa"),
        ("rte_flow", NO_FLOW_API, "rte_eth_null.c: no flow_ops_get"),
        ("choice.steering.mode", "software", "no source-only RSS"),
        ("choice.nic_tier.available", False, "no rte_flow"),
        ("choice.xdp_tier.available", False, "no kernel interface"),
    ]


def expected_ring():
    return [
        ("driver", "net_ring", ""),
        ("link.up", False, "rte_eth_ring.c: link down until started"),
        ("link.speed_mbps", 10000, "rte_eth_ring.c: pmd_link RTE_ETH_SPEED_NUM_10G"),
        ("queues.max_rx", 16, "rte_eth_ring.h: RTE_PMD_RING_MAX_RX_RINGS"),
        ("queues.max_tx", 16, "rte_eth_ring.h: RTE_PMD_RING_MAX_TX_RINGS"),
        ("rss.read_back", None, "rte_eth_ring.c: no rss_hash_conf_get"),
        ("rx_offloads", ["SCATTER"], "rte_eth_ring.c: RTE_ETH_RX_OFFLOAD_SCATTER"),
        ("tx_offloads", ["MULTI_SEGS"], "rte_eth_ring.c: RTE_ETH_TX_OFFLOAD_MULTI_SEGS"),
        ("rte_flow", NO_FLOW_API, "rte_eth_ring.c: no flow_ops_get"),
        ("choice.steering.mode", "software", "no RSS"),
        ("choice.nic_tier.available", False, "no rte_flow"),
        ("choice.xdp_tier.available", False, "no kernel interface"),
    ] + [(k, v, "rte_eth_ring.c: no RSS") for k, v in no_rss().items()]


def expected_memif():
    return [
        ("driver", "net_memif", ""),
        ("link.up", False, "memif.rst: the link is up once a peer connects; none does here"),
        ("link.speed_mbps", 100000, "rte_eth_memif.c: pmd_link RTE_ETH_SPEED_NUM_100G"),
        ("queues.max_rx", 255, "rte_eth_memif.h: ETH_MEMIF_MAX_NUM_Q_PAIRS"),
        ("queues.max_tx", 255, "rte_eth_memif.h: ETH_MEMIF_MAX_NUM_Q_PAIRS"),
        ("rss.read_back", None, "rte_eth_memif.c: no rss_hash_conf_get"),
        ("rx_offloads", [], "rte_eth_memif.c: no rx_offload_capa"),
        ("tx_offloads", ["MULTI_SEGS"], "rte_eth_memif.c: RTE_ETH_TX_OFFLOAD_MULTI_SEGS"),
        # floodgate's memif (dpdk/memif_flow.c) holds a flow table standing in for a NIC's:
        # ETH / IPV4|IPV6 source / END with DROP, COUNT beside it; the rest refused.
        ("rte_flow", {"tier ipv4 /32": (True, None), "tier ipv4 /24": (True, None),
                      "tier ipv6 /64": (True, None), "item eth": (False, "item"),
                      "item ipv4 src": (True, None), "item ipv6 src": (True, None),
                      "action drop": (True, None), "action count": (False, "action"),
                      "action queue": (False, "action"), "action rss": (False, "action")},
         "dpdk/memif_flow.c"),
        ("choice.steering.mode", "software", "no RSS"),
        ("choice.nic_tier.available", True, "dpdk/memif_flow.c takes the tier's rules"),
        ("choice.nic_tier.counted", True, "dpdk/memif_flow.c: DROP with COUNT"),
        ("choice.xdp_tier.available", False, "no kernel interface"),
    ] + [(k, v, "rte_eth_memif.c: no RSS") for k, v in no_rss().items()]


def expected_af_packet(iface):
    return [
        ("driver", "net_af_packet", ""),
        ("link.speed_mbps", 10000, "rte_eth_af_packet.c: pmd_link RTE_ETH_SPEED_NUM_10G"),
        ("queues.max_rx", 2, "af_packet.rst: qpairs (2 given)"),
        ("queues.max_tx", 2, "af_packet.rst: qpairs"),
        ("queues.asked", 2, ""),
        ("rss.read_back", None, "rte_eth_af_packet.c: no rss_hash_conf_get"),
        ("rx_offloads", ["VLAN_STRIP"], "rte_eth_af_packet.c: RTE_ETH_RX_OFFLOAD_VLAN_STRIP"),
        ("tx_offloads", ["VLAN_INSERT", "MULTI_SEGS"],
         "rte_eth_af_packet.c: RTE_ETH_TX_OFFLOAD_MULTI_SEGS | VLAN_INSERT"),
        ("rte_flow", NO_FLOW_API, "rte_eth_af_packet.c: no flow_ops_get"),
        ("choice.steering.mode", "software", "no RSS: the kernel's fanout spreads by flow"),
        ("choice.nic_tier.available", False, "no rte_flow"),
        ("choice.xdp_tier.available", True, "a kernel interface: the XDP tier standalone"),
        ("choice.xdp_tier.how", "standalone on the kernel interface %s (floodctl xdp attach %s), "
         "not fed by the dataplane" % (iface, iface), ""),
    ] + [(k, v, "rte_eth_af_packet.c: no RSS") for k, v in no_rss().items()]


def expected_af_xdp(iface, program):
    how = ("net_af_xdp on %s with xdp_prog=: the tier, if that is floodgate_xdp.bpf.o" % iface
           if program else "net_af_xdp on %s without xdp_prog=.../floodgate_xdp.bpf.o (the "
           "PMD's own program)" % iface)
    return [
        ("driver", "net_af_xdp", ""),
        ("link.speed_mbps", 10000, "rte_eth_af_xdp.c: pmd_link RTE_ETH_SPEED_NUM_10G"),
        ("queues.max_rx", 1, "af_xdp.rst: queue_count, 1 by default"),
        ("queues.asked", 1, "one queue: floodgate would run one worker on it"),
        ("rss.read_back", None, "rte_eth_af_xdp.c: no rss_hash_conf_get"),
        ("rss.hash_key_size", 0, "rte_eth_af_xdp.c: no RSS"),
        ("rss.reta_size", 0, "rte_eth_af_xdp.c: no RSS"),
        ("rss.offloads", "0x0", "rte_eth_af_xdp.c: no RSS"),
        ("rx_offloads", [], "rte_eth_af_xdp.c: none"),
        ("tx_offloads", [], "rte_eth_af_xdp.c: none"),
        ("rte_flow", NO_FLOW_API, "rte_eth_af_xdp.c: no flow_ops_get"),
        ("choice.steering.mode", "one worker", "one queue"),
        ("choice.nic_tier.available", False, "no rte_flow"),
        ("choice.xdp_tier.available", program, "floodgate's program through xdp_prog="),
        ("choice.xdp_tier.how", how, ""),
    ]


def expected_tap(iface):
    flows = {"tier ipv4 /32": (True, None), "tier ipv4 /24": (True, None),
             "tier ipv6 /64": (True, None), "item eth": (True, None),
             "item ipv4 src": (True, None), "item ipv6 src": (True, None),
             "action drop": (True, None), "action count": (False, "action"),
             "action queue": (True, None)}
    return [
        ("driver", "net_tap", ""),
        ("link.speed_mbps", 10000, "rte_eth_tap.c: pmd_link RTE_ETH_SPEED_NUM_10G"),
        ("queues.max_rx", 16, "tap/meson.build: TAP_MAX_QUEUES=16"),
        ("queues.max_tx", 16, "tap/meson.build: TAP_MAX_QUEUES=16"),
        ("rss.hash_key_size", 40, "tap_rss.h: TAP_RSS_HASH_KEY_SIZE"),
        ("rss.reta_size", 0, "rte_eth_tap.c: no reta_size"),
        ("rss.offloads", "0x3afbc", "tap_rss.h: ~TAP_RSS_HF_MASK, IP | UDP | TCP"),
        ("rss.types", TAP_RSS, "tap.rst: all of IP, UDP and TCP hashing together"),
        ("rss.l3_src_only", False, "tap.rst: not in partial combinations"),
        ("rss.read_back", None, "rte_eth_tap.c: no rss_hash_conf_get"),
        ("rss.source_steering", False, "no L3_SRC_ONLY"),
        ("rss.refused", "offers no L3_SRC_ONLY hashing (flow_type_rss_offloads 0x3afbc)", ""),
        ("rx_offloads", ["IPV4_CKSUM", "UDP_CKSUM", "TCP_CKSUM", "SCATTER"],
         "rte_eth_tap.c: TAP_RX_OFFLOAD"),
        ("tx_offloads", ["IPV4_CKSUM", "UDP_CKSUM", "TCP_CKSUM", "TCP_TSO", "MULTI_SEGS"],
         "rte_eth_tap.c: TAP_TX_OFFLOAD"),
        # tap.ini's actions are drop, passthru, queue and rss: no count, so the tier's DROP +
        # COUNT is refused by its action and the tier asks for DROP alone (nic_flow_port.h).
        # tap_flow_validate parses without the kernel: it accepts what creation (TC flower)
        # could still refuse.
        ("rte_flow", flows, "features/tap.ini, tap_flow.c"),
        ("choice.steering.mode", "software", "no source-only RSS"),
        ("choice.nic_tier.available", True, "DROP alone"),
        ("choice.nic_tier.counted", False, "tap.ini: no count action"),
        ("choice.xdp_tier.available", True, "a kernel interface: the XDP tier standalone"),
        ("choice.xdp_tier.how", "standalone on the kernel interface %s (floodctl xdp attach %s), "
         "not fed by the dataplane" % (iface, iface), ""),
    ]


def field(port, path):
    v = port
    for part in path.split("."):
        if not isinstance(v, dict) or part not in v:
            return "(absent)"
        v = v[part]
    return v


def check_port(port, expected):
    for path, want, source in expected:
        got = field(port, path)
        if path == "rte_flow":
            got = {k: (v.get("accepted"), v.get("refusal")) for k, v in got.items()} \
                if isinstance(got, dict) else got
            got = {k: got.get(k) for k in want} if isinstance(got, dict) else got
        check(got == want, "%s: %s %s%s" % (port.get("name"), path, json.dumps(want),
                                             " (%s)" % source if source else ""),
              "probe says %s" % json.dumps(got))


def probe(args, work, ns=None):
    cmd = [FLOODGATE, "probe"] + EAL + ["--file-prefix", "fgprobe%d" % os.getpid()] + args + \
        ["--", "--json"]
    if ns:
        cmd = ["ip", "netns", "exec", ns] + cmd
    with open(os.path.join(work, "probe.log"), "a") as log:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
    check(r.returncode == 0, "floodgate probe %s: exit 0" % " ".join(args), r.stdout[-2000:])
    try:
        return json.loads(r.stdout)
    except ValueError:
        check(False, "its output is JSON", r.stdout[-2000:])
        return []


def virtual(work):
    ports = probe(["--vdev", "net_null0", "--vdev", "net_ring0", "--vdev",
                   "net_memif0,role=server,socket=%s/m.sock,socket-abstract=no" % work], work)
    if check(len(ports) == 3, "three ports probed"):
        check_port(ports[0], expected_null())
        check_port(ports[1], expected_ring())
        # A tree built without -Ddpdk_source (the ASan tree) has DPDK's own memif, which has
        # no flow table: its lines are floodgate's driver's.
        if os.environ.get("FG_MEMIF_FLOW", "1") == "1":
            check_port(ports[2], expected_memif())
        # Nothing is kept open: the memif socket is the probe's and goes with it.
        check(not os.path.exists(os.path.join(work, "m.sock")), "the memif socket is gone")


def kernel(work):
    ns = "fgprobe%d" % os.getpid()
    program = os.path.join(BUILD, "bpf", "floodgate_xdp.bpf.o")
    try:
        for cmd in (["ip", "netns", "add", ns],
                    ["ip", "-n", ns, "link", "add", "fgp-a", "type", "veth", "peer", "name",
                     "fgp-b"],
                    ["ip", "-n", ns, "link", "set", "fgp-a", "up"],
                    ["ip", "-n", ns, "link", "set", "fgp-b", "up"]):
            subprocess.run(cmd, check=True)
        ports = probe(["--vdev", "net_af_packet0,iface=fgp-a,qpairs=2", "--vdev",
                       "net_tap0,iface=fgp-tap", "--vdev", "net_af_xdp0,iface=fgp-b"], work, ns)
        if check(len(ports) == 3, "three ports probed"):
            check_port(ports[0], expected_af_packet("fgp-a"))
            check_port(ports[1], expected_tap("fgp-tap"))
            check_port(ports[2], expected_af_xdp("fgp-b", False))
            # Asking took no traffic: no XDP program on the veth (net_af_xdp loads its own at
            # queue setup, which the probe leaves out), and the tap went with the port.
            links = subprocess.run(["ip", "-n", ns, "-d", "link", "show"], capture_output=True,
                                   text=True).stdout
            check("xdp" not in links, "no XDP program left on the veth pair", links)
            check("fgp-tap" not in links, "the tap is gone with its port", links)
        if os.path.exists(program):
            ports = probe(["--vdev", "net_af_xdp0,iface=fgp-b,xdp_prog=" + program], work, ns)
            if check(len(ports) == 1, "net_af_xdp with floodgate's program probed"):
                check_port(ports[0], expected_af_xdp("fgp-b", True))
    finally:
        subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)


def main():
    mode = sys.argv[2]
    if mode == "kernel" and os.geteuid() != 0:
        print("1..0 # SKIP needs root (network namespaces)")
        return 0
    work = tempfile.mkdtemp(prefix="fg-probe-")
    virtual(work) if mode == "virtual" else kernel(work)
    return finish(work, ["probe.log"])


if __name__ == "__main__":
    sys.exit(main())
