-- Pktgen-DPDK: replay a capture made by floodgate-gen through floodgate, in a loop.
--
--   floodgate-gen mix-b15 --out mix-b15.pcap
--   pktgen -l 0-4 -n 4 -a 0000:03:00.0 -a 0000:03:00.1 -- -P -m "[1:2].0, [3:4].1" \
--          -s 0:mix-b15.pcap -f perf/pktgen/replay_pcap.lua
--
-- The capture is given on pktgen's command line (-s PORT:FILE), not here: pktgen reads it
-- into an mbuf pool for that port when it starts, and pktgen.pcap(port, "on") only switches
-- the port to sending that pool. Without -s for tx_port the switch does nothing (enable_pcap()
-- in app/pktgen-cmds.c) and the port sends its single-packet default instead: check that
-- pktgen printed "PCAP file for port 0" at start up.
--
-- The mixes are microsecond pcap, the only kind pktgen's reader accepts (magic a1b2c3d4;
-- "Magic Number does not match!" otherwise). floodgate-gen's demo and lab captures are
-- nanosecond pcap: rewrite them with `tcpdump -r in.pcap -w out.pcap` first.
--
-- What pktgen does with the file: it sends the frames unchanged, looping over the file for
-- as long as the port runs, at the rate set below. It does not follow the capture's
-- timestamps, so every source in the file sends (replay rate / capture rate) times faster
-- than in the capture. The mixes:
--
--   mix-a  one source                          single-bucket flood, like single_source.lua
--   mix-b  1,048,576 random sources (10/8)     the limiter table, one key per source;
--          mix-b15 the same inside 198.18.0.0/15 (131,072 sources) for shared networks
--   mix-c  one IPv6 attacker rotating /64s     keys per /64 (floodgate's default IPv6 key)
--   mix-d  90% flood from 1000 sources,        well-behaved clients must still get through;
--          10% legitimate                      sped up, they may exceed their own limits
--
-- For verdicts against the capture's own timing use `floodgate replay` (README.md); this run
-- measures what the live dataplane sustains.
--
-- Written against the Lua API of pktgen 22.07.x / 23.03.x (app/lpktgenlib.c); run with
-- pktgen 23.06.1 at commit 80b4134 over net_memif on 2 CPUs. perf/pktgen/README.md has the
-- one-box and 2-CPU command lines, the memif change pktgen needs and unattended runs.

local tx_port = 0
local rx_port = 1
local duration_s = 30           -- whole seconds
local quit_when_done = false
local rate_pct = 100           -- percent of the link speed; lower it to slow the replay down

local tx = tostring(tx_port)

pktgen.set_range(tx, "off")
pktgen.set(tx, "seq_cnt", 0)
pktgen.set(tx, "rate", rate_pct)
pktgen.set(tx, "count", 0)
pktgen.pcap(tx, "on")

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
print(string.format("replay_pcap: the capture loaded with -s %d:FILE, %d s at %d%% of the link",
                    tx_port, duration_s, rate_pct))
print(string.format("  tx port %d sent     %d frames, %d bytes (average %.1f per frame)",
                    tx_port, sent.opackets, sent.obytes,
                    sent.opackets > 0 and sent.obytes / sent.opackets or 0))
print(string.format("  rx port %d received %d frames (%d missed by the NIC, %d without mbuf)",
                    rx_port, got.ipackets, got.imissed, got.rx_nombuf))
if sent.opackets > 0 then
    print(string.format("  floodgate passed %.6f of the frames (rx/tx)",
                        got.ipackets / sent.opackets))
end
if quit_when_done then pktgen.quit() end
