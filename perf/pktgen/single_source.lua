-- Pktgen-DPDK: one IPv4 source floods DNS (UDP/53) through floodgate at line rate.
--
--   pktgen -l 0-4 -n 4 -a 0000:03:00.0 -a 0000:03:00.1 -- -P -m "[1:2].0, [3:4].1" \
--          -f perf/pktgen/single_source.lua
--
-- tx_port sends into floodgate's outside port; rx_port is cabled to floodgate's inside port
-- and counts what floodgate passed. With config/default.yaml the `dns` rule admits a burst of 5
-- and then 10/s for 198.18.66.6, so about 5 + 10 * duration_s frames (305 for 30 s) should
-- arrive, whatever the line rate; a few less, because the port starts sending a fraction of a
-- second after pktgen.start() (its worker first rewrites every mbuf of the pool,
-- pktgen_setup_packets() in app/pktgen.c). perf/pktgen/README.md has the setups and what to
-- compare.
--
-- Written against the Lua API of pktgen 22.07.x / 23.03.x (app/lpktgenlib.c); run with
-- pktgen 23.06.1 at commit 80b4134 over net_memif on 2 CPUs. perf/pktgen/README.md has the
-- one-box and 2-CPU command lines, the memif change pktgen needs and unattended runs. Ports are
-- passed as strings ("0"): before 23.03 the Lua portlist had to be a string.

local tx_port = 0
local rx_port = 1
local duration_s = 30           -- whole seconds
local quit_when_done = false   -- true: leave pktgen after the report (for unattended runs)

local src_ip = "198.18.66.6"
local dst_ip = "198.18.255.1"
local dst_port = 53
local src_port = 1024
local frame_bytes = 64         -- pktgen sizes include the 4-byte FCS
local rate_pct = 100           -- percent of the link speed pktgen reads from the port
-- Floodgate runs its ports promiscuous and forwards frames unchanged, so any unicast MAC
-- does; this one is the destination floodgate-gen writes.
local dst_mac = "02:00:00:00:00:02"

local tx = tostring(tx_port)

-- Single-packet mode: switch off the modes that would take precedence.
pktgen.set_range(tx, "off")
pktgen.set(tx, "seq_cnt", 0)
pktgen.pcap(tx, "off")

pktgen.set_type(tx, "ipv4")
pktgen.set_proto(tx, "udp")
pktgen.set_mac(tx, "dst", dst_mac)
pktgen.set_ipaddr(tx, "src", src_ip .. "/32")
pktgen.set_ipaddr(tx, "dst", dst_ip)
pktgen.set(tx, "sport", src_port)
pktgen.set(tx, "dport", dst_port)
pktgen.set(tx, "size", frame_bytes)
pktgen.set(tx, "rate", rate_pct)
pktgen.set(tx, "count", 0)     -- 0: until stopped

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

pktgen.clr()                   -- counters from zero, so the report covers this run only
duration_s = flood(tx, duration_s)
-- portStats("port") returns the snapshot pktgen's stats timer takes about once a second:
-- wait for frames still in floodgate's queues and for the next snapshot.
pktgen.delay(2000)

local sent = pktgen.portStats(tx, "port")[tx_port]
local got = pktgen.portStats(tostring(rx_port), "port")[rx_port]
pktgen.screen("off")           -- keep the display from overwriting the report
print(string.format("single_source: %s -> %s:%d, %d-byte frames, %d s",
                    src_ip, dst_ip, dst_port, frame_bytes, duration_s))
print(string.format("  tx port %d sent     %d frames, %d bytes (%d errors)",
                    tx_port, sent.opackets, sent.obytes, sent.oerrors))
print(string.format("  rx port %d received %d frames (%d missed by the NIC, %d without mbuf)",
                    rx_port, got.ipackets, got.imissed, got.rx_nombuf))
if sent.opackets > 0 then
    print(string.format("  floodgate passed %.6f of the flood (rx/tx)",
                        got.ipackets / sent.opackets))
end
if quit_when_done then pktgen.quit() end
