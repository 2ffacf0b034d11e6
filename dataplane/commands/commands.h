// floodgate's commands, each given argv from its own name on ("replay", then its options).
// Each returns the process's exit code: 0 done, 1 failed, 2 a usage error.
#pragma once

namespace floodgate {

// `floodgate run`: the live dataplane, one worker per lcore between two ports (or one).
int run_main(int argc, char **argv);

// `floodgate replay`: the rules over a capture, offline (dataplane/replay/replay.h).
int replay_main(int argc, char **argv);

// `floodgate probe`: what floodgate could do with each port, before deploying
// (dataplane/live/port_probe.h).
int probe_main(int argc, char **argv);

}  // namespace floodgate
