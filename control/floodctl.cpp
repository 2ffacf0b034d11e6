#include "control/cli.h"

int main(int argc, char **argv) {
    return floodgate::floodctl_main(argc, argv);
}
