#include "dataplane/api/malformed.h"

namespace floodgate {

const char *malformed_reason_name(MalformedReason r) {
    static constexpr const char *kNames[] = {
#define FG_X(name) #name,
        FG_MALFORMED_REASONS(FG_X)
#undef FG_X
    };
    auto i = static_cast<unsigned>(r);
    return i < static_cast<unsigned>(MalformedReason::count) ? kNames[i] : "unknown";
}

}  // namespace floodgate
