#include "dataplane/replay/pcap_file.h"

#include <pcap/pcap.h>

#include <cerrno>
#include <climits>
#include <cstring>

namespace floodgate {

namespace {
constexpr uint32_t kMagicMicro = 0xa1b2c3d4;
constexpr uint32_t kMagicNano = 0xa1b23c4d;
// The patched libpcap's records have 8 more bytes of header (libpcap reads them too).
constexpr uint32_t kMagicKuznetzov = 0xa1b2cd34;
// A pcapng Section Header Block starts with this type, the same in either byte order.
constexpr uint32_t kPcapngBlockType = 0x0a0d0d0a;

// What the writer puts out: a classic file header and record headers.
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

// libpcap reads the file through a stdio stream of ours (fopencookie) that counts what it
// takes from the file and keeps the first four bytes: those tell the file's format and
// precision, which libpcap keeps to itself, and the stream's position (ftello: what was taken
// less what the stream still holds) tells how many bytes a classic record took, so whether
// libpcap cut it to the snap length. The stream only seeks in the sense of telling where it is.
struct PcapReader::Source {
    std::FILE *file;
    uint64_t read = 0;  // bytes libpcap has read so far
    uint8_t magic[4] = {};

    static ssize_t on_read(void *cookie, char *buf, size_t size) {
        Source *s = static_cast<Source *>(cookie);
        const size_t n = std::fread(buf, 1, size, s->file);
        if (n == 0 && std::ferror(s->file)) return -1;  // errno is fread's
        for (size_t i = 0; s->read + i < sizeof s->magic && i < n; ++i)
            s->magic[s->read + i] = static_cast<uint8_t>(buf[i]);
        s->read += n;
        return static_cast<ssize_t>(n);
    }
    static int on_seek(void *cookie, off64_t *offset, int whence) {
        if (*offset != 0 || whence != SEEK_CUR) {
            errno = ESPIPE;
            return -1;
        }
        *offset = static_cast<off64_t>(static_cast<Source *>(cookie)->read);
        return 0;
    }
    static int on_close(void *cookie) {
        Source *s = static_cast<Source *>(cookie);
        const int rc = std::fclose(s->file);
        delete s;
        return rc;
    }
};

PcapReader::PcapReader(const std::string &path) : path_(path) {
    std::FILE *file = std::fopen(path.c_str(), "rb");
    if (file == nullptr) {
        error_ = path + ": " + std::strerror(errno);
        return;
    }
    open(file);
}

PcapReader::PcapReader(std::FILE *file, std::string name) : path_(std::move(name)) {
    if (file == nullptr) {
        error_ = path_ + ": not open";
        return;
    }
    open(file);
}

void PcapReader::open(std::FILE *file) {
    const int fd = fileno(file);
    Source *source = new Source{file};
    std::FILE *stream =
        fopencookie(source, "rb", {Source::on_read, nullptr, Source::on_seek, Source::on_close});
    if (stream == nullptr) {
        error_ = path_ + ": " + std::strerror(errno);
        Source::on_close(source);
        return;
    }
    char errbuf[PCAP_ERRBUF_SIZE] = {};
    pcap_ = pcap_fopen_offline_with_tstamp_precision(stream, PCAP_TSTAMP_PRECISION_NANO, errbuf);
    if (pcap_ == nullptr) {  // libpcap leaves the stream open
        error_ = path_ + ": " + errbuf;
        std::fclose(stream);
        return;
    }
    stream_ = stream;
    fd_ = fd;
    read_before_ = ftello(stream);
    uint32_t magic;
    std::memcpy(&magic, source->magic, sizeof magic);
    pcapng_ = magic == kPcapngBlockType;
    if (!pcapng_ && magic != kMagicMicro && magic != kMagicNano && magic != kMagicKuznetzov)
        magic = __builtin_bswap32(magic);
    // libpcap hands out nanoseconds; a classic file's records are written back in its own unit.
    nanosecond_ = pcapng_ || magic == kMagicNano;
    record_header_ = magic == kMagicKuznetzov ? 24 : 16;
    // As libpcap's pcap_adjust_snapshot() (which leaves 262145 to INT_MAX as they are): a snap
    // length past the maximum is a writer's way of saying "no limit", so records are bounded
    // by the maximum instead, and that is the snap length the outputs are written with.
    const int snapshot = pcap_snapshot(pcap_);
    snaplen_ = snapshot <= 0 || static_cast<uint32_t>(snapshot) > kMaxSnaplen
                   ? kMaxSnaplen
                   : static_cast<uint32_t>(snapshot);
    const int dlt = pcap_datalink(pcap_);
    if (dlt != DLT_EN10MB) {
        const char *name = pcap_datalink_val_to_name(dlt);
        error_ = path_ + ": link type " + (name != nullptr ? name : std::to_string(dlt)) +
                 " is not Ethernet (EN10MB)";
        return;
    }
    linktype_ = 1;  // LINKTYPE_ETHERNET, as the outputs are written
}

PcapReader::~PcapReader() {
    if (pcap_ != nullptr) pcap_close(pcap_);  // closes the stream, and with it the file
}

bool PcapReader::refuse(const std::string &why) {
    error_ = path_ + ": record " + std::to_string(record_) + ": " + why;
    done_ = true;
    return false;
}

bool PcapReader::next(PcapRecord *r) {
    if (!ok() || done_) return false;
    pcap_pkthdr *h = nullptr;
    const u_char *data = nullptr;
    const int rc = pcap_next_ex(pcap_, &h, &data);
    if (rc == PCAP_ERROR_BREAK) {  // the end of the file
        done_ = true;
        return false;
    }
    ++record_;
    if (rc != 1) return refuse(pcap_geterr(pcap_));
    // libpcap cuts a classic record longer than the snap length to it and reads on; we refuse
    // the file instead. Replay promises that frames come out byte for byte as they went in,
    // and such a record is a damaged or hand-made file: cutting it would judge and write a
    // frame that was never captured, where the operator should be told.
    if (!pcapng_) {
        const off_t at = ftello(stream_);
        if (at < 0)
            return refuse(std::string("cannot tell the file position: ") + std::strerror(errno));
        const uint64_t took = static_cast<uint64_t>(at - read_before_);
        read_before_ = at;
        if (took > record_header_ + uint64_t{h->caplen})
            return refuse("captured length " + std::to_string(took - record_header_) +
                          " is longer than the file's snap length " + std::to_string(snaplen_));
    }
    // A pcapng interface's snap length may be past the maximum, and libpcap reads up to it.
    if (h->caplen > snaplen_)
        return refuse("captured length " + std::to_string(h->caplen) +
                      " is longer than the file's snap length " + std::to_string(snaplen_));
    if (pcapng_) {
        // Seconds from the interface's resolution and offset, in 64 bits: the outputs hold 32.
        if (h->ts.tv_sec < 0 || static_cast<uint64_t>(h->ts.tv_sec) > UINT32_MAX)
            return refuse("timestamp " + std::to_string(h->ts.tv_sec) +
                          " s is past what a pcap file holds (2^32 - 1 s)");
        r->ts_sec = static_cast<uint32_t>(h->ts.tv_sec);
        r->ts_frac = static_cast<uint32_t>(h->ts.tv_usec);  // nanoseconds, under 10^9
    } else {
        // The record's own 32-bit fields, as libpcap read them (signed) and scaled them.
        r->ts_sec = static_cast<uint32_t>(h->ts.tv_sec);
        r->ts_frac = static_cast<uint32_t>(nanosecond_ ? h->ts.tv_usec : h->ts.tv_usec / 1000);
    }
    r->orig_len = h->len;
    r->ts_ns =
        uint64_t{r->ts_sec} * 1000000000u + uint64_t{r->ts_frac} * (nanosecond_ ? 1u : 1000u);
    r->data.assign(data, data + h->caplen);
    return true;
}

PcapWriter::PcapWriter(std::FILE *file, const std::string &path, bool nanosecond, uint32_t linktype,
                       uint32_t snaplen)
    : file_(file), path_(path), nanosecond_(nanosecond) {
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

void PcapWriter::write_at(const PcapRecord &r, uint64_t ts_ns) {
    if (!ok()) return;
    const uint64_t frac = ts_ns % 1'000'000'000ull;
    RecordHeader h{static_cast<uint32_t>(ts_ns / 1'000'000'000ull),
                   static_cast<uint32_t>(nanosecond_ ? frac : frac / 1000),
                   static_cast<uint32_t>(r.data.size()), r.orig_len};
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
