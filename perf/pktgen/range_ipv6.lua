-- Pktgen-DPDK: DNS (UDP/53) flood over IPv6 whose source steps through 65,536 /64s inside
-- 2001:db8::/32 (2001:db8:0:0::/64 to 2001:db8:0:ffff::/64).
--
--   pktgen -l 0-4 -n 4 -a 0000:03:00.0 -a 0000:03:00.1 -- -v -P -m "[1:2].0, [3:4].1" \
--          -f perf/pktgen/range_ipv6.lua
--
-- Why /64 steps: floodgate's default IPv6 key is the /64 (`key: { ipv6: 64 }`), because one
-- host may use any address of its /64. Incrementing only the low bits (the interface ID)
-- keeps every frame in one /64, which floodgate limits as one sender: that tests a single
-- bucket, not the table. So the increment here is 0:0:0:1:: (2^64), which moves the fourth
-- 16-bit group. In the pktgen sources we read, the IPv6 range adds the whole 128-bit
-- increment with carry (inet6AddrAdd() in lib/common/pg_inet.h, called from
-- pktgen_range_ctor() in app/pktgen-range.c). If your pktgen shows only one /64 on
-- `page range` or in a capture, it does not: replay the mix-c pcap (one attacker rotating
-- /64s, see replay_pcap.lua), which does not depend on pktgen's range arithmetic.
--
-- As with range_ipv4.lua, range frames are built once per mbuf of the range pool when the
-- port starts, so at most that many distinct /64s reach the wire; each passes its `dns`
-- burst of 5 and then 10/s, so about rx / (5 + 10 * duration_s) of them did.
--
-- IPv6 range addresses need pktgen.range.set_type(), which older lpktgenlib.c builds lack
-- (their range.src_ip parses IPv4 only); this script stops with a message there.
--
-- Run with pktgen 23.06.1 at commit 80b4134 over net_memif on 2 CPUs. perf/pktgen/README.md
-- has the one-box and 2-CPU command lines, the memif change pktgen needs and unattended runs.

local tx_port = 0
local rx_port = 1
local duration_s = 30           -- whole seconds
local quit_when_done = false

local src_first = "2001:db8::1"        -- interface ID ::1 in every /64
local src_last = "2001:db8:0:ffff::1"
local src_step = "0:0:0:1::"           -- one /64
local dst_ip = "2001:db8:ffff::53"
local dst_port = 53
local src_port = 1024
local frame_bytes = 78                 -- pktgen's smallest IPv6 frame, FCS included
local rate_pct = 100
local dst_mac = "02:00:00:00:00:02"    -- floodgate is promiscuous: any unicast MAC does

local tx = tostring(tx_port)

if not pktgen.range.set_type then
    error("range_ipv6.lua: this pktgen has no pktgen.range.set_type(), so its range mode " ..
          "cannot send IPv6; replay the mix-c pcap with replay_pcap.lua instead")
end

pktgen.set(tx, "seq_cnt", 0)
pktgen.pcap(tx, "off")

-- The type first: range_set_src_ip() stores an IPv6 address only when the range packet is
-- already IPv6 (app/pktgen-cmds.c).
pktgen.range.set_type(tx, "ipv6")
pktgen.range.ip_proto(tx, "udp")
pktgen.range.dst_mac(tx, "start", dst_mac)

pktgen.range.src_ip(tx, "start", src_first)
pktgen.range.src_ip(tx, "min", src_first)
pktgen.range.src_ip(tx, "max", src_last)
pktgen.range.src_ip(tx, "inc", src_step)

-- An all-zero increment keeps the start value.
pktgen.range.dst_ip(tx, "start", dst_ip)
pktgen.range.dst_ip(tx, "min", dst_ip)
pktgen.range.dst_ip(tx, "max", dst_ip)
pktgen.range.dst_ip(tx, "inc", "::")
pktgen.range.dst_port(tx, "start", dst_port)
pktgen.range.dst_port(tx, "inc", 0)
pktgen.range.src_port(tx, "start", src_port)
pktgen.range.src_port(tx, "inc", 0)
pktgen.range.pkt_size(tx, "start", frame_bytes)
pktgen.range.pkt_size(tx, "inc", 0)

pktgen.set(tx, "rate", rate_pct)
pktgen.set(tx, "count", 0)
pktgen.set_range(tx, "on")

-- Flood for a whole number of seconds of wall-clock time. Not pktgen.delay(seconds * 1000):
-- that sleeps in 10 ms steps and runs pktgen's timers (statistics, display) after each step,
-- so it lasts longer than asked on a busy machine (delay(5000) lasted 7.1 s with pktgen and
-- floodgate sharing 2 CPUs). os.time() counts whole seconds: start and stop on its ticks.
local function wait_for_tick(t)
    while os.time() < t do pktgen.delay(10) end
end
local function flood(port, seconds)
    wait_for_tick(os.time() + 1)
    local t0 = os.time()
    pktgen.start(port)
    wait_for_tick(t0 + seconds)
    pktgen.stop(port)
    return os.time() - t0
end

pktgen.clr()
duration_s = flood(tx, duration_s)
pktgen.delay(2000)             -- drain, and let the once-a-second stats snapshot catch up

local sent = pktgen.portStats(tx, "port")[tx_port]
local got = pktgen.portStats(tostring(rx_port), "port")[rx_port]
pktgen.screen("off")
print(string.format("range_ipv6: %s-%s step %s -> [%s]:%d, %d s", src_first, src_last, src_step,
                    dst_ip, dst_port, duration_s))
print(string.format("  tx port %d sent     %d frames, %d bytes (average %.1f per frame)",
                    tx_port, sent.opackets, sent.obytes,
                    sent.opackets > 0 and sent.obytes / sent.opackets or 0))
print(string.format("  rx port %d received %d frames (%d missed by the NIC, %d without mbuf)",
                    rx_port, got.ipackets, got.imissed, got.rx_nombuf))
if sent.opackets > 0 then
    print(string.format("  floodgate passed %.6f of the flood (rx/tx)",
                        got.ipackets / sent.opackets))
end
if quit_when_done then pktgen.quit() end
