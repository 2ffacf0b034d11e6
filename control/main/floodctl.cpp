#include "control/main/command_line.h"

int main(int argc, char **argv) {
    return floodgate::floodctl_main(argc, argv);
}
