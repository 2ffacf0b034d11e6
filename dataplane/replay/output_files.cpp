#include "dataplane/replay/output_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <utility>

namespace floodgate {

namespace {

struct Seen {
    const NamedFile *name;
    struct stat st;
};

// The file already seen that st is, or nullptr (character devices are never "the same file").
const NamedFile *same_as(const std::vector<Seen> &seen, const struct stat &st) {
    if (S_ISCHR(st.st_mode)) return nullptr;
    for (const Seen &s : seen)
        if (!S_ISCHR(s.st.st_mode) && s.st.st_dev == st.st_dev && s.st.st_ino == st.st_ino)
            return s.name;
    return nullptr;
}

std::string same_file_message(const NamedFile &a, const NamedFile &b) {
    std::string m = a.option;
    m += " '";
    m += a.path;
    m += "' is the same file as ";
    m += b.option;
    m += " '";
    m += b.path;
    m += "'";
    return m;
}

std::string errno_message(const NamedFile &f) {
    std::string m = f.option;
    m += " ";
    m += f.path;
    m += ": ";
    m += std::strerror(errno);
    return m;
}

}  // namespace

OpenedOutputs open_distinct_outputs(const NamedFile &input, int input_fd,
                                    const std::vector<NamedFile> &outputs) {
    OpenedOutputs result;
    std::vector<Seen> seen(1, Seen{&input, {}});
    std::vector<int> fds;
    std::vector<std::string> created;  // by this call, removed again on an error
    const auto refuse = [&](std::string error, bool same_file) {
        for (int fd : fds) ::close(fd);
        for (auto it = created.rbegin(); it != created.rend(); ++it) ::unlink(it->c_str());
        result.error = std::move(error);
        result.same_file = same_file;
        return std::move(result);
    };
    if (::fstat(input_fd, &seen[0].st) != 0) return refuse(errno_message(input), false);

    for (const NamedFile &out : outputs) {
        struct stat st;
        // An existing file that is one already seen is refused before it is opened for
        // writing at all, so that a read-only input is reported as the same file rather than
        // as a permission error.
        if (::stat(out.path.c_str(), &st) == 0)
            if (const NamedFile *other = same_as(seen, st))
                return refuse(same_file_message(out, *other), true);
        // Not O_TRUNC: emptied only once every output is checked. O_EXCL first, to know
        // whether this call created the file; it fails on any existing name, a dangling
        // symlink included, which the second open then follows.
        int fd = ::open(out.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0)
            created.push_back(out.path);
        else if (errno == EEXIST)
            fd = ::open(out.path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
        if (fd < 0) return refuse(errno_message(out), false);
        fds.push_back(fd);
        // What was opened decides: the name may have led elsewhere since the stat above (a
        // created file, an output not existing before the previous one was created).
        if (::fstat(fd, &st) != 0) return refuse(errno_message(out), false);
        if (const NamedFile *other = same_as(seen, st))
            return refuse(same_file_message(out, *other), true);
        seen.push_back(Seen{&out, st});
    }

    // Every output is a file of its own: empty them and hand them over. (A failure from here
    // on is an I/O error on files already known to be distinct outputs.)
    for (size_t i = 0; i < fds.size(); ++i) {
        // Only regular files have contents to empty; ftruncate fails on devices and FIFOs.
        if (S_ISREG(seen[i + 1].st.st_mode) && ::ftruncate(fds[i], 0) != 0)
            return refuse(errno_message(outputs[i]), false);
    }
    for (size_t i = 0; i < fds.size(); ++i) {
        std::FILE *f = ::fdopen(fds[i], "wb");
        if (f == nullptr) {
            std::string error = errno_message(outputs[i]);
            result.files.clear();  // closes fds[0, i), so refuse closes only the rest
            fds.erase(fds.begin(), fds.begin() + static_cast<std::ptrdiff_t>(i));
            return refuse(std::move(error), false);
        }
        result.files.emplace_back(f);
    }
    return result;
}

}  // namespace floodgate
