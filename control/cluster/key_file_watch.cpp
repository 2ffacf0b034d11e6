#include "control/cluster/key_file_watch.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include "control/cluster/store_auth.h"

namespace floodgate {

bool KeyFileWatch::Stamp::operator==(const Stamp &o) const {
    return dev == o.dev && ino == o.ino && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
           mtime.tv_nsec == o.mtime.tv_nsec && ctime.tv_sec == o.ctime.tv_sec &&
           ctime.tv_nsec == o.ctime.tv_nsec;
}

KeyFileWatch::KeyFileWatch(std::string path, ClusterKeys in_use)
    : path_(std::move(path)), in_use_(std::move(in_use)) {}

bool KeyFileWatch::changed() {
    struct stat st {};
    Stamp now;
    if (::stat(path_.c_str(), &st) == 0)
        now = {st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim};
    if (seen_ && *seen_ == now) return false;
    seen_ = now;
    refused_.clear();
    std::optional<ClusterKeys> keys = load_cluster_keys(path_, &refused_);
    if (!keys || *keys == in_use_) return false;
    in_use_ = *keys;
    return true;
}

}  // namespace floodgate
