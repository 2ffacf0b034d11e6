// PcapReader (dataplane/replay/pcap_file.h: libpcap's pcap and pcapng readers under replay's own
// bounds) on any file, read from memory through fmemopen, and each record it returns through
// parse_packet, as `floodgate replay` does. Besides not crashing: no record is longer than the
// snap length (which is 1 to kMaxSnaplen) or holds more bytes than the file, a failure says
// why, and a reader that has stopped stays stopped.
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "dataplane/core/parse.h"
#include "dataplane/replay/pcap_file.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;  // fmemopen refuses an empty buffer
    // "rb" never writes, so the const_cast is only for fmemopen's signature.
    std::FILE *f = fmemopen(const_cast<uint8_t *>(data), size, "rb");
    if (f == nullptr) return 0;
    floodgate::PcapReader reader(f, "fuzz.pcap");
    if (!reader.ok()) {
        FUZZ_CHECK(!reader.error().empty());
        return 0;
    }
    FUZZ_CHECK(reader.snaplen() >= 1 && reader.snaplen() <= floodgate::kMaxSnaplen);
    FUZZ_CHECK(reader.linktype() == 1);
    floodgate::PcapRecord r;
    size_t records = 0;
    // A classic file's header is 24 bytes and its record headers 16 or more; a pcapng file's
    // section and interface blocks take 48 and a packet block 16 or more (a Simple Packet Block).
    size_t bytes = 24;
    while (reader.next(&r)) {
        ++records;
        bytes += 16 + r.captured_len();
        FUZZ_CHECK(bytes <= size);  // every byte returned was in the file
        FUZZ_CHECK(r.captured_len() <= reader.snaplen());
        FUZZ_CHECK(r.wire_len() >= r.captured_len());
        if (reader.pcapng()) FUZZ_CHECK(r.ts_frac < 1000000000u);  // libpcap's nanoseconds
        floodgate::PacketInfo info;
        floodgate::parse_packet(r.data.data(), r.wire_len(), &info, r.captured_len());
    }
    FUZZ_CHECK(records <= (size - 24) / 16);
    const bool failed = !reader.error().empty();
    FUZZ_CHECK(!reader.next(&r));
    FUZZ_CHECK(failed == !reader.error().empty());
    return 0;
}
