// What the fuzz harnesses share: an invariant check that stops the run with the broken
// condition named, so that libFuzzer keeps the input that broke it (assert() would vanish
// under NDEBUG; this does not).
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            std::fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond); \
            std::abort();                                                                     \
        }                                                                                     \
    } while (0)
