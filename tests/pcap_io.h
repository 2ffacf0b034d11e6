// Classic libpcap files (not pcapng), written and read by hand so that tests need no libpcap:
// a 24-byte global header, then a 16-byte header before each record. Linktype 1 (Ethernet).
// Magic 0xa1b2c3d4 means microsecond timestamps, 0xa1b23c4d nanosecond ones; the reader takes
// either, in either byte order. Both sides stream, so a trace of millions of frames is never
// held in memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace floodgate::test {

enum class PcapPrecision : uint8_t { micro, nano };

inline constexpr uint32_t kPcapMagicMicro = 0xa1b2c3d4;
inline constexpr uint32_t kPcapMagicNano = 0xa1b23c4d;
inline constexpr uint32_t kLinktypeEthernet = 1;

struct PcapRecord {
    uint64_t ts_ns = 0;
    std::vector<uint8_t> bytes;  // the captured bytes (incl_len of them)
};

// Writes in the host's byte order. Errors throw std::runtime_error naming the file.
class PcapWriter {
  public:
    PcapWriter(const std::string &path, PcapPrecision precision, uint32_t snaplen = 65535);
    ~PcapWriter();  // closes quietly; call close() to see a late write error
    PcapWriter(const PcapWriter &) = delete;
    PcapWriter &operator=(const PcapWriter &) = delete;

    // A microsecond file keeps ts_ns / 1000: sub-microsecond digits are dropped.
    // Frames longer than snaplen are cut, with their original length in the record header.
    void write(uint64_t ts_ns, const uint8_t *data, size_t len);
    void write(uint64_t ts_ns, const std::vector<uint8_t> &bytes) {
        write(ts_ns, bytes.data(), bytes.size());
    }
    void close();
    uint64_t records_written() const { return records_; }

  private:
    std::string path_;
    std::FILE *file_ = nullptr;
    PcapPrecision precision_;
    uint32_t snaplen_;
    uint64_t records_ = 0;
};

class PcapReader {
  public:
    explicit PcapReader(const std::string &path);  // reads and checks the global header
    ~PcapReader();
    PcapReader(const PcapReader &) = delete;
    PcapReader &operator=(const PcapReader &) = delete;

    PcapPrecision precision() const { return precision_; }
    bool byte_swapped() const { return swapped_; }  // written on a host of the other order
    uint32_t linktype() const { return linktype_; }
    uint32_t snaplen() const { return snaplen_; }

    // The next record into *rec; false at a clean end of file. A cut record throws.
    bool next(PcapRecord *rec);

  private:
    uint32_t u32(const uint8_t *p) const;

    std::string path_;
    std::FILE *file_ = nullptr;
    PcapPrecision precision_ = PcapPrecision::micro;
    bool swapped_ = false;
    uint32_t linktype_ = 0;
    uint32_t snaplen_ = 0;
};

struct PcapFile {
    PcapPrecision precision = PcapPrecision::micro;
    uint32_t linktype = 0;
    std::vector<PcapRecord> records;
};

// Whole file at once, for small traces.
PcapFile read_pcap(const std::string &path);

}  // namespace floodgate::test
