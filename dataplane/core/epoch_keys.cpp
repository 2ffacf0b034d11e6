#include "dataplane/core/epoch_keys.h"

#include <cmath>

namespace floodgate {

double EpochKeys::last_keys() const {
    if (exact_) return static_cast<double>(last_exact_.size());
    constexpr double m = kRegisters;
    double sum = 0;
    unsigned zeros = 0;
    for (uint8_t r : last_) {
        sum += std::ldexp(1.0, -r);
        zeros += r == 0;
    }
    const double alpha = 0.7213 / (1 + 1.079 / m);
    const double raw = alpha * m * m / sum;
    // Few keys: linear counting of the empty registers is the better estimate.
    if (raw <= 2.5 * m && zeros > 0) return m * std::log(m / zeros);
    return raw;
}

}  // namespace floodgate
