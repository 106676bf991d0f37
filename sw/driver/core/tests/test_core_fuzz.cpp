// Fuzz-style test of the driver core's ioctl level. Several clients (root and users, with and
// without job keys) throw random and randomly broken arguments at velo_core_ioctl, the mmap
// check, the ring check, reclaim and close, under every access policy. A reference model written
// from the rules in docs/driver.md predicts each result: the test asserts the core returns
// exactly that (so it never accepts an invalid argument, nor refuses a valid one), that its
// state equals the model's after every call (endpoints, owners, grants, jobs, the NIC's mailbox
// table), and that at the end no DMA or core memory is left. SEED=<n> repeats a run.
// RMA: notification queue setup, REGISTER/DEREGISTER/REPIN with what the OS glue does after
// them (map random frames, or fail to pin), MMU-notifier invalidations, on a small ATU (32
// regions, 64 page table entries) so that regions run out, indices and keys are reused and the
// page table fragments; the model predicts every result (a map succeeds exactly when enough
// entries are free in all), the NIC's region and page tables are compared after every step, the
// fake ATU's monitor must see no change under a region in use, and every pin is released once.
// Keys and scopes: the model derives every region key from the definition (velo_core.h "Keys":
// four Feistel rounds of the index's registration counter over the fake PRF, 0 skipped) and
// every REGISTER scope's box from the policy's rules (docs/driver.md), including refusals
// (EINVAL, EACCES) and the boxes of jobs and of the runs of vpids no job owns; RG_KEY and
// RG_SCOPE..RG_SCOPE3 are compared after every step. Scope lists (LIST): the generator builds
// them from hidden target boxes that never merge with each other, each cut into overlapping
// strips along one axis (and duplicates), shuffled: the model then knows the merged result (the
// targets, sorted; E2BIG beyond 4). A list the random corruption changed is checked by what the
// rules guarantee: the boxes out admit exactly the cells the boxes in admit (every node x vpid),
// at most 4, sorted, no two mergeable; E2BIG only where the model's own merging leaves more. Root clients drop their
// privilege now and then (a process that was root): the endpoint loses it at its next ioctl, and the RMA command page
// and REGISTER then follow the policy.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <random>
#include <vector>

#include "fake_nic.hpp"
#include "velo/velo_uapi.h"

namespace {

constexpr unsigned kHalf = 128, kNodeBits = 7;  // 7: nodes 128..255 are beyond the NIC's bits
constexpr unsigned kRgBits = 5, kPteBits = 5, kNrg = 1u << kRgBits, kNpte = 1u << kPteBits;
constexpr int64_t kAnyVpid = 1000;  // model: "some free vpid of the partition"
// model: a LIST the corruption changed: E2BIG or kListFree - this (the result without E2BIG)
constexpr int kListFree = 2000;
const uint64_t kKeys[] = {0x1111, 0x2222, 0x3333, 0xDEADBEEFCAFEull};

uint64_t seed() {
    const char* s = std::getenv("SEED");
    uint64_t v = s ? std::strtoull(s, nullptr, 0) : 20240611u;
    std::printf("SEED=%" PRIu64 "\n", v);
    return v;
}

// ---------------------------------------------------------------- the reference model
struct Model {
    struct Job {
        uint64_t key;
        uint32_t uid;
        unsigned vlo, vhi, nlo, nhi;
        int nep;
    };
    struct Grant {
        bool used = false;
        unsigned from = 0, node = 0, vpid = 0;
    };
    struct Ep {
        uint64_t owner;
        uint64_t key;
        int job;  // index into jobs, -1: none
        bool priv;
        bool opened_priv;  // priv at open (priv is lost for good at an unprivileged caller's ioctl)
        unsigned log2, ctl_log2, max_grants;
        std::vector<Grant> g;
        unsigned nq_log2 = 0;  // 0: no notification queue
        unsigned nregions = 0;
    };
    struct Region {
        uint64_t owner;
        unsigned vpid;
        uint32_t key;
        std::array<uint32_t, 4> scope;  // RG_SCOPE..RG_SCOPE3
        unsigned access;
        uint64_t addr, len;
        bool valid = false;
        std::vector<uint64_t> pfns;
        fake::Pin* pin = nullptr;
    };
    std::map<unsigned, Region> rg;  // by index
    uint64_t gen[kNrg] = {};        // registration counter per index
    uint64_t prf_key = 0;
    // key(r, n), velo_core.h "Keys"
    uint32_t key_of(unsigned r, uint32_t n) const {
        uint32_t hi = n >> 16, lo = n & 0xFFFF;
        for (uint32_t k = 0; k < 4; ++k) {
            const uint32_t t = hi ^ static_cast<uint32_t>(fake::Nic::mix(prf_key, r, uint64_t(k) << 16 | lo) & 0xFFFF);
            hi = lo;
            lo = t;
        }
        return hi << 16 | lo;
    }
    uint32_t next_key(unsigned r) {
        uint32_t k = 0;
        while (!k) k = key_of(r, static_cast<uint32_t>(gen[r]++));
        return k;
    }
    unsigned next_rg = 0, pte_used = 0;
    static uint64_t pages(uint64_t addr, uint64_t len) { return (((addr & 4095) + len - 1) >> 12) + 1; }
    unsigned policy = VELO_POLICY_JOB, max_log2 = 16, max_grants = 1024;
    std::vector<Job> jobs;
    std::map<unsigned, Ep> eps;  // by data vpid
    unsigned node_id = 0;

    int job_find(uint64_t key) const {
        for (size_t i = 0; i < jobs.size(); ++i)
            if (key && jobs[i].key == key) return static_cast<int>(i);
        return -1;
    }
    int job_of(unsigned data_vpid) const {
        for (size_t i = 0; i < jobs.size(); ++i)
            if (data_vpid >= jobs[i].vlo && data_vpid <= jobs[i].vhi) return static_cast<int>(i);
        return -1;
    }
    bool allowed_vpid(bool priv, int job, unsigned v) const {
        return policy == VELO_POLICY_OPEN || priv || job_of(v) == job;
    }
};

struct Client {
    velo_core_client cl;
    uint32_t uid;
    bool priv;
};

enum class Ep { kNone, kDead, kLive };

class Fuzz {
  public:
    explicit Fuzz(uint64_t s, unsigned policy) : rng(s) {
        nic.rg_bits = kRgBits;
        nic.pte_bits = kPteBits;
        nic.node_bits = kNodeBits;
        nic.prf_key = rng();
        m.prf_key = nic.prf_key;
        EXPECT_EQ(fake::probe(&nic, &c), 0);
        EXPECT_EQ(velo_core_set_policy(c, policy), 0);
        m.policy = policy;
        m.max_log2 = 6 + static_cast<unsigned>(rng() % 6);  // small rings: many endpoints are cheap
        m.max_grants = 1 + static_cast<unsigned>(rng() % 6);
        EXPECT_EQ(velo_core_set_limits(c, m.max_log2, m.max_grants), 0);
        const struct {
            uint32_t uid;
            bool priv;
        } who[] = {{0, true},     {1000, false}, {1000, false}, {1001, false},
                   {1002, false}, {1000, false}, {0, true},     {1001, false}};
        for (auto& w : who) clients.push_back(fresh(w.uid, w.priv));
    }
    ~Fuzz() { finish(); }
    // close every client (the files), then remove the device
    void finish() {
        if (!c) return;
        for (auto& k : clients) EXPECT_EQ(velo_core_client_close(c, &k.cl), 0);
        EXPECT_EQ(velo_core_ep_count(c), 0u) << "an endpoint without a client";
        velo_core_remove(c);
        c = nullptr;
    }

    fake::Nic nic;
    velo_core* c = nullptr;
    Model m;
    std::vector<Client> clients;
    std::mt19937_64 rng;
    uint64_t owners = 1;
    std::map<int, unsigned> accepted;  // per ioctl nr
    std::deque<fake::Pin> pins;
    unsigned maps_ok = 0, maps_nospc = 0, invalidations = 0, compactions = 0, drops = 0;
    std::map<unsigned, unsigned> scopes;  // accepted REGISTERs per scope kind
    unsigned lists_multi = 0, lists_e2big = 0,
             lists_free = 0;  // LIST: >1 box, E2BIG, judged by properties
    // the LIST the generator made last: the boxes it wrote and the targets they merge into
    struct GenList {
        bool on = false;
        std::vector<std::array<uint8_t, 4>> pieces;  // node_lo, node_hi, vpid_lo, vpid_hi
        std::vector<std::array<unsigned, 4>> targets;
    } genl;

    Client fresh(uint32_t uid, bool priv) {
        Client k;
        const uint64_t owner = owners++;
        velo_core_client_init(&k.cl, owner, 100 + static_cast<uint32_t>(owner), uid, priv ? 1 : 0);
        k.uid = uid;
        k.priv = priv;
        return k;
    }
    unsigned pick(unsigned n) { return static_cast<unsigned>(rng() % n); }
    bool chance(unsigned percent) { return pick(100) < percent; }
    uint32_t u32(std::initializer_list<uint32_t> good) {
        static const uint32_t edge[] = {0,   1,   2,   63,     64,     127,         128,
                                        129, 255, 256, 0x3FFF, 0x4000, 0x80000000u, 0xFFFFFFFFu};
        const unsigned r = pick(100);
        if (r < 70 && good.size()) return *(good.begin() + pick(static_cast<unsigned>(good.size())));
        if (r < 88) return edge[pick(sizeof edge / sizeof edge[0])];
        return static_cast<uint32_t>(rng());
    }
    uint64_t key() {
        const unsigned r = pick(20);
        if (r < 3) return 0;
        if (r < 19) return kKeys[pick(4)];
        return rng();
    }

    Ep ep_state(const Client& k, const Model::Ep** e = nullptr) const {
        if (k.cl.vpid < 0) return Ep::kNone;
        auto it = m.eps.find(static_cast<unsigned>(k.cl.vpid));
        if (it == m.eps.end() || it->second.owner != k.cl.owner) return Ep::kDead;
        if (e) *e = &it->second;
        return Ep::kLive;
    }
    static int ep_err(Ep s) { return s == Ep::kNone ? -VELO_CORE_EBADFD : -VELO_CORE_ENODEV; }

    // ------------------------------------------------------------ argument generators
    // a vpid of job j's range, or any
    unsigned in_job(int j) const {
        return j >= 0 ? m.jobs[j].vlo + static_cast<unsigned>(rng_copy() % (m.jobs[j].vhi - m.jobs[j].vlo + 1))
                      : static_cast<unsigned>(rng_copy() % 64);
    }
    uint64_t rng_copy() const { return const_cast<Fuzz*>(this)->rng(); }

    // A plausible argument (what a correct caller would pass), then with some probability a
    // few of its words replaced by edge values or noise, all of it noise, or a wrong argsz.
    void gen(const Client& k, unsigned nr, void* arg, uint32_t size) {
        std::memset(arg, 0, size);
        const Model::Ep* e = nullptr;
        const Ep st = ep_state(k, &e);
        const int job = st == Ep::kLive ? e->job : -1;
        switch (nr) {
            case VELO_IOC_NR_EP_OPEN: {
                auto* a = static_cast<velo_uapi_ep_open*>(arg);
                a->job_key = key();
                const unsigned r = pick(10);
                a->vpid = r < 5   ? -1
                          : r < 8 ? static_cast<int32_t>(in_job(m.job_find(a->job_key)))
                                  : static_cast<int32_t>(pick(kHalf));
                a->log2_lines = chance(20) ? 0 : 6 + pick(m.max_log2 - 5);
                a->ctl_log2_lines = chance(20) ? 0 : 6 + pick(m.max_log2 - 5);
                break;
            }
            case VELO_IOC_NR_GRANT: {
                auto* a = static_cast<velo_uapi_grant*>(arg);
                a->from = pick(2);
                if (job >= 0 && chance(80)) {
                    a->dst_node = m.jobs[job].nlo + pick(m.jobs[job].nhi - m.jobs[job].nlo + 1);
                    a->dst_vpid = in_job(job);
                } else {
                    a->dst_node = pick(256);
                    a->dst_vpid = pick(kHalf);
                }
                if (a->from && chance(50)) a->dst_vpid |= kHalf;
                break;
            }
            case VELO_IOC_NR_REVOKE: {
                auto* a = static_cast<velo_uapi_revoke*>(arg);
                a->grant_id = pick(8);
                if (st == Ep::kLive)
                    for (unsigned g = 0; g < e->g.size(); ++g)
                        if (e->g[g].used && chance(60)) a->grant_id = g;
                break;
            }
            case VELO_IOC_NR_WAIT: {
                auto* a = static_cast<velo_uapi_wait*>(arg);
                a->flags = 1 + pick(3);
                a->rp = pick(300);
                a->ctl_rp = pick(300);
                a->timeout_ns = rng();
                a->out_ready = static_cast<uint32_t>(rng());
                break;
            }
            case VELO_IOC_NR_JOB_SET: {
                auto* a = static_cast<velo_uapi_job*>(arg);
                a->job_key = kKeys[pick(4)];
                if (chance(30)) {
                    a->flags = VELO_JOB_F_UID;
                    a->uid = 1000 + pick(2);
                }
                a->vpid_lo = pick(kHalf);
                // now and then over the destination of an existing grant (refused: EBUSY)
                std::vector<unsigned> dst;
                for (const auto& [v, ep] : m.eps)
                    for (const auto& g : ep.g)
                        if (g.used) dst.push_back(g.vpid & ~kHalf);
                if (!dst.empty() && chance(30)) a->vpid_lo = dst[pick(static_cast<unsigned>(dst.size()))] - pick(2);
                a->vpid_lo = std::min(a->vpid_lo, kHalf - 1);
                a->vpid_hi = std::min(kHalf - 1, a->vpid_lo + pick(12));
                a->node_lo = pick(8);
                a->node_hi = a->node_lo + pick(248);
                break;
            }
            case VELO_IOC_NR_JOB_DEL:
                static_cast<velo_uapi_job_del*>(arg)->job_key = kKeys[pick(4)];
                break;
            case VELO_IOC_NR_NODE_SET:
                static_cast<velo_uapi_node*>(arg)->node_id = pick(256);
                break;
            case VELO_IOC_NR_ROUTE_SET: {
                auto* a = static_cast<velo_uapi_route*>(arg);
                a->dst_node = pick(256);
                if (chance(50)) {
                    a->flags = VELO_ROUTE_F_VALID;
                    a->route = pick(1u << VELO_ROUTE_BITS);
                }
                break;
            }
            case VELO_IOC_NR_PORT_SET: {
                auto* a = static_cast<velo_uapi_port*>(arg);
                a->port = 1 + pick(nic.nports);
                a->cfg = pick(8);
                break;
            }
            case VELO_IOC_NR_RMA_SETUP:
                static_cast<velo_uapi_rma_setup*>(arg)->log2_entries = chance(30) ? 0 : 5 + pick(14);
                break;
            case VELO_IOC_NR_REGISTER: {
                auto* a = static_cast<velo_uapi_register*>(arg);
                a->flags = 1 + pick(15);
                a->addr = chance(80) ? (rng() & 0x7fffffffffffull) : rng();
                a->len = chance(85) ? 1 + rng() % (14 * 4096) : chance(50) ? (rng() & ((1ull << 41) - 1)) : rng();
                // a scope: mostly what a correct caller asks (inside its job), sometimes beyond
                const unsigned sk = pick(24);
                a->scope = sk < 6    ? VELO_SCOPE_JOB
                           : sk < 9  ? VELO_SCOPE_OWNER
                           : sk < 14 ? VELO_SCOPE_PEER
                           : sk < 19 ? VELO_SCOPE_BOX
                           : sk < 23 ? VELO_SCOPE_LIST
                                     : 5 + pick(8);
                // inside the caller's JOB box (what the policy lets it ask) or anywhere
                const Box jb = st == Ep::kLive ? job_box(*e, static_cast<unsigned>(k.cl.vpid)) : Box{0, 255, 0, 135};
                const bool inside = chance(75);
                const unsigned nlo = inside ? jb.nlo : 0, nhi = inside ? jb.nhi : 255;
                const unsigned vlo = inside ? jb.vlo : 0, vhi = inside ? jb.vhi : 135;
                if (a->scope == VELO_SCOPE_PEER || a->scope == VELO_SCOPE_BOX) {
                    a->node_lo = static_cast<uint8_t>(nlo + pick(nhi - nlo + 1));
                    a->vpid_lo = static_cast<uint8_t>(vlo + pick(vhi - vlo + 1));
                }
                if (a->scope == VELO_SCOPE_BOX) {
                    a->node_hi = static_cast<uint8_t>(chance(90) ? a->node_lo + pick(nhi - a->node_lo + 1) : pick(256));
                    a->vpid_hi = static_cast<uint8_t>(chance(90) ? a->vpid_lo + pick(vhi - a->vpid_lo + 1) : pick(256));
                }
                if (a->scope == VELO_SCOPE_LIST) gen_list(a, nlo, nhi, vlo, vhi);
                if (chance(3)) a->node_hi = static_cast<uint8_t>(1 + pick(255));  // a field the kind does not take
                if (chance(2)) a->nboxes = 1 + pick(2);                           // boxes for the other kinds
                break;
            }
            case VELO_IOC_NR_DEREGISTER:
            case VELO_IOC_NR_REPIN: {
                uint64_t nla = rng();
                std::vector<uint64_t> mine;
                for (const auto& [r, g] : m.rg)
                    if (st == Ep::kLive && g.owner == k.cl.owner) mine.push_back(handle(r, g.key));
                if (chance(85) && !m.rg.empty()) {
                    auto it = m.rg.begin();
                    std::advance(it, pick(static_cast<unsigned>(m.rg.size())));
                    nla = handle(it->first, it->second.key);
                    if (!mine.empty() && chance(70)) nla = mine[pick(static_cast<unsigned>(mine.size()))];
                    if (chance(10)) nla ^= 1ull << (56 + pick(8));  // another key
                    if (chance(5)) nla += 1 + pick(100);            // an offset
                }
                if (nr == VELO_IOC_NR_DEREGISTER)
                    static_cast<velo_uapi_deregister*>(arg)->nla = nla;
                else
                    static_cast<velo_uapi_repin*>(arg)->nla = nla;
                break;
            }
            default:
                break;
        }
        uint32_t* w = static_cast<uint32_t*>(arg);
        if (chance(30)) {
            for (unsigned n = 1 + pick(3); n; --n) w[1 + pick(size / 4 - 1)] = u32({});
        }
        if (chance(3))
            for (uint32_t b = 4; b < size; ++b) static_cast<uint8_t*>(arg)[b] = static_cast<uint8_t>(rng());
        w[0] = chance(95) ? size : u32({0, size - 1, size - 4, size + 8, 4096});
    }

    // A LIST inside box `in`: 1..6 target boxes, pairwise apart by a gap in one axis (so that no
    // piece of one ever merges with a piece of another), each cut into 1..4 strips along one axis
    // that overlap or touch, now and then a strip twice; at most VELO_SCOPE_LIST_MAX pieces.
    void gen_list(velo_uapi_register* a, unsigned in_nlo, unsigned in_nhi, unsigned in_vlo, unsigned in_vhi) {
        const struct { unsigned nlo, nhi, vlo, vhi; } in{in_nlo, in_nhi, in_vlo, in_vhi};
        genl = GenList{};
        if (chance(25)) {  // random peers and small boxes: judged by the rules' guarantees
            a->nboxes = 1 + pick(10);
            for (unsigned i = 0; i < a->nboxes; ++i) {
                const unsigned n = in.nlo + pick(in.nhi - in.nlo + 1), v = in.vlo + pick(in.vhi - in.vlo + 1);
                a->boxes[i] = velo_uapi_scope_box{uint8_t(n), uint8_t(chance(70) ? n : std::min(in.nhi, n + pick(3))),
                                                  uint8_t(v), uint8_t(chance(60) ? v : std::min(in.vhi, v + pick(4)))};
            }
            return;
        }
        const unsigned want = 1 + pick(6);
        auto apart = [](const std::array<unsigned, 4>& x, const std::array<unsigned, 4>& y) {
            return x[1] + 1 < y[0] || y[1] + 1 < x[0] || x[3] + 1 < y[2] || y[3] + 1 < x[2];
        };
        for (unsigned tries = 0; genl.targets.size() < want && tries < 40; ++tries) {
            std::array<unsigned, 4> t{};
            t[0] = in.nlo + pick(in.nhi - in.nlo + 1);
            t[1] = chance(60) ? t[0] : t[0] + pick(std::min(in.nhi - t[0], 3u) + 1);
            t[2] = in.vlo + pick(in.vhi - in.vlo + 1);
            t[3] = chance(30) ? t[2] : t[2] + pick(std::min(in.vhi - t[2], 6u) + 1);
            bool ok = true;
            for (const auto& o : genl.targets) ok = ok && apart(t, o);
            if (ok) genl.targets.push_back(t);
        }
        for (const auto& t : genl.targets) {
            const bool by_node = chance(40);  // cut the node range, else the vpid range
            const unsigned lo = by_node ? t[0] : t[2], hi = by_node ? t[1] : t[3];
            unsigned start = lo;
            while (start <= hi) {
                unsigned end = std::min(hi, start + pick(3));
                if (genl.pieces.size() + 2 > VELO_SCOPE_LIST_MAX) end = hi;          // the last piece of a full list
                const unsigned from = start > lo && chance(30) ? start - 1 : start;  // overlap the one before
                std::array<uint8_t, 4> p{};
                p[0] = uint8_t(by_node ? from : t[0]);
                p[1] = uint8_t(by_node ? end : t[1]);
                p[2] = uint8_t(by_node ? t[2] : from);
                p[3] = uint8_t(by_node ? t[3] : end);
                genl.pieces.push_back(p);
                if (chance(10) && genl.pieces.size() < VELO_SCOPE_LIST_MAX) genl.pieces.push_back(p);
                start = end + 1;
            }
        }
        if (genl.pieces.size() > VELO_SCOPE_LIST_MAX) {  // too many targets for 16 pieces: none of it
            genl = GenList{};
            a->nboxes = 0;
            return;
        }
        std::shuffle(genl.pieces.begin(), genl.pieces.end(), rng);
        a->node_lo = a->node_hi = a->vpid_lo = a->vpid_hi = 0;
        a->nboxes = static_cast<uint32_t>(genl.pieces.size());
        for (size_t i = 0; i < genl.pieces.size(); ++i)
            a->boxes[i] =
                velo_uapi_scope_box{genl.pieces[i][0], genl.pieces[i][1], genl.pieces[i][2], genl.pieces[i][3]};
        std::sort(genl.targets.begin(), genl.targets.end());
        genl.on = true;
    }
    // the generated list, unchanged by the corruption that follows generation?
    bool gen_list_intact(const velo_uapi_register& a) const {
        if (!genl.on || a.nboxes != genl.pieces.size() || a.node_lo || a.node_hi || a.vpid_lo || a.vpid_hi || a.rsvd)
            return false;
        for (unsigned i = 0; i < VELO_SCOPE_LIST_MAX; ++i) {
            const velo_uapi_scope_box& x = a.boxes[i];
            const std::array<uint8_t, 4> b{x.node_lo, x.node_hi, x.vpid_lo, x.vpid_hi};
            if (i < genl.pieces.size() ? b != genl.pieces[i] : (b != std::array<uint8_t, 4>{})) return false;
        }
        return true;
    }

    static uint64_t handle(unsigned r, uint32_t key) { return uint64_t(key & 0xFF) << 56 | uint64_t(r) << 40; }
    // the model's region of the client by handle, or -1
    int lookup(const Client& k, uint64_t nla) const {
        const unsigned r = static_cast<unsigned>((nla >> 40) & 0xFFFF);
        if ((nla & ((1ull << 40) - 1)) || r >= kNrg) return -1;
        auto it = m.rg.find(r);
        if (it == m.rg.end() || (it->second.key & 0xFF) != (nla >> 56) || it->second.owner != k.cl.owner) return -1;
        return static_cast<int>(r);
    }

    // ------------------------------------------------------------ what the rules say
    struct Box {
        unsigned nlo, nhi, vlo, vhi;
        uint32_t reg() const { return vlo | vhi << 8 | nlo << 16 | nhi << 24; }
        bool inside(const Box& o) const { return nlo >= o.nlo && nhi <= o.nhi && vlo >= o.vlo && vhi <= o.vhi; }
        // the rules of velo_uapi.h LIST: contained, or one axis equal and the other touching
        bool merges(const Box& o) const {
            return inside(o) || o.inside(*this) ||
                   (nlo == o.nlo && nhi == o.nhi && o.vlo <= vhi + 1 && vlo <= o.vhi + 1) ||
                   (vlo == o.vlo && vhi == o.vhi && o.nlo <= nhi + 1 && nlo <= o.nhi + 1);
        }
        auto tie() const { return std::array<unsigned, 4>{nlo, nhi, vlo, vhi}; }
    };
    static constexpr uint32_t kEmptyReg = 0x00FF00FFu;  // RG_SCOPE of an empty box
    // the model's own merging: the last pair that merges first, into their bounding box
    static std::vector<Box> model_merge(std::vector<Box> b) {
        for (bool again = true; again;) {
            again = false;
            for (size_t i = b.size(); i-- > 0 && !again;)
                for (size_t j = i; j-- > 0 && !again;)
                    if (b[i].merges(b[j])) {
                        b[j] = Box{std::min(b[i].nlo, b[j].nlo), std::max(b[i].nhi, b[j].nhi),
                                   std::min(b[i].vlo, b[j].vlo), std::max(b[i].vhi, b[j].vhi)};
                        b.erase(b.begin() + static_cast<long>(i));
                        again = true;
                    }
        }
        return b;
    }
    // the cells (node, data vpid) a list of boxes admits
    static std::vector<bool> cells(const std::vector<Box>& b) {
        std::vector<bool> c((1u << kNodeBits) * kHalf, false);
        for (const Box& x : b)
            for (unsigned n = x.nlo; n <= x.nhi && n < (1u << kNodeBits); ++n)
                for (unsigned v = x.vlo; v <= x.vhi && v < kHalf; ++v) c[n * kHalf + v] = true;
        return c;
    }
    // the JOB box of endpoint e at data vpid v (docs/driver.md "Security model", RMA)
    Box job_box(const Model::Ep& e, unsigned v) const {
        Box b{0, (1u << kNodeBits) - 1, 0, kHalf - 1};
        if (m.policy == VELO_POLICY_OPEN) return b;
        const int j = e.job >= 0 ? e.job : m.job_of(v);
        if (j >= 0) return Box{m.jobs[j].nlo, m.jobs[j].nhi, m.jobs[j].vlo, m.jobs[j].vhi};
        b.vlo = b.vhi = v;
        while (b.vlo > 0 && m.job_of(b.vlo - 1) < 0) --b.vlo;
        while (b.vhi + 1 < kHalf && m.job_of(b.vhi + 1) < 0) ++b.vhi;
        return b;
    }
    // REGISTER's scope: 0 with the box, or the error
    int scope_box(const Client& k, unsigned v, const Model::Ep& e, const velo_uapi_register& a, Box* out) const {
        const Box job = job_box(e, v);
        Box b;
        switch (a.scope) {
            case VELO_SCOPE_JOB:
            case VELO_SCOPE_OWNER:
                if (a.node_lo || a.node_hi || a.vpid_lo || a.vpid_hi) return -VELO_CORE_EINVAL;
                b = a.scope == VELO_SCOPE_JOB ? job : Box{m.node_id, m.node_id, v, v};
                break;
            case VELO_SCOPE_PEER:
                if (a.node_hi || a.vpid_hi) return -VELO_CORE_EINVAL;
                b = Box{a.node_lo, a.node_lo, a.vpid_lo, a.vpid_lo};
                break;
            case VELO_SCOPE_BOX:
                b = Box{a.node_lo, a.node_hi, a.vpid_lo, a.vpid_hi};
                break;
            default:
                return -VELO_CORE_EINVAL;
        }
        if (b.nlo > b.nhi || b.nhi >= (1u << kNodeBits) || b.vlo > b.vhi || b.vhi >= kHalf) return -VELO_CORE_EINVAL;
        if (m.policy == VELO_POLICY_STRICT && !k.priv && e.job < 0) return -VELO_CORE_EACCES;
        if (!k.priv && a.scope != VELO_SCOPE_OWNER &&
            (b.nlo < job.nlo || b.nhi > job.nhi || b.vlo < job.vlo || b.vhi > job.vhi))
            return -VELO_CORE_EACCES;
        *out = b;
        return 0;
    }
    // REGISTER's scope as a list: 0 with the boxes the NIC must check (kListFree: the core's
    // merging is judged after the call), or the error; the structural checks come first (before
    // the endpoint's state), as the core makes them
    static bool list_shape_bad(const velo_uapi_register& a) {
        const bool list = a.scope == VELO_SCOPE_LIST;
        const unsigned n = list ? a.nboxes : 0;
        if (a.rsvd || (list ? (!n || n > VELO_SCOPE_LIST_MAX || a.node_lo || a.node_hi || a.vpid_lo || a.vpid_hi)
                            : a.nboxes != 0))
            return true;
        for (unsigned i = n; i < VELO_SCOPE_LIST_MAX; ++i)
            if (a.boxes[i].node_lo || a.boxes[i].node_hi || a.boxes[i].vpid_lo || a.boxes[i].vpid_hi) return true;
        return false;
    }
    int scope_list(const Client& k, unsigned v, const Model::Ep& e, const velo_uapi_register& a,
                   std::vector<Box>* out) const {
        if (a.scope != VELO_SCOPE_LIST) {
            Box b{};
            const int r = scope_box(k, v, e, a, &b);
            if (!r) *out = {b};
            return r;
        }
        std::vector<Box> in;
        for (unsigned i = 0; i < a.nboxes; ++i)
            in.push_back(Box{a.boxes[i].node_lo, a.boxes[i].node_hi, a.boxes[i].vpid_lo, a.boxes[i].vpid_hi});
        for (const Box& b : in)
            if (b.nlo > b.nhi || b.nhi >= (1u << kNodeBits) || b.vlo > b.vhi || b.vhi >= kHalf)
                return -VELO_CORE_EINVAL;
        if (m.policy == VELO_POLICY_STRICT && !k.priv && e.job < 0) return -VELO_CORE_EACCES;
        const Box job = job_box(e, v);
        if (!k.priv)
            for (const Box& b : in)
                if (!b.inside(job)) return -VELO_CORE_EACCES;
        if (gen_list_intact(a)) {
            if (genl.targets.size() > VELO_SCOPE_NIC_BOXES) return -VELO_CORE_E2BIG;
            out->clear();
            for (const auto& t : genl.targets) out->push_back(Box{t[0], t[1], t[2], t[3]});
            return 0;
        }
        *out = in;
        return kListFree;
    }
    int expect(const Client& k, unsigned nr, const void* arg, uint32_t size) {
        if (nr >= VELO_IOC_NR_COUNT) return -VELO_CORE_ENOTTY;
        uint32_t argsz;
        std::memcpy(&argsz, arg, sizeof argsz);
        if (argsz < size) return -VELO_CORE_EINVAL;
        const Model::Ep* e = nullptr;
        const Ep st = ep_state(k, &e);
        switch (nr) {
            case VELO_IOC_NR_INFO:
                return static_cast<const velo_uapi_info*>(arg)->flags ? -VELO_CORE_EINVAL : 0;
            case VELO_IOC_NR_EP_OPEN: {
                auto* a = static_cast<const velo_uapi_ep_open*>(arg);
                if (a->flags || a->rsvd0 || a->vpid < -1) return -VELO_CORE_EINVAL;
                if (st != Ep::kNone) return -VELO_CORE_EBUSY;
                const unsigned l = a->log2_lines ? a->log2_lines : VELO_RING_LOG2_DEFAULT;
                const unsigned cl = a->ctl_log2_lines ? a->ctl_log2_lines : VELO_CTL_RING_LOG2_DEFAULT;
                if (l < VELO_RING_LOG2_MIN || l > m.max_log2 || cl < VELO_RING_LOG2_MIN || cl > m.max_log2)
                    return -VELO_CORE_EINVAL;
                if (a->vpid >= static_cast<int32_t>(kHalf)) return -VELO_CORE_EINVAL;
                int job = -1;
                if (m.policy != VELO_POLICY_OPEN) {
                    if (a->job_key) {
                        job = m.job_find(a->job_key);
                        if (job < 0) return -VELO_CORE_EACCES;
                        if (m.jobs[job].uid != VELO_CORE_UID_ANY && m.jobs[job].uid != k.uid && !k.priv)
                            return -VELO_CORE_EACCES;
                    } else if (m.policy == VELO_POLICY_STRICT && !k.priv) {
                        return -VELO_CORE_EACCES;
                    }
                }
                if (a->vpid >= 0) {
                    if (!m.allowed_vpid(k.priv, job, static_cast<unsigned>(a->vpid))) return -VELO_CORE_EACCES;
                    if (m.eps.count(static_cast<unsigned>(a->vpid))) return -VELO_CORE_EADDRINUSE;
                    return 0;
                }
                for (unsigned v = 0; v < kHalf; ++v)
                    if (!m.eps.count(v) && m.allowed_vpid(false, job, v)) return kAnyVpid;
                return -VELO_CORE_ENOSPC;
            }
            case VELO_IOC_NR_GRANT: {
                auto* a = static_cast<const velo_uapi_grant*>(arg);
                if (a->flags) return -VELO_CORE_EINVAL;
                if (st != Ep::kLive) return ep_err(st);
                if (a->from > 1 || a->dst_node >= (1u << kNodeBits) || a->dst_vpid >= 2 * kHalf)
                    return -VELO_CORE_EINVAL;
                if (a->from == 0 && (a->dst_vpid & kHalf)) return -VELO_CORE_EINVAL;
                if (m.policy != VELO_POLICY_OPEN && !e->priv) {
                    if (m.job_of(a->dst_vpid & ~kHalf) != e->job) return -VELO_CORE_EACCES;
                    if (e->job >= 0 && (a->dst_node < m.jobs[e->job].nlo || a->dst_node > m.jobs[e->job].nhi))
                        return -VELO_CORE_EACCES;
                }
                for (const auto& g : e->g)
                    if (g.used && g.from == a->from && g.node == a->dst_node && g.vpid == a->dst_vpid) return 0;
                for (const auto& g : e->g)
                    if (!g.used) return 0;
                return -VELO_CORE_ENOSPC;
            }
            case VELO_IOC_NR_REVOKE: {
                auto* a = static_cast<const velo_uapi_revoke*>(arg);
                if (a->flags || a->rsvd) return -VELO_CORE_EINVAL;
                if (st != Ep::kLive) return ep_err(st);
                if (a->grant_id >= e->g.size() || !e->g[a->grant_id].used) return -VELO_CORE_ENOENT;
                return 0;
            }
            case VELO_IOC_NR_WAIT: {
                auto* a = static_cast<const velo_uapi_wait*>(arg);
                if (!a->flags || (a->flags & ~3u) || a->rsvd) return -VELO_CORE_EINVAL;
                if (st != Ep::kLive) return ep_err(st);
                return 0;
            }
            case VELO_IOC_NR_JOB_SET: {
                auto* a = static_cast<const velo_uapi_job*>(arg);
                if (!k.priv) return -VELO_CORE_EPERM;
                if ((a->flags & ~1u) || a->rsvd) return -VELO_CORE_EINVAL;
                if ((a->flags & 1) ? a->uid == VELO_CORE_UID_ANY : a->uid != 0) return -VELO_CORE_EINVAL;
                if (!a->job_key || a->vpid_lo > a->vpid_hi || a->vpid_hi >= kHalf || a->node_lo > a->node_hi ||
                    a->node_hi >= (1u << kNodeBits))
                    return -VELO_CORE_EINVAL;
                const int self = m.job_find(a->job_key);
                for (size_t i = 0; i < m.jobs.size(); ++i)
                    if (static_cast<int>(i) != self && a->vpid_lo <= m.jobs[i].vhi && m.jobs[i].vlo <= a->vpid_hi)
                        return -VELO_CORE_EEXIST;
                if (self >= 0 && m.jobs[self].nep) return -VELO_CORE_EBUSY;
                for (const auto& [v, ep] : m.eps)
                    if (v >= a->vpid_lo && v <= a->vpid_hi) return -VELO_CORE_EBUSY;
                // a grant into the range from outside would let the job be reached from outside
                for (const auto& [v, ep] : m.eps)
                    for (const auto& g : ep.g)
                        if (m.policy != VELO_POLICY_OPEN && !ep.priv && g.used && (g.vpid & ~kHalf) >= a->vpid_lo &&
                            (g.vpid & ~kHalf) <= a->vpid_hi)
                            return -VELO_CORE_EBUSY;
                if (self < 0 && m.jobs.size() == VELO_CORE_MAX_JOBS) return -VELO_CORE_ENOSPC;
                return 0;
            }
            case VELO_IOC_NR_JOB_DEL: {
                auto* a = static_cast<const velo_uapi_job_del*>(arg);
                if (!k.priv) return -VELO_CORE_EPERM;
                if (a->flags) return -VELO_CORE_EINVAL;
                const int j = m.job_find(a->job_key);
                if (j < 0) return -VELO_CORE_ENOENT;
                return m.jobs[j].nep ? -VELO_CORE_EBUSY : 0;
            }
            case VELO_IOC_NR_NODE_SET: {
                auto* a = static_cast<const velo_uapi_node*>(arg);
                if (!k.priv) return -VELO_CORE_EPERM;
                if (a->flags || a->rsvd || a->node_id >= (1u << kNodeBits)) return -VELO_CORE_EINVAL;
                return m.eps.empty() ? 0 : -VELO_CORE_EBUSY;
            }
            case VELO_IOC_NR_ROUTE_SET: {
                auto* a = static_cast<const velo_uapi_route*>(arg);
                if (!k.priv) return -VELO_CORE_EPERM;
                if (a->flags & ~1u) return -VELO_CORE_EINVAL;
                if (!(a->flags & 1) && a->route) return -VELO_CORE_EINVAL;
                if (a->dst_node >= (1u << kNodeBits) || a->route >= (1u << VELO_ROUTE_BITS)) return -VELO_CORE_EINVAL;
                return 0;
            }
            case VELO_IOC_NR_PORT_SET: {
                auto* a = static_cast<const velo_uapi_port*>(arg);
                if (!k.priv) return -VELO_CORE_EPERM;
                if (a->flags || a->port < 1 || a->port > nic.nports || (a->cfg & ~7u)) return -VELO_CORE_EINVAL;
                return 0;
            }
            case VELO_IOC_NR_RMA_SETUP: {
                auto* a = static_cast<const velo_uapi_rma_setup*>(arg);
                if (a->flags || a->rsvd) return -VELO_CORE_EINVAL;
                if (st != Ep::kLive) return ep_err(st);
                const unsigned l = a->log2_entries ? a->log2_entries : VELO_NQ_LOG2_DEFAULT;
                if (l < VELO_NQ_LOG2_MIN || l > VELO_RMA_NQ_LOG2_MAX) return -VELO_CORE_EINVAL;
                return e->nq_log2 ? -VELO_CORE_EEXIST : 0;
            }
            case VELO_IOC_NR_REGISTER: {
                auto* a = static_cast<const velo_uapi_register*>(arg);
                if (!a->flags || (a->flags & ~15u)) return -VELO_CORE_EINVAL;
                if (!a->len || a->len >= (1ull << 40) || a->addr + (a->len - 1) < a->addr) return -VELO_CORE_EINVAL;
                if (list_shape_bad(*a)) return -VELO_CORE_EINVAL;
                if (st != Ep::kLive) return ep_err(st);
                std::vector<Box> b;
                const int sr = scope_list(k, static_cast<unsigned>(k.cl.vpid), *e, *a, &b);
                if (sr < 0) return sr;
                const int room = Model::pages(a->addr, a->len) > kNpte || e->nregions >= kNrg || m.rg.size() == kNrg
                                     ? -VELO_CORE_ENOSPC
                                     : 0;
                return sr == kListFree ? kListFree - room : room;
            }
            case VELO_IOC_NR_DEREGISTER: {
                auto* a = static_cast<const velo_uapi_deregister*>(arg);
                if (a->flags) return -VELO_CORE_EINVAL;
                if (st != Ep::kLive) return ep_err(st);
                return lookup(k, a->nla) < 0 ? -VELO_CORE_ENOENT : 0;
            }
            case VELO_IOC_NR_REPIN: {
                auto* a = static_cast<const velo_uapi_repin*>(arg);
                if (a->flags || a->rsvd) return -VELO_CORE_EINVAL;
                if (st != Ep::kLive) return ep_err(st);
                return lookup(k, a->nla) < 0 ? -VELO_CORE_ENOENT : 0;
            }
            default:
                return -VELO_CORE_ENOTTY;
        }
    }

    // ------------------------------------------------------------ one ioctl
    void step_ioctl() {
        const unsigned ci = pick(static_cast<unsigned>(clients.size()));
        Client& k = clients[ci];
        // RMA calls more often: regions must pile up for the page table to fill and fragment
        const unsigned nr = chance(40)   ? VELO_IOC_NR_RMA_SETUP + (chance(60) ? 1 : pick(4))
                            : chance(97) ? pick(VELO_IOC_NR_COUNT)
                                         : VELO_IOC_NR_COUNT + pick(50);
        uint32_t minsz = 0, ksz = 0;
        const int sr = velo_core_uapi_size(nr, &minsz, &ksz);
        if (nr >= VELO_IOC_NR_COUNT) {
            ASSERT_EQ(sr, -VELO_CORE_ENOTTY);
            uint64_t buf[16] = {};
            ASSERT_EQ(velo_core_ioctl(c, &k.cl, nr, buf), -VELO_CORE_ENOTTY);
            return;
        }
        ASSERT_EQ(sr, 0);
        ASSERT_EQ(minsz, ksz);
        alignas(8) uint8_t arg[160];
        ASSERT_LE(ksz, sizeof arg);
        gen(k, nr, arg, ksz);
        alignas(8) uint8_t in[160];
        std::memcpy(in, arg, ksz);
        // an unprivileged caller's call takes the endpoint's privilege for good (before it runs)
        const Model::Ep* le = nullptr;
        uint32_t argsz;
        std::memcpy(&argsz, in, sizeof argsz);
        if (!k.priv && argsz >= minsz && ep_state(k, &le) == Ep::kLive)
            m.eps[static_cast<unsigned>(k.cl.vpid)].priv = false;
        int want = expect(k, nr, in, ksz);
        const int got = velo_core_ioctl(c, &k.cl, nr, arg);
        if (want == kAnyVpid) {
            ASSERT_EQ(got, 0) << "EP_OPEN any vpid";
        } else if (want >= kListFree && want <= kListFree + 200) {
            // a changed LIST: the core's merging left more than 4 boxes, or the result without it
            auto* a = reinterpret_cast<const velo_uapi_register*>(in);
            std::vector<Box> b;
            for (unsigned i = 0; i < a->nboxes; ++i)
                b.push_back(Box{a->boxes[i].node_lo, a->boxes[i].node_hi, a->boxes[i].vpid_lo, a->boxes[i].vpid_hi});
            ++lists_free;
            if (got == -VELO_CORE_E2BIG) {
                ASSERT_GT(model_merge(b).size(), size_t(VELO_SCOPE_NIC_BOXES)) << "E2BIG for a list that merges to 4";
                ASSERT_EQ(std::memcmp(in, arg, ksz), 0) << "a refused call changed its argument";
                ++lists_e2big;
                return;
            }
            ASSERT_EQ(got, kListFree - want) << "LIST";
        } else {
            ASSERT_EQ(got, want) << "ioctl nr " << nr << " client " << ci << " (uid " << k.uid << ", root " << k.priv
                                 << ") policy " << m.policy;
        }
        if (got == -VELO_CORE_E2BIG) ++lists_e2big;
        if (got < 0) {
            ASSERT_EQ(std::memcmp(in, arg, ksz), 0) << "a refused call changed its argument, nr " << nr;
            return;
        }
        ++accepted[static_cast<int>(nr)];
        apply(k, nr, in, arg);
    }

    // the call was accepted: check its outputs, update the model
    void apply(Client& k, unsigned nr, const void* in, void* out) {
        switch (nr) {
            case VELO_IOC_NR_INFO: {
                auto* a = static_cast<velo_uapi_info*>(out);
                EXPECT_EQ(a->uapi_version, static_cast<uint32_t>(VELO_UAPI_VERSION));
                EXPECT_EQ(a->spec_hash, static_cast<uint32_t>(VELO_SPEC_HASH));
                EXPECT_EQ(a->node_id, m.node_id);
                EXPECT_EQ(a->num_vpids, 2 * kHalf);
                EXPECT_EQ(a->policy, m.policy);
                EXPECT_EQ(a->nports, nic.nports);
                break;
            }
            case VELO_IOC_NR_EP_OPEN: {
                auto* i = static_cast<const velo_uapi_ep_open*>(in);
                auto* a = static_cast<velo_uapi_ep_open*>(out);
                const unsigned v = a->out_vpid;
                ASSERT_LT(v, kHalf);
                ASSERT_EQ(m.eps.count(v), 0u) << "vpid " << v << " given twice";
                int job = m.policy == VELO_POLICY_OPEN ? -1 : m.job_find(i->job_key);
                if (i->vpid >= 0)
                    ASSERT_EQ(v, static_cast<unsigned>(i->vpid));
                else
                    ASSERT_TRUE(m.allowed_vpid(false, job, v)) << "vpid " << v << " outside the partition";
                EXPECT_EQ(a->out_ctl_vpid, v | kHalf);
                const unsigned l = i->log2_lines ? i->log2_lines : VELO_RING_LOG2_DEFAULT;
                const unsigned cl = i->ctl_log2_lines ? i->ctl_log2_lines : VELO_CTL_RING_LOG2_DEFAULT;
                EXPECT_EQ(a->out_log2_lines, l);
                EXPECT_EQ(a->out_ctl_log2_lines, cl);
                EXPECT_EQ(a->ring_bytes, std::max<uint64_t>(4096, 64ull << l));
                EXPECT_EQ(a->ctl_ring_bytes, std::max<uint64_t>(4096, 64ull << cl));
                EXPECT_EQ(a->max_grants, m.max_grants);
                Model::Ep e{k.cl.owner, i->job_key, job, k.priv, k.priv, l, cl, m.max_grants, {}};
                e.g.resize(m.max_grants);
                m.eps[v] = e;
                if (job >= 0) ++m.jobs[job].nep;
                ASSERT_EQ(k.cl.vpid, static_cast<int>(v));
                break;
            }
            case VELO_IOC_NR_GRANT: {
                auto* a = static_cast<velo_uapi_grant*>(out);
                Model::Ep& e = m.eps[static_cast<unsigned>(k.cl.vpid)];
                int id = -1;
                for (size_t g = 0; g < e.g.size() && id < 0; ++g)
                    if (e.g[g].used && e.g[g].from == a->from && e.g[g].node == a->dst_node &&
                        e.g[g].vpid == a->dst_vpid)
                        id = static_cast<int>(g);
                for (size_t g = 0; g < e.g.size() && id < 0; ++g)
                    if (!e.g[g].used) id = static_cast<int>(g);
                ASSERT_EQ(a->grant_id, static_cast<uint32_t>(id));
                e.g[id] = {true, a->from, a->dst_node, a->dst_vpid};
                const uint64_t src = a->from ? (static_cast<unsigned>(k.cl.vpid) | kHalf) : k.cl.vpid;
                EXPECT_EQ(a->window_off,
                          uint64_t(a->dst_vpid) << 12 | uint64_t(a->dst_node) << 20 | src << (20 + kNodeBits));
                break;
            }
            case VELO_IOC_NR_REVOKE:
                m.eps[static_cast<unsigned>(k.cl.vpid)].g[static_cast<const velo_uapi_revoke*>(in)->grant_id].used =
                    false;
                break;
            case VELO_IOC_NR_WAIT: {
                auto* a = static_cast<velo_uapi_wait*>(out);
                const velo_core_ep* ce = velo_core_ep_find(c, static_cast<unsigned>(k.cl.vpid));
                ASSERT_NE(ce, nullptr);
                unsigned want = 0;
                auto has = [](const void* ring, unsigned log2, uint32_t rp) {
                    uint8_t b;
                    std::memcpy(&b, static_cast<const uint8_t*>(ring) + 64u * (rp & ((1u << log2) - 1)), 1);
                    return (b & 1u) == (((rp >> log2) & 1u) ^ 1u);
                };
                if ((a->flags & 1) && has(ce->ring, ce->log2_lines, a->rp)) want |= 1;
                if ((a->flags & 2) && has(ce->ctl_ring, ce->ctl_log2_lines, a->ctl_rp)) want |= 2;
                EXPECT_EQ(a->out_ready, want);
                break;
            }
            case VELO_IOC_NR_JOB_SET: {
                auto* a = static_cast<const velo_uapi_job*>(in);
                const int self = m.job_find(a->job_key);
                Model::Job j{a->job_key, (a->flags & 1) ? a->uid : VELO_CORE_UID_ANY,
                             a->vpid_lo, a->vpid_hi,
                             a->node_lo, a->node_hi,
                             0};
                if (self >= 0)
                    m.jobs[self] = j;
                else
                    m.jobs.push_back(j);
                break;
            }
            case VELO_IOC_NR_JOB_DEL: {
                const int j = m.job_find(static_cast<const velo_uapi_job_del*>(in)->job_key);
                // endpoints refer to jobs by index: none exist for this one (nep == 0), renumber the rest
                for (auto& [v, e] : m.eps)
                    if (e.job > j) --e.job;
                m.jobs.erase(m.jobs.begin() + j);
                break;
            }
            case VELO_IOC_NR_NODE_SET:
                m.node_id = static_cast<const velo_uapi_node*>(in)->node_id;
                EXPECT_EQ(nic.reg(VELO_REG_CTRL_NODE_ID), m.node_id);
                break;
            case VELO_IOC_NR_ROUTE_SET: {
                auto* a = static_cast<const velo_uapi_route*>(in);
                const uint32_t want = (a->flags & 1) ? (1u << 31) | a->route : 0;
                EXPECT_EQ(nic.reg(VELO_TBL_ROUTE_TABLE_BASE + 4 * a->dst_node), want);
                break;
            }
            case VELO_IOC_NR_PORT_SET: {
                auto* a = static_cast<const velo_uapi_port*>(in);
                EXPECT_EQ(nic.reg(VELO_TBL_NET_PORT_BASE + (a->port - 1) * VELO_TBL_NET_PORT_STRIDE), a->cfg);
                break;
            }
            case VELO_IOC_NR_RMA_SETUP: {
                auto* i = static_cast<const velo_uapi_rma_setup*>(in);
                auto* a = static_cast<velo_uapi_rma_setup*>(out);
                const unsigned l = i->log2_entries ? i->log2_entries : VELO_NQ_LOG2_DEFAULT;
                EXPECT_EQ(a->out_log2_entries, l);
                EXPECT_EQ(a->nq_bytes, 32ull << l);
                EXPECT_EQ(a->region_bits, kRgBits);
                EXPECT_EQ(a->pte_bits, kPteBits);
                m.eps[static_cast<unsigned>(k.cl.vpid)].nq_log2 = l;
                break;
            }
            case VELO_IOC_NR_REGISTER: {
                auto* i = static_cast<const velo_uapi_register*>(in);
                auto* a = static_cast<velo_uapi_register*>(out);
                unsigned r = m.next_rg;
                while (m.rg.count(r)) r = (r + 1) % kNrg;
                ASSERT_EQ(a->region, r) << "round robin";
                const uint32_t key = m.next_key(r);
                ASSERT_EQ(a->key, key);
                ASSERT_NE(a->key, 0u);
                ASSERT_EQ(a->nla, handle(r, key));
                const unsigned v = static_cast<unsigned>(k.cl.vpid);
                std::vector<Box> b;
                const int sr = scope_list(k, v, m.eps[v], *i, &b);
                ASSERT_GE(sr, 0);
                // out: the boxes the NIC checks, sorted, the rest zero, box 0 in the single fields
                std::vector<Box> got;
                for (unsigned x = 0; x < a->nboxes && x < VELO_SCOPE_NIC_BOXES; ++x)
                    got.push_back(
                        Box{a->boxes[x].node_lo, a->boxes[x].node_hi, a->boxes[x].vpid_lo, a->boxes[x].vpid_hi});
                ASSERT_GE(a->nboxes, 1u);
                ASSERT_LE(a->nboxes, uint32_t(VELO_SCOPE_NIC_BOXES));
                for (unsigned x = a->nboxes; x < VELO_SCOPE_LIST_MAX; ++x)
                    ASSERT_EQ(a->boxes[x].node_lo | a->boxes[x].node_hi | a->boxes[x].vpid_lo | a->boxes[x].vpid_hi, 0);
                ASSERT_EQ(a->scope, static_cast<uint32_t>(a->nboxes == 1 ? VELO_SCOPE_BOX : VELO_SCOPE_LIST));
                ASSERT_EQ(a->node_lo, got[0].nlo);
                ASSERT_EQ(a->node_hi, got[0].nhi);
                ASSERT_EQ(a->vpid_lo, got[0].vlo);
                ASSERT_EQ(a->vpid_hi, got[0].vhi);
                for (size_t x = 1; x < got.size(); ++x) ASSERT_LT(got[x - 1].tie(), got[x].tie()) << "sorted";
                if (sr == kListFree) {  // what the rules guarantee
                    for (size_t x = 0; x < got.size(); ++x)
                        for (size_t y = x + 1; y < got.size(); ++y) ASSERT_FALSE(got[x].merges(got[y])) << "unmerged";
                    ASSERT_TRUE(cells(got) == cells(b)) << "the boxes out admit other initiators than the boxes in";
                } else {
                    ASSERT_EQ(got.size(), b.size());
                    for (size_t x = 0; x < got.size(); ++x) ASSERT_EQ(got[x].tie(), b[x].tie()) << "box " << x;
                }
                if (i->scope == VELO_SCOPE_LIST && got.size() > 1) ++lists_multi;
                ++scopes[i->scope];
                m.next_rg = (r + 1) % kNrg;
                std::array<uint32_t, 4> regs{kEmptyReg, kEmptyReg, kEmptyReg, kEmptyReg};
                for (size_t x = 0; x < got.size(); ++x) regs[x] = got[x].reg();
                m.rg[r] = Model::Region{k.cl.owner, v, key, regs, i->flags, i->addr, i->len, false, {}, nullptr};
                ++m.eps[v].nregions;
                glue_pin(r);
                break;
            }
            case VELO_IOC_NR_DEREGISTER: {
                const int r = lookup(k, static_cast<const velo_uapi_deregister*>(in)->nla);
                ASSERT_GE(r, 0);
                forget(static_cast<unsigned>(r));
                break;
            }
            case VELO_IOC_NR_REPIN: {
                auto* a = static_cast<velo_uapi_repin*>(out);
                const int r = lookup(k, a->nla);
                ASSERT_GE(r, 0);
                ASSERT_EQ(a->out_repinned, m.rg[static_cast<unsigned>(r)].valid ? 0u : 1u);
                if (a->out_repinned) glue_pin(static_cast<unsigned>(r));
                break;
            }
            default:
                FAIL() << "accepted unknown nr " << nr;
        }
    }

    // what the Linux glue does for a DECLARED region after REGISTER or REPIN: pin (sometimes
    // failing: nothing mapped) and map
    void glue_pin(unsigned r) {
        Model::Region& g = m.rg[r];
        if (chance(10)) return;  // pinning failed (EFAULT/ENOMEM): the region stays declared
        const uint64_t n = Model::pages(g.addr, g.len);
        std::vector<uint64_t> f(n);
        for (auto& x : f) x = rng() & ((1ull << 40) - 1);
        pins.emplace_back();
        fake::Pin* pin = &pins.back();
        pin->region = r;
        if (chance(3)) {  // a wrong page count or a frame past 40 bits: refused, nothing kept
            if (chance(50)) {
                f.push_back(1);
            } else {
                f[pick(static_cast<unsigned>(n))] |= 1ull << 40;
            }
            ASSERT_EQ(velo_core_rma_map(c, r, g.key, f.data(), f.size(), pin), -VELO_CORE_EINVAL);
            pin->unpinned = 1;  // the glue unpins itself
            return;
        }
        unsigned longest = 0;
        velo_core_rma_pte_free(c, &longest);
        const bool compact = n <= kNpte - m.pte_used && n > longest;
        // compaction withdraws others' regions only for a privileged owner
        bool may_compact = m.eps.count(g.vpid) && m.eps[g.vpid].priv;
        if (!may_compact) {
            may_compact = true;
            for (auto& [i, o] : m.rg)
                if (o.valid && o.owner != g.owner) may_compact = false;
        }
        const int got = velo_core_rma_map(c, r, g.key, f.data(), n, pin);
        if (n > kNpte - m.pte_used || (compact && !may_compact)) {
            ASSERT_EQ(got, -VELO_CORE_ENOSPC);
            ++maps_nospc;
            pin->unpinned = 1;
            return;
        }
        ASSERT_EQ(got, 0);
        ++maps_ok;
        compactions += compact;
        g.valid = true;
        g.pfns = f;
        g.pin = pin;
        m.pte_used += static_cast<unsigned>(n);
    }
    void unmap(Model::Region& g) {
        if (!g.valid) return;
        ASSERT_EQ(g.pin->unpinned, 1) << "pin of region not released";
        g.valid = false;
        m.pte_used -= static_cast<unsigned>(g.pfns.size());
        g.pfns.clear();
        g.pin = nullptr;
    }
    void forget(unsigned r) {
        Model::Region& g = m.rg[r];
        unmap(g);
        auto it = m.eps.find(g.vpid);
        if (it != m.eps.end() && it->second.owner == g.owner) --it->second.nregions;
        m.rg.erase(r);
    }
    // the MMU notifier of a region fires (munmap, COW, migration)
    void step_invalidate() {
        if (m.rg.empty()) return;
        auto it = m.rg.begin();
        std::advance(it, pick(static_cast<unsigned>(m.rg.size())));
        const bool right = chance(90);
        const uint32_t key = right ? it->second.key : it->second.key + 1 + pick(200);
        ASSERT_EQ(velo_core_rma_invalidate(c, it->first, key), 0);
        if (right && it->second.valid) ++invalidations;
        if (right) unmap(it->second);
    }

    // ------------------------------------------------------------ the other entry points
    void step_mmap() {
        const Client& k = clients[pick(static_cast<unsigned>(clients.size()))];
        static const uint64_t offs[] = {VELO_MMAP_RING,
                                        VELO_MMAP_CTL_RING,
                                        VELO_MMAP_USER_PAGE,
                                        VELO_MMAP_CTL_USER_PAGE,
                                        VELO_MMAP_WINDOW,
                                        VELO_MMAP_USER_PAGE + 0x2000,
                                        VELO_MMAP_NQ,
                                        VELO_MMAP_RMA_CMD,
                                        VELO_MMAP_RMA_CMD + 0x1000};
        uint64_t off = offs[pick(9)];
        if (off == VELO_MMAP_WINDOW) off += 4096ull * pick(8);
        if (chance(5)) off = rng() & ~(chance(50) ? 4095ull : 0ull);
        if (chance(3)) off += 1 + pick(4095);
        const uint64_t lens[] = {4096, 8192, 64ull << 7, 64ull << 8, 64ull << 9, 0, 100, 32ull << 10, 32ull << 12};
        const uint64_t len = chance(5) ? rng() : lens[pick(9)];
        const unsigned acc = chance(90) ? (pick(4) | VELO_CORE_MAP_SHARED | (chance(5) ? VELO_CORE_MAP_EXEC : 0))
                                        : static_cast<unsigned>(rng());
        const Model::Ep* e = nullptr;
        const Ep st = ep_state(k, &e);
        int want;
        uint64_t bar_off = 0;
        if (st != Ep::kLive) {
            want = ep_err(st);
        } else if ((off & 4095) || !len || (len & 4095) || (acc & ~15u) || !(acc & VELO_CORE_MAP_SHARED)) {
            want = -VELO_CORE_EINVAL;
        } else if (acc & VELO_CORE_MAP_EXEC) {
            want = -VELO_CORE_EACCES;
        } else if (off == VELO_MMAP_RING || off == VELO_MMAP_CTL_RING) {
            const unsigned l = off == VELO_MMAP_RING ? e->log2 : e->ctl_log2;
            want = len != std::max<uint64_t>(4096, 64ull << l) ? -VELO_CORE_EINVAL
                   : (acc & VELO_CORE_MAP_WRITE)               ? -VELO_CORE_EACCES
                                                               : 0;
        } else if (off == VELO_MMAP_USER_PAGE || off == VELO_MMAP_CTL_USER_PAGE) {
            want = len != 4096 ? -VELO_CORE_EINVAL : 0;
            bar_off = nic.user(static_cast<unsigned>(k.cl.vpid) | (off == VELO_MMAP_CTL_USER_PAGE ? kHalf : 0));
        } else if (off == VELO_MMAP_NQ) {
            want = !e->nq_log2 || len != (32ull << e->nq_log2) ? -VELO_CORE_EINVAL
                   : (acc & VELO_CORE_MAP_WRITE)               ? -VELO_CORE_EACCES
                                                               : 0;
        } else if (off == VELO_MMAP_RMA_CMD) {
            // the policy's rule for RMA: under strict, an endpoint of a job or a privileged caller
            want = !e->nq_log2 || len != 4096                                  ? -VELO_CORE_EINVAL
                   : (acc & VELO_CORE_MAP_READ)                                ? -VELO_CORE_EACCES
                   : (m.policy == VELO_POLICY_STRICT && !k.priv && e->job < 0) ? -VELO_CORE_EACCES
                                                                               : 0;
            bar_off = uint64_t(static_cast<unsigned>(k.cl.vpid)) << 12;
        } else if (off >= VELO_MMAP_WINDOW && off < VELO_MMAP_NQ) {
            const uint64_t g = (off - VELO_MMAP_WINDOW) / 4096;
            if (g >= e->g.size() || len != 4096 || !e->g[g].used) {
                want = -VELO_CORE_EINVAL;
            } else {
                want = (acc & VELO_CORE_MAP_READ) ? -VELO_CORE_EACCES : 0;
                const auto& gr = e->g[g];
                const uint64_t src = gr.from ? (static_cast<unsigned>(k.cl.vpid) | kHalf) : k.cl.vpid;
                bar_off = uint64_t(gr.vpid) << 12 | uint64_t(gr.node) << 20 | src << (20 + kNodeBits);
            }
        } else {
            want = -VELO_CORE_EINVAL;
        }
        velo_core_map mm;
        ASSERT_EQ(velo_core_mmap_check(c, &k.cl, off, len, acc, &mm), want)
            << std::hex << "off 0x" << off << " len 0x" << len << " acc 0x" << acc;
        if (want == 0 && bar_off) {
            EXPECT_EQ(mm.bar_off, bar_off);
        }
    }

    void step_reclaim() {
        const unsigned v = chance(80) ? pick(256) : u32({});
        const unsigned data = v & ~kHalf;
        uint64_t owner = 0;
        const int got = velo_core_reclaim(c, v, &owner);
        if (v >= 2 * kHalf || !m.eps.count(data)) {
            ASSERT_EQ(got, -VELO_CORE_ENOENT);
            return;
        }
        ASSERT_EQ(got, 0);
        ASSERT_EQ(owner, m.eps[data].owner);
        drop(data);
    }

    void step_close() {
        Client& k = clients[pick(static_cast<unsigned>(clients.size()))];
        const Model::Ep* e = nullptr;
        const bool live = ep_state(k, &e) == Ep::kLive;
        const unsigned v = live ? static_cast<unsigned>(k.cl.vpid) : 0;
        ASSERT_EQ(velo_core_client_close(c, &k.cl), 0);
        if (live) drop(v);
        k = fresh(k.uid,
                  k.uid == 0);  // the file is closed; a new one is opened (root: uid 0)
    }

    // every file closed at once (a job ends): admin calls that need an idle NIC get their turn
    void step_close_all() {
        for (size_t i = 0; i < clients.size() && !::testing::Test::HasFatalFailure(); ++i) {
            const Model::Ep* e = nullptr;
            Client& k = clients[i];
            const bool live = ep_state(k, &e) == Ep::kLive;
            const unsigned v = live ? static_cast<unsigned>(k.cl.vpid) : 0;
            ASSERT_EQ(velo_core_client_close(c, &k.cl), 0);
            if (live) drop(v);
            k = fresh(k.uid, k.uid == 0);
        }
        ASSERT_EQ(velo_core_ep_count(c), 0u);
    }

    void step_ring() {
        if (m.eps.empty()) return;
        auto it = m.eps.begin();
        std::advance(it, pick(static_cast<unsigned>(m.eps.size())));
        const velo_core_ep* ce = velo_core_ep_find(c, it->first);
        ASSERT_NE(ce, nullptr);
        const bool ctl = chance(50);
        const unsigned log2 = ctl ? ce->ctl_log2_lines : ce->log2_lines;
        fake::put_entry(ctl ? ce->ctl_ring : ce->ring, pick(1u << log2) & 7, pick(2));
    }

    // a root process drops its privilege (setuid): its next calls are an unprivileged caller's
    void step_drop() {
        Client& k = clients[pick(static_cast<unsigned>(clients.size()))];
        if (!k.priv) return;
        k.priv = false;
        velo_core_client_caller(&k.cl, k.cl.pid, 1234, 0);
        ++drops;
    }

    void step_policy() {
        const unsigned p = chance(90) ? pick(3) : 3 + pick(10);
        const int got = velo_core_set_policy(c, p);
        const int want = p > 2 ? -VELO_CORE_EINVAL : (!m.eps.empty() && p != m.policy) ? -VELO_CORE_EBUSY : 0;
        ASSERT_EQ(got, want);
        if (!got) m.policy = p;
    }

    void drop(unsigned v) {
        if (m.eps[v].job >= 0) --m.jobs[m.eps[v].job].nep;
        const uint64_t owner = m.eps[v].owner;
        std::vector<unsigned> gone;
        for (auto& [r, g] : m.rg)
            if (g.owner == owner) gone.push_back(r);
        for (unsigned r : gone) forget(r);
        m.eps.erase(v);
    }

    // ------------------------------------------------------------ the core's state == the model's
    void check_state() {
        ASSERT_EQ(velo_core_ep_count(c), m.eps.size());
        for (unsigned v = 0; v < kHalf; ++v) {
            const velo_core_ep* ce = velo_core_ep_find(c, v);
            auto it = m.eps.find(v);
            const uint32_t on = static_cast<uint32_t>(VELO_FIELD_PREP(VELO_TBL_VPID_TABLE_MB_CFG_ENABLE, 1));
            if (it == m.eps.end()) {
                ASSERT_EQ(ce, nullptr) << v;
                ASSERT_EQ(nic.mb_cfg(v) & on, 0u) << "vpid " << v << " enabled without an endpoint";
                ASSERT_EQ(nic.mb_cfg(v | kHalf) & on, 0u);
                continue;
            }
            ASSERT_NE(ce, nullptr) << v;
            const Model::Ep& e = it->second;
            ASSERT_EQ(ce->owner, e.owner);
            ASSERT_EQ(ce->job_key, e.key);
            ASSERT_EQ(ce->max_grants, e.max_grants);
            ASSERT_EQ(nic.mb_cfg(v) & on, on);
            ASSERT_EQ(nic.mb_cfg(v | kHalf) & on, on);
            if (m.policy != VELO_POLICY_OPEN && !e.opened_priv) {
                ASSERT_EQ(m.job_of(v), e.job) << "vpid " << v;
            }
            for (unsigned g = 0; g < e.max_grants; ++g) {
                const velo_core_grant_ent* cg = velo_core_grant_get(c, v, g);
                ASSERT_EQ(cg != nullptr, e.g[g].used) << "vpid " << v << " grant " << g;
                if (!cg) continue;
                ASSERT_EQ(cg->from, e.g[g].from);
                ASSERT_EQ(cg->dst_node, e.g[g].node);
                ASSERT_EQ(cg->dst_vpid, e.g[g].vpid);
                // a grant never outlives the policy it was made under: the policy cannot change
                // under open endpoints, nor a job under its endpoints (but privilege can go)
                if (e.priv || !e.opened_priv) {
                    ASSERT_EQ(velo_core_may_reach(c, ce, cg->dst_node, cg->dst_vpid), 0);
                }
            }
        }
        unsigned njobs = 0;
        for (unsigned i = 0; i < VELO_CORE_MAX_JOBS; ++i) {
            const velo_core_job* j = velo_core_job_at(c, i);
            if (!j) continue;
            ++njobs;
            const int mj = m.job_find(j->key);
            ASSERT_GE(mj, 0);
            ASSERT_EQ(j->vpid_lo, m.jobs[mj].vlo);
            ASSERT_EQ(j->vpid_hi, m.jobs[mj].vhi);
            ASSERT_EQ(j->uid, m.jobs[mj].uid);
            ASSERT_EQ(static_cast<int>(j->nep), m.jobs[mj].nep);
        }
        ASSERT_EQ(njobs, m.jobs.size());
        size_t nqs = 0;
        for (const auto& [v, e] : m.eps) nqs += e.nq_log2 != 0;
        ASSERT_EQ(nic.live.size(), 2 * m.eps.size() + nqs) << "DMA rings";
        ASSERT_EQ(nic.zallocs - nic.zfrees, static_cast<long>(2 + 2 * m.eps.size())) << "core memory";
        check_rma();
    }

    void check_rma() {
        for (auto& v : nic.violations) FAIL() << "monitor: " << v;
        std::vector<unsigned> used(kNpte, 0);
        for (unsigned r = 0; r < kNrg; ++r) {
            const velo_core_region* g = velo_core_rma_region(c, r);
            ASSERT_NE(g, nullptr);
            auto it = m.rg.find(r);
            const uint32_t cfg = nic.rg_cfg(r);
            if (it == m.rg.end()) {
                ASSERT_EQ(g->state, VELO_CORE_RG_FREE) << r;
                ASSERT_EQ(cfg, 0u) << "free region " << r << " allocated in the NIC";
                continue;
            }
            const Model::Region& mr = it->second;
            ASSERT_EQ(g->state, mr.valid ? VELO_CORE_RG_VALID : VELO_CORE_RG_DECLARED) << r;
            ASSERT_EQ(g->key, mr.key);
            ASSERT_EQ(g->owner, mr.owner);
            const uint32_t want =
                static_cast<uint32_t>(VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_ALLOC, 1) |
                                      VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_VALID, mr.valid) |
                                      VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_PERM_LR, (mr.access & 1) != 0) |
                                      VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_PERM_LW, (mr.access & 2) != 0) |
                                      VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_PERM_RR, (mr.access & 4) != 0) |
                                      VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_PERM_RW, (mr.access & 8) != 0) |
                                      VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_OWNER_VPID, mr.vpid));
            ASSERT_EQ(cfg, want) << "RG_CFG of region " << r;
            const uint32_t box_off[4] = {VELO_TBL_RMA_REGION_RG_SCOPE, VELO_TBL_RMA_REGION_RG_SCOPE1,
                                         VELO_TBL_RMA_REGION_RG_SCOPE2, VELO_TBL_RMA_REGION_RG_SCOPE3};
            ASSERT_EQ(nic.rg(r, VELO_TBL_RMA_REGION_RG_KEY), mr.key) << "RG_KEY of region " << r;
            for (unsigned x = 0; x < 4; ++x) {
                ASSERT_EQ(g->scope[x], mr.scope[x]) << "scope box " << x;
                ASSERT_EQ(nic.rg(r, box_off[x]), mr.scope[x]) << "RG_SCOPE box " << x << " of region " << r;
            }
            ASSERT_EQ(nic.rg_len(r), mr.len);
            ASSERT_EQ(nic.rg(r, VELO_TBL_RMA_REGION_RG_START), mr.addr & 4095);
            if (!mr.valid) continue;
            ASSERT_EQ(mr.pin->unpinned, 0) << "valid region " << r << " unpinned";
            ASSERT_EQ(nic.rg(r, VELO_TBL_RMA_REGION_RG_PTE), g->pte_first);
            for (size_t k = 0; k < mr.pfns.size(); ++k) {
                const unsigned i = static_cast<unsigned>((g->pte_first + k) % kNpte);
                ASSERT_EQ(nic.pte(i), mr.pfns[k]) << "region " << r << " page " << k;
                ASSERT_EQ(used[i]++, 0u) << "page table entry " << i << " used twice";
            }
        }
        ASSERT_EQ(velo_core_rma_pte_free(c, nullptr), kNpte - m.pte_used);
        size_t live_pins = 0;
        for (const auto& p : pins) {
            ASSERT_LE(p.unpinned, 1);
            live_pins += p.unpinned == 0;
        }
        size_t valid = 0;
        for (const auto& [r, g] : m.rg) valid += g.valid;
        ASSERT_EQ(live_pins, valid) << "pins leaked";
    }

    void run(unsigned steps) {
        for (unsigned i = 0; i < steps && !::testing::Test::HasFatalFailure(); ++i) {
            const unsigned r = pick(100);
            if (r < 70)
                step_ioctl();
            else if (r < 85)
                step_mmap();
            else if (r < 88)
                step_reclaim();
            else if (r < 94)
                chance(95) ? step_close() : step_close_all();
            else if (r < 97)
                step_ring();
            else if (r < 99)
                step_invalidate();
            else
                chance(70) ? step_policy() : step_drop();
            if (::testing::Test::HasFatalFailure()) {
                ADD_FAILURE() << "at step " << i;
                return;
            }
            check_state();
        }
    }
};

void run_policy(unsigned policy) {
    Fuzz f(seed() + policy, policy);
    f.run(30000);
    // compaction needs a fragmented table and an owner allowed to move others' regions: rare;
    // a run that has not compacted yet goes on (at most 100000 steps more: scope lists that
    // are refused take a share of the REGISTERs) until it has
    for (int more = 0; more < 10 && !f.compactions && !::testing::Test::HasFatalFailure(); ++more) f.run(10000);
    // every kind of call got through sometimes, or the run proves little
    for (unsigned nr = 0; nr < VELO_IOC_NR_COUNT; ++nr) EXPECT_GT(f.accepted[static_cast<int>(nr)], 0u) << nr;
    for (auto& [nr, n] : f.accepted) std::printf("policy %u nr %d: %u accepted\n", policy, nr, n);
    std::printf("policy %u: %u maps, %u refused for space, %u compacting, %u invalidations\n", policy, f.maps_ok,
                f.maps_nospc, f.compactions, f.invalidations);
    EXPECT_GT(f.maps_ok, 0u);
    EXPECT_GT(f.compactions, 0u);
    EXPECT_GT(f.invalidations, 0u);
    std::printf(
        "policy %u: %u privilege drops; REGISTER accepted per scope: job %u owner %u "
        "peer %u box %u list %u "
        "(%u of more than one box); lists judged by the rules: %u; E2BIG: %u\n",
        policy, f.drops, f.scopes[VELO_SCOPE_JOB], f.scopes[VELO_SCOPE_OWNER], f.scopes[VELO_SCOPE_PEER],
        f.scopes[VELO_SCOPE_BOX], f.scopes[VELO_SCOPE_LIST], f.lists_multi, f.lists_free, f.lists_e2big);
    EXPECT_GT(f.drops, 0u);
    for (unsigned s = VELO_SCOPE_JOB; s <= VELO_SCOPE_LIST; ++s) EXPECT_GT(f.scopes[s], 0u) << "scope " << s;
    EXPECT_GT(f.lists_multi, 0u) << "no list of several boxes accepted";
    EXPECT_GT(f.lists_e2big, 0u) << "no list refused for needing more than 4 boxes";
    f.finish();
    for (const auto& p : f.pins) EXPECT_EQ(p.unpinned, 1) << "pin leaked";
    EXPECT_TRUE(f.nic.violations.empty());
    EXPECT_TRUE(f.nic.live.empty()) << "DMA memory leaked";
    EXPECT_EQ(f.nic.zallocs, f.nic.zfrees) << "core memory leaked";
}

}  // namespace

TEST(CoreFuzz, PolicyJob) {
    run_policy(VELO_POLICY_JOB);
}
TEST(CoreFuzz, PolicyStrict) {
    run_policy(VELO_POLICY_STRICT);
}
TEST(CoreFuzz, PolicyOpen) {
    run_policy(VELO_POLICY_OPEN);
}
