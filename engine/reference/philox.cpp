// Philox4x32-10, exactly as Random123 (Salmon, Moraes, Dror, Shaw, "Parallel random
// numbers: as easy as 1, 2, 3", SC'11; Random123 philox.h). Checked against
// Random123's kat_vectors in tests/twin/test_philox.cpp. shaders/include/philox.glsl is the
// same function in GLSL.
#include "reference/reference.hpp"

namespace sieve::ref {

namespace {

constexpr uint32_t kPhiloxM0 = 0xD2511F53u; // round multipliers (PHILOX_M4x32_0/1)
constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u; // Weyl key increments (PHILOX_W32_0/1)
constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;

inline void mulhilo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
    const uint64_t product = static_cast<uint64_t>(a) * static_cast<uint64_t>(b);
    *hi = static_cast<uint32_t>(product >> 32);
    *lo = static_cast<uint32_t>(product);
}

} // namespace

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
    // Random123: round 1 uses the key as given; the key is bumped by the Weyl
    // constants before each of rounds 2..10. Bumping after every round (the last
    // bump unused) is the same thing.
    for (int round = 0; round < 10; ++round) {
        uint32_t hi0, lo0, hi1, lo1;
        mulhilo(kPhiloxM0, ctr[0], &hi0, &lo0);
        mulhilo(kPhiloxM1, ctr[2], &hi1, &lo1);
        ctr = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
        key[0] += kPhiloxW0;
        key[1] += kPhiloxW1;
    }
    return ctr;
}

uint32_t uniform_u32(uint32_t seed, uint32_t step, uint32_t draw) {
    return philox4x32_10({step, draw, 0u, 0u}, {seed, kPhiloxKeyHi})[0];
}

uint32_t xtc_coin_u32(uint32_t seed, uint32_t step, uint32_t draw) {
    return philox4x32_10({step, draw, 0u, 0u}, {seed, kPhiloxKeyHi})[1];
}

} // namespace sieve::ref
