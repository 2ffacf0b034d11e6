// `floodgate replay`: the live pipeline run over a pcap, with the clock taken from the packet
// timestamps. Deterministic: the same rules and trace give the same bytes out.
#pragma once

namespace floodgate {

int replay_main(int argc, char **argv);

}  // namespace floodgate
