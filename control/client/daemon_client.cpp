#include "control/client/daemon_client.h"

#include <cstdio>
#include <iostream>

#include "dataplane/api/unix_socket.h"

namespace floodgate {

bool ask_daemon_quietly(const std::string &socket, const nlohmann::json &request,
                        nlohmann::json *reply, std::string *why, int timeout_ms) {
    LineClient client;
    std::string error;
    if (!client.connect(socket, &error)) {
        *why = "cannot reach the daemon: " + error + " (is `floodctl daemon` running?)";
        return false;
    }
    if (!client.request(request, reply, &error, timeout_ms)) {
        *why = error;
        return false;
    }
    if (!reply->value("ok", false)) {
        *why = reply->value("error", std::string("refused"));
        return false;
    }
    return true;
}

bool ask_daemon(const std::string &socket, bool json_out, const nlohmann::json &request,
                nlohmann::json *reply) {
    std::string why;
    if (ask_daemon_quietly(socket, request, reply, &why)) return true;
    // A refusal's reply is the daemon's answer: -j prints it.
    if (json_out && reply->is_object() && reply->contains("ok"))
        std::cout << reply->dump(2) << "\n";
    std::fprintf(stderr, "floodctl: %s\n", why.c_str());
    return false;
}

}  // namespace floodgate
