// The RMA host side: see rma_host.hpp.
#include "rma_host.hpp"

#include <stdexcept>

namespace velo::sim {

namespace {
std::vector<uint8_t> le64(uint64_t v) {
    std::vector<uint8_t> b(8);
    for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
    return b;
}
}  // namespace

unsigned NqEntry::kind() const {
    return static_cast<unsigned>(VELO_FIELD_GET(VELO_RMA_NQ_HDR_KIND, hdr));
}
unsigned NqEntry::err() const {
    return static_cast<unsigned>(VELO_FIELD_GET(VELO_RMA_NQ_HDR_ERR, hdr));
}
bool NqEntry::err_remote() const {
    return VELO_FIELD_GET(VELO_RMA_NQ_HDR_ERR_REMOTE, hdr) != 0;
}
unsigned NqEntry::slot() const {
    return static_cast<unsigned>(VELO_FIELD_GET(VELO_RMA_NQ_HDR_SLOT, hdr));
}
unsigned NqEntry::peer_node() const {
    return static_cast<unsigned>(VELO_FIELD_GET(VELO_RMA_NQ_HDR_PEER_NODE, hdr));
}
unsigned NqEntry::peer_vpid() const {
    return static_cast<unsigned>(VELO_FIELD_GET(VELO_RMA_NQ_HDR_PEER_VPID, hdr));
}
unsigned NqEntry::op() const {
    return static_cast<unsigned>(VELO_FIELD_GET(VELO_RMA_NQ_HDR_OP, hdr));
}
uint64_t NqEntry::len() const {
    return VELO_FIELD_GET(VELO_RMA_NQ_W2_LEN, w2);
}

void RmaHost::enable(unsigned node, bool on) {
    c_.reg_write(node, VELO_REG_RMA_CONTROL, on ? (1u << VELO_REG_RMA_CONTROL_ENABLE_SHIFT) : 0u);
}

uint64_t RmaHost::add_region(unsigned node, unsigned idx, uint32_t key, unsigned owner, unsigned perm, uint64_t len,
                             unsigned start, uint64_t frame0, unsigned stride, unsigned pte_first, const Scope& scope) {
    if (start >= 4096) throw std::invalid_argument("rma: region start must be inside its first page");
    Region r;
    r.len = len;
    r.start = start;
    const uint64_t pages = (start + len + 4095) / 4096;
    for (uint64_t p = 0; p < pages; ++p) r.frames.push_back(frame0 + p * stride);
    const uint32_t rb = VELO_TBL_RMA_REGION_BASE + idx * VELO_TBL_RMA_REGION_STRIDE;
    c_.reg_write(node, rb + VELO_TBL_RMA_REGION_RG_CFG, 0);
    for (uint64_t p = 0; p < pages; ++p) {
        const uint32_t pa = VELO_TBL_RMA_PTE_BASE + static_cast<uint32_t>(pte_first + p) * VELO_TBL_RMA_PTE_STRIDE;
        c_.reg_write(node, pa + VELO_TBL_RMA_PTE_PTE_LO, static_cast<uint32_t>(r.frames[p]));
        c_.reg_write(node, pa + VELO_TBL_RMA_PTE_PTE_HI, static_cast<uint32_t>(r.frames[p] >> 32));
    }
    c_.reg_write(node, rb + VELO_TBL_RMA_REGION_RG_PTE,
                 static_cast<uint32_t>(VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_PTE_FIRST, pte_first)));
    c_.reg_write(node, rb + VELO_TBL_RMA_REGION_RG_START, start);
    c_.reg_write(node, rb + VELO_TBL_RMA_REGION_RG_LEN_LO, static_cast<uint32_t>(len));
    c_.reg_write(node, rb + VELO_TBL_RMA_REGION_RG_LEN_HI, static_cast<uint32_t>(len >> 32));
    // key and scope while the region is not ALLOC (RG_CFG = 0 above), RG_CFG last
    c_.reg_write(node, rb + VELO_TBL_RMA_REGION_RG_KEY, key);
    c_.reg_write(node, rb + VELO_TBL_RMA_REGION_RG_SCOPE,
                 static_cast<uint32_t>(VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_SCOPE_VPID_LO, scope.vpid_lo) |
                                       VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_SCOPE_VPID_HI, scope.vpid_hi) |
                                       VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_SCOPE_NODE_LO, scope.node_lo) |
                                       VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_SCOPE_NODE_HI, scope.node_hi)));
    r.cfg = static_cast<uint32_t>(VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_ALLOC, 1) |
                                  VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_VALID, 1) |
                                  VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_PERM_LR, (perm & LR) ? 1 : 0) |
                                  VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_PERM_LW, (perm & LW) ? 1 : 0) |
                                  VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_PERM_RR, (perm & RR) ? 1 : 0) |
                                  VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_PERM_RW, (perm & RW) ? 1 : 0) |
                                  VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_OWNER_VPID, owner));
    c_.reg_write(node, rb + VELO_TBL_RMA_REGION_RG_CFG, r.cfg);
    (void)c_.reg_read(node, rb + VELO_TBL_RMA_REGION_RG_CFG);  // flush, as the driver does
    rg_[{node, idx}] = r;
    return nla(key, idx, 0);
}

void RmaHost::invalidate(unsigned node, unsigned idx, bool dealloc, uint64_t* cycles) {
    Region& r = rg_.at({node, idx});
    r.cfg &= ~static_cast<uint32_t>(VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_VALID, 1));
    if (dealloc) r.cfg &= ~static_cast<uint32_t>(VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_ALLOC, 1));
    const uint64_t t0 = c_.cycle();
    c_.reg_write(node, VELO_TBL_RMA_REGION_BASE + idx * VELO_TBL_RMA_REGION_STRIDE + VELO_TBL_RMA_REGION_RG_CFG, r.cfg);
    c_.reg_write(node, VELO_REG_RMA_QUIESCE_REGION, idx);
    for (int i = 0; i < 100000; ++i)
        if (!(c_.reg_read(node, VELO_REG_RMA_QUIESCE_STATUS) & (1u << VELO_REG_RMA_QUIESCE_STATUS_BUSY_SHIFT))) {
            if (cycles) *cycles = c_.cycle() - t0;
            return;
        }
    throw std::runtime_error("rma: region never quiesced");
}

uint64_t RmaHost::phys(unsigned node, unsigned idx, uint64_t off) const {
    const Region& r = rg_.at({node, idx});
    const uint64_t a = r.start + off;
    return r.frames.at(a >> 12) * 4096 + (a & 4095);
}

void RmaHost::write(unsigned node, unsigned idx, uint64_t off, const std::vector<uint8_t>& b) {
    HostMem& m = c_.mem(node);
    for (size_t i = 0; i < b.size(); ++i) m.write(phys(node, idx, off + i), &b[i], 1);
}

std::vector<uint8_t> RmaHost::read(unsigned node, unsigned idx, uint64_t off, uint64_t n) const {
    const HostMem& m = c_.mem(node);
    std::vector<uint8_t> b(n);
    for (uint64_t i = 0; i < n; ++i) b[i] = m.read8(phys(node, idx, off + i));
    return b;
}

void RmaHost::open_nq(unsigned node, unsigned vpid, unsigned log2, uint64_t base) {
    const uint32_t t = VELO_TBL_RMA_NQ_TABLE_BASE + vpid * VELO_TBL_RMA_NQ_TABLE_STRIDE;
    c_.reg_write(node, t + VELO_TBL_RMA_NQ_TABLE_NQ_CFG, 0);
    c_.mem(node).fill(base, 32ull << log2, 0);
    c_.reg_write(node, t + VELO_TBL_RMA_NQ_TABLE_NQ_BASE_LO, static_cast<uint32_t>(base));
    c_.reg_write(node, t + VELO_TBL_RMA_NQ_TABLE_NQ_BASE_HI, static_cast<uint32_t>(base >> 32));
    c_.reg_write(node, t + VELO_TBL_RMA_NQ_TABLE_NQ_WP, 0);
    c_.reg_write(node, VELO_TBL_VPID_USER_BASE + vpid * VELO_TBL_VPID_USER_STRIDE + VELO_TBL_VPID_USER_NQ_RP, 0);
    c_.reg_write(node, t + VELO_TBL_RMA_NQ_TABLE_NQ_CFG,
                 static_cast<uint32_t>(VELO_FIELD_PREP(VELO_TBL_RMA_NQ_TABLE_NQ_CFG_ENABLE, 1) |
                                       VELO_FIELD_PREP(VELO_TBL_RMA_NQ_TABLE_NQ_CFG_LOG2_ENTRIES, log2)));
    nq_[{node, vpid}] = Queue{base, log2, 0, 0};
}

bool RmaHost::poll(unsigned node, unsigned vpid, NqEntry& e) {
    Queue& q = nq_.at({node, vpid});
    const uint32_t size = 1u << q.log2;
    const uint64_t a = q.base + 32ull * (q.rp & (size - 1));
    const HostMem& m = c_.mem(node);
    const uint64_t hdr = m.read64(a);
    const unsigned want = ((q.rp >> q.log2) & 1) ^ 1;
    if (VELO_FIELD_GET(VELO_RMA_NQ_HDR_PHASE, hdr) != want) {
        // return consumed entries once idle
        if (q.rp != q.rp_returned) {
            c_.reg_write(node, VELO_TBL_VPID_USER_BASE + vpid * VELO_TBL_VPID_USER_STRIDE + VELO_TBL_VPID_USER_NQ_RP,
                         q.rp & ((1u << VELO_RMA_NQ_PTR_BITS) - 1));
            q.rp_returned = q.rp;
        }
        return false;
    }
    // the whole entry was one write inside one 64-byte line: it is all there with PHASE
    e.hdr = hdr;
    e.cookie = m.read64(a + VELO_RMA_NQ_OFF_COOKIE);
    e.w2 = m.read64(a + VELO_RMA_NQ_OFF_LEN);
    e.nla = m.read64(a + VELO_RMA_NQ_OFF_NLA);
    if (e.kind() < VELO_RMA_NQ_KIND_LOCAL_CPL || e.kind() > VELO_RMA_NQ_KIND_TARGET)
        errors.push_back("rma: node " + std::to_string(node) + " vpid " + std::to_string(vpid) + ": entry with kind " +
                         std::to_string(e.kind()) + " (torn or corrupt)");
    ++q.rp;
    if (q.rp - q.rp_returned >= std::max(1u, size / 4)) {
        c_.reg_write(node, VELO_TBL_VPID_USER_BASE + vpid * VELO_TBL_VPID_USER_STRIDE + VELO_TBL_VPID_USER_NQ_RP,
                     q.rp & ((1u << VELO_RMA_NQ_PTR_BITS) - 1));
        q.rp_returned = q.rp;
    }
    return true;
}

uint64_t RmaHost::nla(uint32_t key, unsigned region, uint64_t off) {
    return VELO_FIELD_PREP(VELO_RMA_NLA_KEY, key & 0xFFu) | VELO_FIELD_PREP(VELO_RMA_NLA_REGION, region) |
           VELO_FIELD_PREP(VELO_RMA_NLA_OFFSET, off);
}

uint64_t RmaHost::cmd0(unsigned op, bool lcpl, bool rcpl, bool notify, unsigned rem_node, uint32_t len,
                       uint32_t rkey_hi) {
    return VELO_FIELD_PREP(VELO_RMA_CMD0_OP, op) | VELO_FIELD_PREP(VELO_RMA_CMD0_LCPL, lcpl ? 1 : 0) |
           VELO_FIELD_PREP(VELO_RMA_CMD0_RCPL, rcpl ? 1 : 0) | VELO_FIELD_PREP(VELO_RMA_CMD0_NOTIFY, notify ? 1 : 0) |
           VELO_FIELD_PREP(VELO_RMA_CMD0_REM_NODE, rem_node) | VELO_FIELD_PREP(VELO_RMA_CMD0_LEN, len) |
           VELO_FIELD_PREP(VELO_RMA_CMD0_RKEY_HI, rkey_hi);
}

void RmaHost::command(unsigned node, unsigned vpid, unsigned slot, uint64_t w0, uint64_t local_nla, uint64_t remote_nla,
                      uint64_t cookie) {
    std::vector<uint8_t> b;
    for (uint64_t w : {w0, local_nla, remote_nla, cookie}) {
        auto x = le64(w);
        b.insert(b.end(), x.begin(), x.end());
    }
    const uint64_t a = System::kBar4 + 4096ull * vpid + VELO_RMA_CMD_BYTES * (slot % VELO_RMA_SLOTS);
    c_.send_tlp(node, Tlp::mwr(a, b, VELO_BAR_RMA));
}

}  // namespace velo::sim
