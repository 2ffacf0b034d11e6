#include "dataplane/replay/pcap_file.h"

#include <cerrno>
#include <cstring>

namespace floodgate {

namespace {
constexpr uint32_t kMagicMicro = 0xa1b2c3d4;
constexpr uint32_t kMagicNano = 0xa1b23c4d;
// A pcapng Section Header Block starts with this type, the same in either byte order.
constexpr uint32_t kPcapngBlockType = 0x0a0d0d0a;

struct FileHeader {
    uint32_t magic;
    uint16_t version_major;
    uint16_t version_minor;
    int32_t thiszone;
    uint32_t sigfigs;
    uint32_t snaplen;
    uint32_t linktype;
};
struct RecordHeader {
    uint32_t ts_sec;
    uint32_t ts_frac;
    uint32_t incl_len;
    uint32_t orig_len;
};
static_assert(sizeof(FileHeader) == 24 && sizeof(RecordHeader) == 16);
}  // namespace

PcapReader::PcapReader(const std::string &path) : path_(path) {
    file_ = std::fopen(path.c_str(), "rb");
    if (file_ == nullptr) {
        error_ = path + ": " + std::strerror(errno);
        return;
    }
    read_header();
}

PcapReader::PcapReader(std::FILE *file, std::string name) : file_(file), path_(std::move(name)) {
    if (file_ == nullptr) {
        error_ = path_ + ": not open";
        return;
    }
    read_header();
}

void PcapReader::read_header() {
    FileHeader h;
    const size_t got = std::fread(&h, 1, sizeof h, file_);
    if (got >= sizeof h.magic && h.magic == kPcapngBlockType) {
        error_ = path_ + ": a pcapng file; floodgate reads classic pcap: convert it with " +
                 "editcap -F pcap " + path_ + " OUT.pcap";
        return;
    }
    if (got != sizeof h) {
        error_ = path_ + ": too short for a pcap file header (" + std::to_string(got) + " of " +
                 std::to_string(sizeof h) + " bytes)";
        return;
    }
    if (h.magic == kMagicMicro || h.magic == kMagicNano) {
        swapped_ = false;
    } else if (__builtin_bswap32(h.magic) == kMagicMicro ||
               __builtin_bswap32(h.magic) == kMagicNano) {
        swapped_ = true;
    } else {
        error_ = path_ + ": not a pcap file (no pcap magic number)";
        return;
    }
    nanosecond_ = fix(h.magic) == kMagicNano;
    // As libpcap's pcap_adjust_snapshot(): a snap length of 0 or past the maximum is a writer's
    // way of saying "no limit", so records are bounded by the maximum instead, and that is the
    // snap length the outputs are written with.
    snaplen_ = fix(h.snaplen);
    if (snaplen_ == 0 || snaplen_ > kMaxSnaplen) snaplen_ = kMaxSnaplen;
    linktype_ = fix(h.linktype);
    if (linktype_ != 1)
        error_ = path_ + ": link type " + std::to_string(linktype_) + " is not Ethernet (1)";
}

PcapReader::~PcapReader() {
    if (file_ != nullptr) std::fclose(file_);
}

bool PcapReader::next(PcapRecord *r) {
    if (!ok()) return false;
    RecordHeader h;
    size_t got = std::fread(&h, 1, sizeof h, file_);
    if (got == 0) {
        if (std::ferror(file_)) error_ = path_ + ": read error: " + std::strerror(errno);
        return false;  // end of file
    }
    ++record_;
    if (got != sizeof h) {
        error_ = path_ + ": record " + std::to_string(record_) + ": truncated header";
        return false;
    }
    const uint32_t incl_len = fix(h.incl_len);
    // libpcap cuts such a record to the snap length and reads on; we refuse the file instead.
    // Replay promises that frames come out byte for byte as they went in, and a record longer
    // than its file's snap length is a damaged or hand-made file: cutting it would judge and
    // write a frame that was never captured, where the operator should be told.
    if (incl_len > snaplen_) {
        error_ = path_ + ": record " + std::to_string(record_) + ": captured length " +
                 std::to_string(incl_len) + " is longer than the file's snap length " +
                 std::to_string(snaplen_);
        return false;
    }
    r->ts_sec = fix(h.ts_sec);
    r->ts_frac = fix(h.ts_frac);
    r->orig_len = fix(h.orig_len);
    r->ts_ns =
        uint64_t{r->ts_sec} * 1000000000u + uint64_t{r->ts_frac} * (nanosecond_ ? 1u : 1000u);
    r->data.resize(incl_len);
    const size_t read = incl_len > 0 ? std::fread(r->data.data(), 1, incl_len, file_) : 0;
    if (read != incl_len) {
        error_ = path_ + ": record " + std::to_string(record_) + ": truncated data (" +
                 std::to_string(read) + " of " + std::to_string(incl_len) + " bytes)";
        return false;
    }
    return true;
}

PcapWriter::PcapWriter(std::FILE *file, const std::string &path, bool nanosecond, uint32_t linktype,
                       uint32_t snaplen)
    : file_(file), path_(path) {
    FileHeader h{nanosecond ? kMagicNano : kMagicMicro, 2, 4, 0, 0, snaplen, linktype};
    if (std::fwrite(&h, sizeof h, 1, file_) != 1) error_ = path + ": write failed";
}

PcapWriter::~PcapWriter() {
    close();
}

void PcapWriter::write(const PcapRecord &r) {
    if (!ok()) return;
    RecordHeader h{r.ts_sec, r.ts_frac, static_cast<uint32_t>(r.data.size()), r.orig_len};
    if (std::fwrite(&h, sizeof h, 1, file_) != 1 ||
        (!r.data.empty() && std::fwrite(r.data.data(), r.data.size(), 1, file_) != 1))
        error_ = path_ + ": " + std::strerror(errno);
}

bool PcapWriter::close() {
    if (file_ == nullptr) return error_.empty();
    if (std::fclose(file_) != 0 && error_.empty()) error_ = path_ + ": " + std::strerror(errno);
    file_ = nullptr;
    return error_.empty();
}

}  // namespace floodgate
