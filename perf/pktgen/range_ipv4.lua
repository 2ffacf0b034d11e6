-- Pktgen-DPDK: DNS (UDP/53) flood whose IPv4 source counts up through 198.18.0.0/15.
--
--   pktgen -l 0-4 -n 4 -a 0000:03:00.0 -a 0000:03:00.1 -- -v -P -m "[1:2].0, [3:4].1" \
--          -f perf/pktgen/range_ipv4.lua
--
-- Each source is a separate key for floodgate (the default key is the whole IPv4 address),
-- so this loads the limiter table rather than one bucket. Two things to know when reading
-- the result:
--
-- * pktgen builds range frames once, one per mbuf of the port's range pool, when the port
--   starts, and then resends those mbufs (pktgen_setup_cb() in app/pktgen.c). The number of
--   distinct sources on the wire is therefore at most the size of that pool (pktgen prints it
--   at start up, with -v only: "Create: 'Range TX    0:0 ' - Memory used (MBUFs  24576 ..."),
--   not the 131,072 of the range. Each source that reaches floodgate passes its `dns` burst
--   of 5 and then 10/s, so the frames received tell how many did: about
--   rx / (5 + 10 * duration_s). For a million distinct sources
--   replay the mix-b pcap instead (replay_pcap.lua).
-- * With config/default.yaml, 198.18.200.0/24 is allow-listed (always passed) and
--   198.19.255.0/24 is block-listed (always dropped): 256 sources each.
--
-- Written against the Lua API of pktgen 22.07.x / 23.03.x (app/lpktgenlib.c); run with
-- pktgen 23.06.1 at commit 80b4134 over net_memif on 2 CPUs. perf/pktgen/README.md has the
-- one-box and 2-CPU command lines, the memif change pktgen needs and unattended runs.

local tx_port = 0
local rx_port = 1
local duration_s = 30           -- whole seconds
local quit_when_done = false

local src_first = "198.18.0.0"
local src_last = "198.19.255.255"
local dst_ip = "198.18.255.1"
local dst_port = 53
local src_port = 1024
local frame_bytes = 64         -- pktgen sizes include the 4-byte FCS
local rate_pct = 100
local dst_mac = "02:00:00:00:00:02"   -- floodgate is promiscuous: any unicast MAC does

local tx = tostring(tx_port)

pktgen.set(tx, "seq_cnt", 0)
pktgen.pcap(tx, "off")

-- range.set_type is missing from older lpktgenlib.c builds; IPv4 is their default anyway.
if pktgen.range.set_type then pktgen.range.set_type(tx, "ipv4") end
pktgen.range.ip_proto(tx, "udp")
pktgen.range.dst_mac(tx, "start", dst_mac)

pktgen.range.src_ip(tx, "start", src_first)
pktgen.range.src_ip(tx, "min", src_first)
pktgen.range.src_ip(tx, "max", src_last)
pktgen.range.src_ip(tx, "inc", "0.0.0.1")

-- pktgen's range defaults increment the destination address and both ports
-- (pktgen_range_setup()): pin them with a zero increment.
pktgen.range.dst_ip(tx, "start", dst_ip)
pktgen.range.dst_ip(tx, "min", dst_ip)
pktgen.range.dst_ip(tx, "max", dst_ip)
pktgen.range.dst_ip(tx, "inc", "0.0.0.0")
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
print(string.format("range_ipv4: %s-%s -> %s:%d, %d s", src_first, src_last, dst_ip, dst_port,
                    duration_s))
-- The average frame size shows whether this pktgen honoured range pkt_size (check `page range`
-- too): 60 or 64 depending on whether the NIC counts the FCS.
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
