#include "tests/pcap_io.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace floodgate::test {

namespace {

constexpr uint64_t kNsPerSec = 1'000'000'000;
constexpr size_t kIoBufferBytes = 1 << 20;
// No sane capture has records this large; a bigger length means a corrupt file, and refusing it
// keeps a bad length from turning into a huge allocation.
constexpr uint32_t kMaxRecordBytes = 1 << 20;

uint32_t bswap32(uint32_t v) {
    return __builtin_bswap32(v);
}

[[noreturn]] void fail(const std::string &path, const std::string &what) {
    throw std::runtime_error(path + ": " + what);
}

void put32(uint8_t *p, uint32_t v) {
    std::memcpy(p, &v, 4);
}  // host order
void put16(uint8_t *p, uint16_t v) {
    std::memcpy(p, &v, 2);
}

}  // namespace

PcapWriter::PcapWriter(const std::string &path, PcapPrecision precision, uint32_t snaplen)
    : path_(path), precision_(precision), snaplen_(snaplen) {
    file_ = std::fopen(path.c_str(), "wb");
    if (file_ == nullptr) fail(path, std::string("cannot create: ") + std::strerror(errno));
    std::setvbuf(file_, nullptr, _IOFBF, kIoBufferBytes);
    uint8_t h[24];
    put32(h, precision == PcapPrecision::nano ? kPcapMagicNano : kPcapMagicMicro);
    put16(h + 4, 2);  // version 2.4
    put16(h + 6, 4);
    put32(h + 8, 0);   // thiszone
    put32(h + 12, 0);  // sigfigs
    put32(h + 16, snaplen);
    put32(h + 20, kLinktypeEthernet);
    if (std::fwrite(h, sizeof h, 1, file_) != 1) fail(path_, "write error");
}

PcapWriter::~PcapWriter() {
    if (file_ != nullptr) std::fclose(file_);
}

void PcapWriter::write(uint64_t ts_ns, const uint8_t *data, size_t len) {
    if (file_ == nullptr) fail(path_, "write after close");
    const uint32_t incl = static_cast<uint32_t>(len < snaplen_ ? len : snaplen_);
    const uint64_t frac_ns = ts_ns % kNsPerSec;
    uint8_t h[16];
    put32(h, static_cast<uint32_t>(ts_ns / kNsPerSec));
    put32(h + 4,
          static_cast<uint32_t>(precision_ == PcapPrecision::nano ? frac_ns : frac_ns / 1000));
    put32(h + 8, incl);
    put32(h + 12, static_cast<uint32_t>(len));
    if (std::fwrite(h, sizeof h, 1, file_) != 1 ||
        (incl > 0 && std::fwrite(data, incl, 1, file_) != 1))
        fail(path_, "write error");
    ++records_;
}

void PcapWriter::close() {
    if (file_ == nullptr) return;
    const bool ok = std::fflush(file_) == 0 && std::ferror(file_) == 0;
    const bool closed = std::fclose(file_) == 0;
    file_ = nullptr;
    if (!ok || !closed) fail(path_, "write error");
}

PcapReader::PcapReader(const std::string &path) : path_(path) {
    file_ = std::fopen(path.c_str(), "rb");
    if (file_ == nullptr) fail(path, std::string("cannot open: ") + std::strerror(errno));
    std::setvbuf(file_, nullptr, _IOFBF, kIoBufferBytes);
    uint8_t h[24];
    if (std::fread(h, sizeof h, 1, file_) != 1) {
        std::fclose(file_);
        fail(path, "shorter than a pcap header");
    }
    uint32_t magic;
    std::memcpy(&magic, h, 4);
    for (const bool swap : {false, true}) {
        const uint32_t m = swap ? bswap32(magic) : magic;
        if (m == kPcapMagicMicro || m == kPcapMagicNano) {
            swapped_ = swap;
            precision_ = m == kPcapMagicNano ? PcapPrecision::nano : PcapPrecision::micro;
            snaplen_ = u32(h + 16);
            linktype_ = u32(h + 20);
            return;
        }
    }
    std::fclose(file_);
    fail(path, "not a classic pcap file (bad magic)");
}

PcapReader::~PcapReader() {
    if (file_ != nullptr) std::fclose(file_);
}

uint32_t PcapReader::u32(const uint8_t *p) const {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return swapped_ ? bswap32(v) : v;
}

bool PcapReader::next(PcapRecord *rec) {
    uint8_t h[16];
    const size_t got = std::fread(h, 1, sizeof h, file_);
    if (got == 0 && std::feof(file_)) return false;
    if (got != sizeof h) fail(path_, "record header cut short");
    const uint32_t incl = u32(h + 8);
    if (incl > kMaxRecordBytes) fail(path_, "record of " + std::to_string(incl) + " bytes");
    const uint64_t frac = u32(h + 4);
    rec->ts_ns = u32(h) * kNsPerSec + (precision_ == PcapPrecision::nano ? frac : frac * 1000);
    rec->bytes.resize(incl);
    if (incl > 0 && std::fread(rec->bytes.data(), incl, 1, file_) != 1)
        fail(path_, "record data cut short");
    return true;
}

PcapFile read_pcap(const std::string &path) {
    PcapReader reader(path);
    PcapFile out;
    out.precision = reader.precision();
    out.linktype = reader.linktype();
    PcapRecord rec;
    while (reader.next(&rec)) out.records.push_back(std::move(rec));
    return out;
}

}  // namespace floodgate::test
