#include "rules/load.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace floodgate {

Config parse_config(const std::string &yaml_text, const std::string &file_name) {
    return config_from_doc(yaml_to_doc(yaml_text, file_name), file_name);
}

std::string read_config_file(const std::string &path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        const int err = errno;  // before the allocations below can touch it
        throw ConfigError(path, 0, "", std::string("cannot open: ") + strerror(err));
    }
    struct Closer {
        int fd;
        ~Closer() { close(fd); }
    } closer{fd};
    std::string text;
    char buf[65536];
    for (;;) {
        const ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int err = errno;
            throw ConfigError(path, 0, "", std::string("cannot read: ") + strerror(err));
        }
        if (n == 0) break;
        text.append(buf, static_cast<size_t>(n));
        if (text.size() > kMaxDocBytes)
            throw ConfigError(path, 0, "",
                              "larger than " + std::to_string(kMaxDocBytes) + " bytes");
    }
    return text;
}

RulesFile parse_rules_file(const std::string &yaml_text, const std::string &name) {
    const DocNode doc = yaml_to_doc(yaml_text, name);
    return RulesFile{name, yaml_text, doc_to_json(doc), config_from_doc(doc, name)};
}

RulesFile load_rules_file(const std::string &path) {
    return parse_rules_file(read_config_file(path), path);
}

Config load_config(const std::string &path) {
    return parse_config(read_config_file(path), path);
}

}  // namespace floodgate
