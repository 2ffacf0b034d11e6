#include "control/daemon_client.h"

#include <cstdio>
#include <iostream>

#include "dataplane/api/unix_socket.h"

namespace floodgate {

bool ask_daemon(const std::string &socket, bool json_out, const nlohmann::json &request,
                nlohmann::json *reply) {
    LineClient client;
    std::string error;
    if (!client.connect(socket, &error)) {
        std::fprintf(stderr,
                     "floodctl: cannot reach the daemon: %s (is `floodctl daemon` running?)\n",
                     error.c_str());
        return false;
    }
    if (!client.request(request, reply, &error, 90000)) {  // a load may take a while
        std::fprintf(stderr, "floodctl: %s\n", error.c_str());
        return false;
    }
    if (!reply->value("ok", false)) {
        if (json_out) std::cout << reply->dump(2) << "\n";
        std::fprintf(stderr, "floodctl: %s\n",
                     reply->value("error", std::string("refused")).c_str());
        return false;
    }
    return true;
}

}  // namespace floodgate
