#include "dataplane/live/ring_drops.h"

#include <dirent.h>
#include <linux/if_packet.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>

namespace floodgate {

RingDrops::RingDrops(unsigned if_index) {
    DIR *fds = opendir("/proc/self/fd");
    if (fds == nullptr || if_index == 0) {
        if (fds != nullptr) closedir(fds);
        return;
    }
    const int own = dirfd(fds);
    while (const dirent *e = readdir(fds)) {
        char *end = nullptr;
        const long fd = std::strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end != '\0' || fd == own) continue;
        struct stat st {};
        if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
        sockaddr_ll at{};
        socklen_t len = sizeof at;
        if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr *>(&at), &len) == 0 &&
            at.sll_family == AF_PACKET && static_cast<unsigned>(at.sll_ifindex) == if_index)
            sockets_.push_back(static_cast<int>(fd));
    }
    closedir(fds);
}

uint64_t RingDrops::read() {
    uint64_t drops = 0;
    for (const int fd : sockets_) {
        // tpacket_stats (TPACKET_V1, V2) and tpacket_stats_v3 both begin with packets, drops.
        tpacket_stats_v3 s{};
        socklen_t len = sizeof s;
        if (getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &s, &len) == 0) drops += s.tp_drops;
    }
    return drops;
}

}  // namespace floodgate
