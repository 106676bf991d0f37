#include "harness.hpp"

#include <chrono>
#include <functional>

namespace velo::sim {

uint64_t test_seed() {
    static uint64_t seed = [] {
        const char* s = std::getenv("SEED");
        uint64_t v = s ? std::strtoull(s, nullptr, 0)
                       : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
        std::printf("[ seed  ] SEED=%llu (set SEED=%llu to replay)\n", static_cast<unsigned long long>(v),
                    static_cast<unsigned long long>(v));
        return v;
    }();
    return seed;
}

std::string test_name() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string n = info ? std::string(info->test_suite_name()) + "." + info->name() : "velo";
    for (auto& c : n)
        if (c == '/') c = '_';
    return n;
}

std::mt19937_64 test_rng(uint64_t seed, const std::string& name) {
    uint64_t h = std::hash<std::string>{}(name);
    return std::mt19937_64(seed ^ (h * 0x9E3779B97F4A7C15ull));
}

std::mt19937_64 test_rng() {
    return test_rng(test_seed(), test_name());
}

}  // namespace velo::sim
