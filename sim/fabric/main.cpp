// velo-fabric: the simulated VELO cluster daemon (see fabric.hpp, docs/simulator.md).
#include <cstdio>
#include <cstring>
#include <string>

#include "fabric.hpp"

int main(int argc, char** argv) {
    velo::fabric::Options o;
    std::string err;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
            std::fputs(velo::fabric::usage(), stdout);
            return 0;
        }
    }
    if (!velo::fabric::parse_options(argc - 1, argv + 1, o, err)) {
        std::fprintf(stderr, "velo-fabric: %s\n%s", err.c_str(), velo::fabric::usage());
        return 2;
    }
    return velo::fabric::run(o);
}
