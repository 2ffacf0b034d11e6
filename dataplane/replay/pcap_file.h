// Classic libpcap files (microsecond or nanosecond timestamps, either byte order), read and
// written record by record for `floodgate replay`. Output records keep the input's timestamps
// and lengths, so passed frames come out byte for byte as they went in.
//
// The reader takes files as libpcap's sf-pcap.c does, where that is sensible: a snap length of
// 0 or above kMaxSnaplen stands for kMaxSnaplen, and a record may hold at most the file's snap
// length, so no record costs more than 256 KiB whatever its header says.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace floodgate {

struct PcapRecord {
    uint64_t ts_ns = 0;
    uint32_t ts_sec = 0;   // as stored, for writing back unchanged
    uint32_t ts_frac = 0;  // microseconds or nanoseconds, per the file's precision
    uint32_t orig_len = 0;
    std::vector<uint8_t> data;  // the captured bytes (incl_len of them)

    uint32_t captured_len() const { return static_cast<uint32_t>(data.size()); }
    // The frame's length on the wire: a capture cut by its snap length keeps it in orig_len.
    uint32_t wire_len() const { return orig_len > captured_len() ? orig_len : captured_len(); }
};

// libpcap's MAXIMUM_SNAPLEN, the largest snap length it reads Ethernet captures with.
inline constexpr uint32_t kMaxSnaplen = 262144;

class PcapReader {
  public:
    // Opens and checks the file header; on failure ok() is false and error() says why.
    explicit PcapReader(const std::string &path);
    // The same from a stream already open for reading (fmemopen's, in the fuzzer), which the
    // reader owns from here on and closes; name stands for the path in messages.
    PcapReader(std::FILE *file, std::string name);
    ~PcapReader();
    PcapReader(const PcapReader &) = delete;
    PcapReader &operator=(const PcapReader &) = delete;
    bool ok() const { return file_ != nullptr && error_.empty(); }
    const std::string &error() const { return error_; }
    bool nanosecond() const { return nanosecond_; }
    uint32_t linktype() const { return linktype_; }
    // The file's snap length, 0 and anything above kMaxSnaplen read as kMaxSnaplen.
    uint32_t snaplen() const { return snaplen_; }
    // The open file's descriptor, to tell whether another name is the same file (fstat).
    int fd() const { return file_ != nullptr ? fileno(file_) : -1; }
    // Reads the next record into *r. False at the end of the file or on error (see error()).
    bool next(PcapRecord *r);

  private:
    void read_header();
    uint32_t fix(uint32_t v) const { return swapped_ ? __builtin_bswap32(v) : v; }
    std::FILE *file_ = nullptr;
    std::string path_;
    std::string error_;
    bool swapped_ = false;
    bool nanosecond_ = false;
    uint32_t linktype_ = 1;
    uint32_t snaplen_ = 65535;
    uint64_t record_ = 0;
};

class PcapWriter {
  public:
    // Writes to file, already opened for writing and empty (replay opens its outputs together,
    // dataplane/replay/output_files.h), which it then owns; path names it in messages.
    PcapWriter(std::FILE *file, const std::string &path, bool nanosecond, uint32_t linktype,
               uint32_t snaplen);
    ~PcapWriter();
    bool ok() const { return file_ != nullptr && error_.empty(); }
    const std::string &error() const { return error_; }
    void write(const PcapRecord &r);
    // Flushes and closes; false (with error()) if anything failed to reach the file.
    bool close();

  private:
    std::FILE *file_ = nullptr;
    std::string path_;
    std::string error_;
};

}  // namespace floodgate
