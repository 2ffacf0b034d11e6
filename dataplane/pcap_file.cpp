#include "dataplane/pcap_file.h"

#include <cerrno>
#include <cstring>

namespace floodgate {

namespace {
constexpr uint32_t kMagicMicro = 0xa1b2c3d4;
constexpr uint32_t kMagicNano = 0xa1b23c4d;
// Larger than any real capture's snap length (262144 in libpcap); a bigger record length
// means a corrupt file, refused rather than allocated.
constexpr uint32_t kMaxRecordBytes = 1u << 20;

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
    FileHeader h;
    if (std::fread(&h, sizeof h, 1, file_) != 1) {
        error_ = path + ": too short for a pcap file header";
        return;
    }
    if (h.magic == kMagicMicro || h.magic == kMagicNano) {
        swapped_ = false;
    } else if (__builtin_bswap32(h.magic) == kMagicMicro ||
               __builtin_bswap32(h.magic) == kMagicNano) {
        swapped_ = true;
    } else {
        error_ = path + ": not a pcap file (pcapng is not supported; convert with editcap -F pcap)";
        return;
    }
    nanosecond_ = fix(h.magic) == kMagicNano;
    snaplen_ = fix(h.snaplen);
    linktype_ = fix(h.linktype);
    if (linktype_ != 1)
        error_ = path + ": link type " + std::to_string(linktype_) + " is not Ethernet (1)";
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
    uint32_t incl_len = fix(h.incl_len);
    if (incl_len > kMaxRecordBytes) {
        error_ = path_ + ": record " + std::to_string(record_) + ": length " +
                 std::to_string(incl_len) + " is not plausible";
        return false;
    }
    r->ts_sec = fix(h.ts_sec);
    r->ts_frac = fix(h.ts_frac);
    r->orig_len = fix(h.orig_len);
    r->ts_ns =
        uint64_t{r->ts_sec} * 1000000000u + uint64_t{r->ts_frac} * (nanosecond_ ? 1u : 1000u);
    r->data.resize(incl_len);
    if (incl_len > 0 && std::fread(r->data.data(), incl_len, 1, file_) != 1) {
        error_ = path_ + ": record " + std::to_string(record_) + ": truncated data";
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
