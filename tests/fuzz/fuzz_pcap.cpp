// PcapReader (dataplane/replay/pcap_file.h) on any file, read from memory through fmemopen, and
// each record it returns through parse_packet, as `floodgate replay` does. Besides not crashing: no
// record is longer than the snap length (which is 1 to kMaxSnaplen), a failure says why, and
// a reader that has stopped stays stopped.
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
    size_t bytes = 24;
    while (reader.next(&r)) {
        ++records;
        bytes += 16 + r.captured_len();
        FUZZ_CHECK(bytes <= size);  // every byte returned was in the file
        FUZZ_CHECK(r.captured_len() <= reader.snaplen());
        FUZZ_CHECK(r.wire_len() >= r.captured_len());
        floodgate::PacketInfo info;
        floodgate::parse_packet(r.data.data(), r.wire_len(), &info, r.captured_len());
    }
    FUZZ_CHECK(records <= (size - 24) / 16);
    const bool failed = !reader.error().empty();
    FUZZ_CHECK(!reader.next(&r));
    FUZZ_CHECK(failed == !reader.error().empty());
    return 0;
}
