// The cluster key file, read again when it changes, so that a key is rotated on a running box by
// rewriting its file (docs/cluster.md, "Several boxes": the four steps), without restarting the
// daemon. Checked once a sync round: a stat, and a read only when the file's identity, size or
// times moved. A file that changed to something refused (malformed, readable by others, gone)
// leaves the keys in use as they were, and says why until it is mended.
#pragma once

#include <sys/stat.h>

#include <optional>
#include <string>

#include "control/cluster/entry_signing.h"

namespace floodgate {

class KeyFileWatch {
  public:
    KeyFileWatch(std::string path, ClusterKeys in_use);
    // Whether the file changed and holds other keys, which are in_use() from now on.
    bool changed();
    const ClusterKeys &in_use() const { return in_use_; }
    // Why the file as it was last read is not in use ("" when it is).
    const std::string &refused() const { return refused_; }

  private:
    struct Stamp {
        dev_t dev = 0;
        ino_t ino = 0;
        off_t size = 0;
        timespec mtime{}, ctime{};
        bool operator==(const Stamp &o) const;
    };
    std::string path_;
    ClusterKeys in_use_;
    std::optional<Stamp> seen_;  // none until the first look: that one reads the file
    std::string refused_;
};

}  // namespace floodgate
