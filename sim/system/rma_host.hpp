// The RMA host side of a simulated cluster (docs/rma.md): what the driver and libvelo do for RMA,
// in the simplest form, on top of a Cluster. Regions are registered by writing the ATU's region
// and page tables through BAR0 (pages scattered in physical memory, consecutive page table
// entries; a 32-bit key and a protection scope, the initiators allowed remote access), notification queues are set up
// per vpid, commands are issued as one 32-byte BAR4 write into the vpid's page, and the queues are read with the
// no-torn-read rule (an entry is there when its PHASE matches the pass; it is read from host memory as the NIC's DMA
// writes made it visible, and its read pointer is returned through the vpid's user page).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cluster.hpp"

namespace velo::sim {

struct NqEntry {
    uint64_t hdr = 0, cookie = 0, w2 = 0, nla = 0;
    unsigned kind() const;
    unsigned err() const;
    bool err_remote() const;
    unsigned slot() const;
    unsigned peer_node() const;
    unsigned peer_vpid() const;
    unsigned op() const;
    uint64_t len() const;
};

// RG_SCOPE: the initiators (node, vpid) a region admits for remote access, bounds inclusive (lo >
// hi: nobody); the default admits everybody.
struct RmaScope {
    unsigned vpid_lo = 0, vpid_hi = 255, node_lo = 0, node_hi = 255;
};

class RmaHost {
  public:
    explicit RmaHost(Cluster& c) : c_(c) {}

    enum Perm : unsigned { LR = 1, LW = 2, RR = 4, RW = 8, ALL = 15 };

    using Scope = RmaScope;

    // RMA.CONTROL.ENABLE of a node.
    void enable(unsigned node, bool on = true);

    // Register region `idx` of `node` with the 32-bit `key` (RG_KEY; the NLA carries bits 7:0, a
    // command's RKEY_HI bits 31:8) and `scope`: `len` bytes starting at byte `start` (< 4096) of
    // its first page; its pages get physical frames `frame0`, `frame0 + stride`, ... and page table
    // entries from `pte_first` on. Returns the region's NLA for offset 0.
    uint64_t add_region(unsigned node, unsigned idx, uint32_t key, unsigned owner, unsigned perm, uint64_t len,
                        unsigned start, uint64_t frame0, unsigned stride, unsigned pte_first,
                        const Scope& scope = Scope{});
    // Withdraw the translation (VALID = 0, ALLOC kept unless `dealloc`) and quiesce: returns when
    // RMA.QUIESCE_STATUS.BUSY = 0 (the cycles it took in *cycles).
    void invalidate(unsigned node, unsigned idx, bool dealloc = false, uint64_t* cycles = nullptr);
    // Physical address of byte `off` of a region.
    uint64_t phys(unsigned node, unsigned idx, uint64_t off) const;
    // CPU access to a region's bytes (immediately visible / as visible now).
    void write(unsigned node, unsigned idx, uint64_t off, const std::vector<uint8_t>& b);
    std::vector<uint8_t> read(unsigned node, unsigned idx, uint64_t off, uint64_t n) const;

    // Notification queue of (node, vpid): 2^log2 entries at `base` (64-byte aligned), zeroed.
    void open_nq(unsigned node, unsigned vpid, unsigned log2, uint64_t base);
    // Consume one entry if the next one is visible; returns the read pointer lazily.
    bool poll(unsigned node, unsigned vpid, NqEntry& e);

    // Commands: one 32-byte write into slot `slot` of the vpid's BAR4 page. nla() puts the key's
    // bits 7:0 into the NLA; cmd0() takes the remote region's key bits 31:8 (key_hi(key)) as RKEY_HI.
    static uint64_t nla(uint32_t key, unsigned region, uint64_t off);
    static uint32_t key_hi(uint32_t key) { return key >> 8; }
    static uint64_t cmd0(unsigned op, bool lcpl, bool rcpl, bool notify, unsigned rem_node, uint32_t len,
                         uint32_t rkey_hi = 0);
    void command(unsigned node, unsigned vpid, unsigned slot, uint64_t w0, uint64_t local_nla, uint64_t remote_nla,
                 uint64_t cookie);

    uint32_t counter(unsigned node, unsigned idx) { return c_.reg_read(node, VELO_REG_RMA_CNT_BASE + 4 * idx); }
    std::vector<std::string> errors;

  private:
    struct Region {
        uint64_t len = 0;
        unsigned start = 0;
        std::vector<uint64_t> frames;
        uint32_t cfg = 0;
    };
    struct Queue {
        uint64_t base = 0;
        unsigned log2 = 0;
        uint32_t rp = 0, rp_returned = 0;
    };
    Cluster& c_;
    std::map<std::pair<unsigned, unsigned>, Region> rg_;
    std::map<std::pair<unsigned, unsigned>, Queue> nq_;
};

}  // namespace velo::sim
