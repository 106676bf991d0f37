// Unit tests of the Ethernet-over-VELO frame protocol (sw/eth/velo_eth_proto.h), under ASan and
// UBSan: addresses, transmit classification, and every reason a received frame is dropped.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

extern "C" {
#include "velo_eth_proto.h"
}

namespace {
constexpr unsigned kVb = 8, kInst = 1, kMtu = 1500, kNodes = 8;

std::vector<uint8_t> frame(unsigned dst_node, unsigned src_node, size_t payload, bool group = false) {
    std::vector<uint8_t> f(VELO_ETH_HLEN + payload, 0xAB);
    if (group)
        std::memset(f.data(), 0xFF, 6);
    else
        velo_eth_mac(f.data(), dst_node, kInst);
    velo_eth_mac(f.data() + 6, src_node, kInst);
    f[12] = 0x08;
    f[13] = 0x00;
    return f;
}

// the message a sender makes of frame f (header + frame)
std::vector<uint8_t> wire(const std::vector<uint8_t>& f, unsigned flags = 0) {
    std::vector<uint8_t> m(VELO_ETH_HDR_BYTES + f.size());
    std::memcpy(m.data() + VELO_ETH_HDR_BYTES, f.data(), f.size());
    unsigned node = 0;
    velo_eth_drop d;
    EXPECT_NE(velo_eth_tx(f.data(), f.size(), kInst, kMtu, kNodes, flags, m.data(), &node, &d), VELO_ETH_TO_NONE);
    return m;
}

int rx(const std::vector<uint8_t>& m, unsigned src_node, unsigned src_vpid, unsigned self, velo_eth_drop* d,
       unsigned* flags = nullptr) {
    size_t off = 0;
    unsigned fl = 0;
    const int r = velo_eth_rx(m.data(), m.size(), src_node, src_vpid, self, kInst, kMtu, kVb, &off, &fl, d);
    if (r == 0) {
        EXPECT_EQ(off, static_cast<size_t>(VELO_ETH_HDR_BYTES));
    }
    if (flags) *flags = fl;
    return r;
}
const unsigned kVpid = VELO_ETH_VPID(kVb, kInst);
}  // namespace

TEST(EthProto, MacCarriesNodeAndInstance) {
    uint8_t mac[6];
    velo_eth_mac(mac, 37, 2);
    EXPECT_EQ(mac[0] & 3, 2) << "locally administered, unicast";
    EXPECT_EQ(velo_eth_mac_node(mac, 2), 37);
    EXPECT_EQ(velo_eth_mac_node(mac, 1), -1) << "another instance's MAC";
    mac[1] ^= 1;
    EXPECT_EQ(velo_eth_mac_node(mac, 2), -1) << "another prefix";
    EXPECT_EQ(VELO_ETH_VPID(8, 0), 127u);
    EXPECT_EQ(VELO_ETH_VPID(6, 3), 28u);
}

TEST(EthProto, TxClassifies) {
    uint8_t hdr[VELO_ETH_HDR_BYTES];
    unsigned node = 99;
    velo_eth_drop d;
    auto u = frame(5, 2, 100);
    EXPECT_EQ(velo_eth_tx(u.data(), u.size(), kInst, kMtu, kNodes, VELO_ETH_F_CSUM_OK, hdr, &node, &d),
              VELO_ETH_TO_NODE);
    EXPECT_EQ(node, 5u);
    EXPECT_EQ(hdr[0], VELO_ETH_MAGIC);
    EXPECT_EQ(hdr[1], VELO_ETH_VERSION);
    EXPECT_EQ(hdr[2], VELO_ETH_F_CSUM_OK);
    EXPECT_EQ(hdr[3], 0);
    auto b = frame(0, 2, 28, true);
    EXPECT_EQ(velo_eth_tx(b.data(), b.size(), kInst, kMtu, kNodes, 0, hdr, &node, &d), VELO_ETH_TO_ALL);
    b[0] = 0x33;  // IPv6 multicast 33:33:..
    EXPECT_EQ(velo_eth_tx(b.data(), b.size(), kInst, kMtu, kNodes, 0, hdr, &node, &d), VELO_ETH_TO_ALL);
    auto far = frame(kNodes, 2, 10);  // beyond the network's nodes
    EXPECT_EQ(velo_eth_tx(far.data(), far.size(), kInst, kMtu, kNodes, 0, hdr, &node, &d), VELO_ETH_TO_NONE);
    EXPECT_EQ(d, VELO_ETH_DROP_NO_ROUTE);
    auto foreign = frame(3, 2, 10);
    foreign[2] = 0x99;  // not our prefix
    EXPECT_EQ(velo_eth_tx(foreign.data(), foreign.size(), kInst, kMtu, kNodes, 0, hdr, &node, &d), VELO_ETH_TO_NONE);
    EXPECT_EQ(d, VELO_ETH_DROP_NO_ROUTE);
    auto big = frame(3, 2, kMtu + VELO_ETH_VLAN_HLEN + 1);
    EXPECT_EQ(velo_eth_tx(big.data(), big.size(), kInst, kMtu, kNodes, 0, hdr, &node, &d), VELO_ETH_TO_NONE);
    EXPECT_EQ(d, VELO_ETH_DROP_LONG);
    auto tagged = frame(3, 2, kMtu + VELO_ETH_VLAN_HLEN);  // a full-MTU frame with a VLAN tag fits
    EXPECT_EQ(velo_eth_tx(tagged.data(), tagged.size(), kInst, kMtu, kNodes, 0, hdr, &node, &d), VELO_ETH_TO_NODE);
    EXPECT_EQ(velo_eth_tx(u.data(), VELO_ETH_HLEN - 1, kInst, kMtu, kNodes, 0, hdr, &node, &d), VELO_ETH_TO_NONE);
}

TEST(EthProto, RxAcceptsWhatTheSenderMade) {
    velo_eth_drop d;
    unsigned flags = 0;
    EXPECT_EQ(rx(wire(frame(4, 6, 1400), VELO_ETH_F_CSUM_OK), 6, kVpid, 4, &d, &flags), 0);
    EXPECT_EQ(flags, static_cast<unsigned>(VELO_ETH_F_CSUM_OK));
    EXPECT_EQ(rx(wire(frame(0, 6, 28, true)), 6, kVpid, 4, &d), 0) << "broadcast";
    EXPECT_EQ(rx(wire(frame(4, 6, 0)), 6, kVpid, 4, &d), 0) << "a bare Ethernet header";
}

TEST(EthProto, RxDropsEveryBadFrame) {
    velo_eth_drop d;
    auto good = wire(frame(4, 6, 100));
    // too short
    std::vector<uint8_t> m(good.begin(), good.begin() + VELO_ETH_HDR_BYTES + VELO_ETH_HLEN - 1);
    EXPECT_EQ(rx(m, 6, kVpid, 4, &d), -1);
    EXPECT_EQ(d, VELO_ETH_DROP_SHORT);
    // header: magic, version, unknown flag, reserved byte
    for (int i = 0; i < 4; ++i) {
        auto b = good;
        b[i] ^= i == 2 ? 0x80 : 0x01;
        EXPECT_EQ(rx(b, 6, kVpid, 4, &d), -1) << "header byte " << i;
        EXPECT_EQ(d, VELO_ETH_DROP_BAD_HDR);
    }
    // longer than the MTU allows
    auto big = good;
    big.resize(VELO_ETH_HDR_BYTES + velo_eth_max_frame(kMtu) + 1, 0);
    EXPECT_EQ(rx(big, 6, kVpid, 4, &d), -1);
    EXPECT_EQ(d, VELO_ETH_DROP_LONG);
    // source MAC of another node than the NIC says, or from another vpid of the right node
    EXPECT_EQ(rx(good, 5, kVpid, 4, &d), -1);
    EXPECT_EQ(d, VELO_ETH_DROP_SPOOFED);
    EXPECT_EQ(rx(good, 6, kVpid - 1, 4, &d), -1);
    EXPECT_EQ(d, VELO_ETH_DROP_SPOOFED);
    auto grp = wire(frame(4, 6, 100));
    grp[VELO_ETH_HDR_BYTES + 6] |= 1;  // a group address as source
    EXPECT_EQ(rx(grp, 6, kVpid, 4, &d), -1);
    EXPECT_EQ(d, VELO_ETH_DROP_SPOOFED);
    // unicast to another node's MAC
    EXPECT_EQ(rx(good, 6, kVpid, 3, &d), -1);
    EXPECT_EQ(d, VELO_ETH_DROP_NOT_FOR_US);
    for (unsigned i = 0; i < VELO_ETH_DROP_NUM; ++i) EXPECT_NE(velo_eth_drop_names[i], nullptr);
}
