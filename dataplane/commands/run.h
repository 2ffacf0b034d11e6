// `floodgate run`: the live dataplane, one worker per lcore between two ports (or one).
#pragma once

namespace floodgate {

int run_main(int argc, char **argv);

}  // namespace floodgate
