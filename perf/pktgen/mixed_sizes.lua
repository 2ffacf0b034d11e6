-- Pktgen-DPDK: UDP/53 flood at 64, 128, 256, 512, 1024 and 1518-byte frames, one size after
-- the other, with a row per size.
--
--   pktgen -l 0-4 -n 4 -a 0000:03:00.0 -a 0000:03:00.1 -- -P -m "[1:2].0, [3:4].1" \
--          -f perf/pktgen/mixed_sizes.lua
--
-- Why phases and not sequence mode, which would interleave the sizes: in the 23.x
-- app/lpktgenlib.c we read, pktgen.seq() and pktgen.seqTable() take their port list from the
-- wrong argument (pktgen_get_portlist() parses argument 1, the sequence number), so entry N
-- goes to port N instead of the port given. Range mode's pkt_size increment only steps by a
-- fixed amount, and some releases mishandle range pkt_size. Single-packet mode works in every
-- release, and one size per phase tells which size floodgate stops keeping up at.
--
-- With config/default.yaml the source is limited by the `dns` rule (a burst of 5, then
-- 10/s): each phase passes about 5 + 10 * seconds_per_size frames (the pause between phases
-- gives the burst back). To measure the pass path
-- instead, set src_ip to an allow-listed source (198.18.200.0/24 in config/default.yaml):
-- then rx should equal tx in every row.
--
-- Written against the Lua API of pktgen 22.07.x / 23.03.x (app/lpktgenlib.c); run with
-- pktgen 23.06.1 at commit 80b4134 over net_memif on 2 CPUs. perf/pktgen/README.md has the
-- one-box and 2-CPU command lines, the memif change pktgen needs and unattended runs.

local tx_port = 0
local rx_port = 1
local seconds_per_size = 5     -- whole seconds
local quit_when_done = false

local sizes = { 64, 128, 256, 512, 1024, 1518 }   -- frame bytes, FCS included
local src_ip = "198.18.66.6"
local dst_ip = "198.18.255.1"
local dst_port = 53
local src_port = 1024
local rate_pct = 100
local dst_mac = "02:00:00:00:00:02"   -- floodgate is promiscuous: any unicast MAC does

local tx = tostring(tx_port)
local rx = tostring(rx_port)

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
pktgen.set(tx, "rate", rate_pct)
pktgen.set(tx, "count", 0)

-- Counters are totals since pktgen.clr(); each row is the difference across one phase.
local function totals()
    local s = pktgen.portStats(tx, "port")[tx_port]
    local r = pktgen.portStats(rx, "port")[rx_port]
    return { tx = s.opackets, tx_bytes = s.obytes, rx = r.ipackets, missed = r.imissed }
end

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
local rows = {}
local before = totals()
for _, bytes in ipairs(sizes) do
    pktgen.set(tx, "size", bytes)
    flood(tx, seconds_per_size)   -- start rebuilds the port's frames with the new size
    pktgen.delay(2000)         -- drain, and let the once-a-second stats snapshot catch up
    local after = totals()
    rows[#rows + 1] = { bytes = bytes, tx = after.tx - before.tx,
                        tx_bytes = after.tx_bytes - before.tx_bytes, rx = after.rx - before.rx,
                        missed = after.missed - before.missed }
    before = after
end

pktgen.screen("off")
print(string.format("mixed_sizes: %s -> %s:%d, %d s per size", src_ip, dst_ip, dst_port,
                    seconds_per_size))
-- "bytes/frame" is what the NIC counted: the set size, or 4 less if it leaves out the FCS.
print("   size  bytes/frame        tx frames   tx Mpps        rx frames     rx/tx   rx missed")
for _, row in ipairs(rows) do
    print(string.format("  %5d  %11.1f  %15d  %8.3f  %15d  %8.6f  %10d", row.bytes,
                        row.tx > 0 and row.tx_bytes / row.tx or 0, row.tx,
                        row.tx / seconds_per_size / 1e6, row.rx,
                        row.tx > 0 and row.rx / row.tx or 0, row.missed))
end
if quit_when_done then pktgen.quit() end
