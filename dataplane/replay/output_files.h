// Replay's output files, opened so that none of them is the input or another output.
//
// Two outputs that are one file interleave into a corrupt capture, and an output that is the
// input empties it before it is read. Names cannot tell (a symlink, a hard link, "./x" and "x"
// all name one file), so files are compared by what they are: device and inode, from stat()
// before opening and fstat() of what was opened. Nothing is truncated until every output has
// been checked, so a refused command line leaves every existing file as it was, and removes
// again any file it created.
//
// Character devices are the exception: /dev/null (or a terminal) may be named by several
// outputs, because what is written to them is not a file that another writer could corrupt,
// and discarding two outputs to /dev/null is a normal thing to ask.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace floodgate {

struct NamedFile {
    std::string option;  // how the command line named it, for messages: "--pass"
    std::string path;
};

struct FileCloser {
    void operator()(std::FILE *f) const { std::fclose(f); }
};
using OwnedFile = std::unique_ptr<std::FILE, FileCloser>;

struct OpenedOutputs {
    std::vector<OwnedFile> files;  // one per output, in order, empty and ready for writing
    std::string error;             // empty when every output was opened
    bool same_file = false;        // the error is two names of one file: a usage error
};

// Opens outputs in order, each checked against the input (input_fd, opened for reading) and
// every output before it, then empties them. A refusal (same_file) or an output that cannot
// be opened truncates nothing and removes the files this call created.
OpenedOutputs open_distinct_outputs(const NamedFile &input, int input_fd,
                                    const std::vector<NamedFile> &outputs);

}  // namespace floodgate
