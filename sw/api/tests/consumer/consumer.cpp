// A user of the installed libvelo (C++ layer): errors arrive as velo::Error.
#include <cstdio>
#include <velo/velo.hpp>

int main() {
    try {
        velo::Endpoint ep("no-such-device");
    } catch (const velo::Error& e) {
        if (e.code().value() != EINVAL) return 1;
        std::printf("consumer (C++): %s\n", e.what());
        return 0;
    }
    return 1;
}
