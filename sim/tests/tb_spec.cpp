// The spec, the generated Verilog include and the generated C header must agree: every named
// value and every field position is read three ways (spec JSON, `define through a Verilated
// probe module, C macro) and compared.
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "Vspec_probe.h"
#include "harness.hpp"
#include "velo_spec_probe.h"

using velo::sim::Harness;

namespace {

// Minimal reader of the spec's numbers: "name": ..., "value"/"lsb"/"width" fields. The spec is
// plain JSON written by people; the values we need are integers or hex strings.
long long num(const std::string& s) {
    return std::stoll(s, nullptr, 0);
}

std::string slurp(const char* path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

}  // namespace

TEST(Spec, ProbeMatchesCHeader) {
    VerilatedContext ctx;
    Vspec_probe probe{&ctx, "probe"};
    ASSERT_GT(kProbeItems.size(), 100u);
    for (const auto& it : kProbeItems) {
        probe.idx = static_cast<uint16_t>(it.idx);
        probe.eval();
        EXPECT_EQ(probe.value, it.c_value) << it.name << " (kind " << it.kind << ")";
    }
    probe.idx = 0xFFFF;
    probe.eval();
    EXPECT_EQ(probe.value, ~0ull) << "probe default";
}

TEST(Spec, CHeaderMatchesSpecJson) {
    std::string spec = slurp(VELO_SPEC_PATH);
    ASSERT_FALSE(spec.empty());
    // every constant of the spec, as written in JSON, against the C macro of the same name
    std::map<std::string, unsigned long long> c;
    for (const auto& it : kProbeItems)
        if (it.kind == 0) c[it.name] = it.c_value;
    size_t pos = 0, checked = 0;
    const std::string key = "{\"name\": \"";
    while ((pos = spec.find(key, pos)) != std::string::npos) {
        pos += key.size();
        std::string name = spec.substr(pos, spec.find('"', pos) - pos);
        size_t end = spec.find('}', pos);
        size_t v = spec.find("\"value\": ", pos);
        if (v == std::string::npos || v > end) continue;
        v += 9;
        std::string val = spec.substr(v, spec.find_first_of(",}", v) - v);
        if (!val.empty() && val[0] == '"') val = val.substr(1, val.size() - 2);
        auto f = c.find(name);
        ASSERT_NE(f, c.end()) << "spec constant " << name << " missing from velo_hw.h";
        EXPECT_EQ(f->second, static_cast<unsigned long long>(num(val))) << name;
        ++checked;
    }
    EXPECT_GE(checked, 20u);
    // the hash the hardware reports is the hash of this very file
    EXPECT_EQ(c.at("SPEC_HASH"), VELO_SPEC_HASH);
}

TEST(Spec, FieldsDoNotOverlap) {
    // fields of one format must not overlap, for every 64-bit format
    std::map<std::string, unsigned long long> used;
    std::map<std::string, unsigned long long> lsb;
    for (const auto& it : kProbeItems) {
        if (it.kind == 1) lsb[it.name] = it.c_value;
    }
    for (const auto& it : kProbeItems) {
        if (it.kind != 2) continue;
        std::string fmt = it.name.substr(0, it.name.find('_', it.name.find('_') + 1));
        if (fmt != "PKT_HDR" && fmt != "MBOX_HDR") continue;
        unsigned long long m = ((it.c_value >= 64) ? ~0ull : ((1ull << it.c_value) - 1)) << lsb[it.name];
        EXPECT_EQ(used[fmt] & m, 0ull) << it.name << " overlaps another field";
        used[fmt] |= m;
    }
    EXPECT_EQ(used["PKT_HDR"], ~0ull);
    EXPECT_EQ(used["MBOX_HDR"], ~0ull);
}
