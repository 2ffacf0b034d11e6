// Captures read with libpcap for `floodgate replay`: classic pcap (microsecond or nanosecond
// timestamps, either byte order) and pcapng, record by record. Output records are classic pcap
// written here, with the input's timestamps and lengths, so passed frames come out byte for
// byte as they went in.
//
// libpcap bounds what a file can make it allocate: a classic record is at most 256 KiB (a
// longer one is an error before anything is allocated for it), a pcapng block at most 16 MiB
// (allocated as its header claims, then read). On top of that the reader keeps its own
// promises: the snap length it reports is 1 to kMaxSnaplen (libpcap reads 0 and anything above
// INT_MAX as kMaxSnaplen, the reader 262145 to INT_MAX as well), and no record it returns is
// longer than that. A classic record longer than its file's snap length, which libpcap cuts to
// the snap length and reads on from, is refused: cutting it would judge and write a frame that
// was never captured.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

struct pcap;  // libpcap's pcap_t, used in pcap_file.cpp only

namespace floodgate {

struct PcapRecord {
    uint64_t ts_ns = 0;
    uint32_t ts_sec = 0;   // as a classic file stores it, for writing back unchanged
    uint32_t ts_frac = 0;  // microseconds or nanoseconds, per PcapReader::nanosecond()
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
    // Opens the file and reads its header (a pcapng file's up to its first interface); on
    // failure ok() is false and error() says why.
    explicit PcapReader(const std::string &path);
    // The same from a stream already open for reading (fmemopen's, in the fuzzer), which the
    // reader owns from here on and closes; name stands for the path in messages.
    PcapReader(std::FILE *file, std::string name);
    ~PcapReader();
    PcapReader(const PcapReader &) = delete;
    PcapReader &operator=(const PcapReader &) = delete;
    bool ok() const { return pcap_ != nullptr && error_.empty(); }
    const std::string &error() const { return error_; }
    // Whether records carry nanoseconds in ts_frac (else microseconds): a classic file's own
    // precision, and always for pcapng, whose timestamps libpcap gives in nanoseconds.
    bool nanosecond() const { return nanosecond_; }
    bool pcapng() const { return pcapng_; }
    uint32_t linktype() const { return linktype_; }
    // The file's snap length, 0 and anything above kMaxSnaplen read as kMaxSnaplen.
    uint32_t snaplen() const { return snaplen_; }
    // The open file's descriptor, to tell whether another name is the same file (fstat); -1
    // for a stream without one.
    int fd() const { return pcap_ != nullptr ? fd_ : -1; }
    // Reads the next record into *r. False at the end of the file or on error (see error()),
    // and from then on.
    bool next(PcapRecord *r);

    struct Source;  // the file under libpcap's stream, with what has been read of it (.cpp)

  private:
    void open(std::FILE *file);
    bool refuse(const std::string &why);
    ::pcap *pcap_ = nullptr;
    std::FILE *stream_ = nullptr;  // libpcap's, over the source
    int fd_ = -1;
    std::string path_;
    std::string error_;
    bool nanosecond_ = false;
    bool pcapng_ = false;
    bool done_ = false;
    uint32_t linktype_ = 1;
    uint32_t snaplen_ = 65535;
    uint32_t record_header_ = 16;  // a classic record header's size in this file
    uint64_t record_ = 0;
    int64_t read_before_ = 0;  // bytes of the file read before the current record
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
    // The same frame stamped ts_ns (a shaped frame's release time), in the file's unit.
    void write_at(const PcapRecord &r, uint64_t ts_ns);
    // Flushes and closes; false (with error()) if anything failed to reach the file.
    bool close();

  private:
    std::FILE *file_ = nullptr;
    std::string path_;
    std::string error_;
    bool nanosecond_ = false;
};

}  // namespace floodgate
