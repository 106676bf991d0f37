// velo-fabric (see fabric.hpp, docs/simulator.md).
//
// One thread. The main loop steps the System one cycle at a time while anything moves; at the
// start of every cycle (System::on_cycle) it takes stores from the clients' channels and posts
// them as TLPs to the node's NIC; every DMA write the NICs make lands in the clients' shared
// memory (each line's header word last, with release semantics) and wakes a waiting client.
// When nothing moves (System::quiet(), no stores) it sleeps in epoll on the control sockets,
// the doorbell eventfd and the signalfd. Control requests run the portable driver core
// (sw/driver/core) against the simulated NIC's registers.
#include "fabric.hpp"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "host.hpp"
#include "system.hpp"
#include "tlp.hpp"
#define VELO_HW_WANT_NAMES
#include "velo/velo_hw.h"
#include "velo/velo_sim_proto.h"
#include "velo/velo_uapi.h"
#include "velo_core.h"

namespace velo::fabric {

using velo::sim::HostReader;
using velo::sim::System;
using velo::sim::SystemConfig;
using velo::sim::Tlp;

class Fabric;

namespace {

volatile bool g_verbose = false;

void logf(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "velo-fabric: ");
    std::vfprintf(stderr, fmt, ap);
    std::fprintf(stderr, "\n");
    va_end(ap);
}

int64_t now_ms() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

void futex_wake(volatile uint32_t* a) {
    syscall(SYS_futex, const_cast<uint32_t*>(a), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

int make_memfd(const char* name, size_t bytes, void** map) {
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return -errno;
    if (ftruncate(fd, static_cast<off_t>(bytes)) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        int e = -errno;
        close(fd);
        return e;
    }
    *map = p;
    return fd;
}

// Clients may map it, but not writable (the fabric's own mapping stays writable).
void seal_readonly(int fd) {
#ifdef F_SEAL_FUTURE_WRITE
    fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE | F_SEAL_SHRINK | F_SEAL_GROW);
#else
    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
#endif
}

struct Endpoint;
struct Client;

// A piece of node memory from the driver core's dma_alloc (a mailbox ring): a memfd.
struct Alloc {
    unsigned node = 0;
    uint64_t dma = 0;
    size_t size = 0;
    int fd = -1;
    uint8_t* p = nullptr;
    Endpoint* ep = nullptr;
    bool data_ring = false;
    bool nq = false;  // an RMA notification queue (32-byte entries, header word first)
};

// RMA: the "physical" frames the fabric gives the pages of registered buffers. They lie far above
// node memory (kFrameBase), are never reused, and each stands for one page of one client's
// address space, reached with process_vm_readv/writev.
constexpr uint64_t kFrameBase = 1ull << 50;  // physical address of the first frame (< 2^52)
struct Frame {
    unsigned node = 0;
    uint64_t client = 0;  // Client::id
    int pid = 0;          // 0: the client is gone (its region never quiesced): DMA is dropped
    uint64_t vpage = 0;   // virtual address of the page in the client
};
// What velo_core_rma_map holds as a region's pin (velo_core_set_rma_unpin gives it back).
struct Pin {
    uint64_t client = 0;
    std::vector<uint64_t> frames;
};

struct NodeCtx {
    Fabric* f;
    unsigned node;
};

// The second piece of a store split on purpose, waiting for other stores to pass it.
struct Deferred {
    bool live = false;
    uint16_t tid = 0;
    int countdown = 0;
    Tlp tlp;
};

struct Endpoint {
    uint64_t id = 0;
    Client* client = nullptr;
    unsigned node = 0;
    unsigned vpid = 0, ctl_vpid = 0;
    const velo_core_ep* core = nullptr;
    int chan_fd = -1;
    velo_sim_chan_hdr* chan = nullptr;
    size_t chan_bytes = 0;
    velo_sim_slot* slots = nullptr;
    uint32_t nslots = 0;
    uint32_t head = 0;
    Alloc* ring = nullptr;
    Alloc* ctl_ring = nullptr;
    Alloc* nq = nullptr;    // RMA notification queue, after RMA_SETUP
    uint64_t rma_page = 0;  // BAR4 offset of the data vpid's command page
    Deferred deferred;
    bool slot_ready() const { return __atomic_load_n(&slots[head & (nslots - 1)].seq, __ATOMIC_ACQUIRE) == head + 1; }
};

struct Client {
    uint64_t id = 0;
    int fd = -1;
    int pid = 0;
    int peer_pid = 0;  // SO_PEERCRED: whose memory RMA DMA reaches
    velo_core_client cl{};
    std::unique_ptr<Endpoint> ep;
};

struct Stats {
    uint64_t stores = 0, bad_stores = 0, splits = 0, dma_writes = 0, dma_unknown = 0, wakeups = 0, freezes = 0,
             freeze_timeouts = 0, clients = 0, client_deaths = 0;
    uint64_t rma_dma_writes = 0, rma_dma_reads = 0, rma_faults = 0, rma_unknown = 0, registers = 0;
};

}  // namespace

class Fabric {
  public:
    explicit Fabric(const Options& o) : opt_(o), rng_(o.seed * 7919 + 17) {}
    ~Fabric();
    int run();

    // driver core ops
    uint32_t reg_read(unsigned node, uint32_t off);
    void reg_write(unsigned node, uint32_t off, uint32_t v);
    void* dma_alloc(unsigned node, size_t size, uint64_t* dma, void** cookie);
    void dma_free(Alloc* a);
    void unpin(Pin* p);

  private:
    bool setup_socket();
    bool setup_system();
    void handle_events(int timeout_ms);
    void accept_clients();
    void on_client(Client* c);
    void drop_client(Client* c, const char* why);
    void teardown(Client* c, bool dead);
    void reply(Client* c, velo_sim_msg& m, const int* fds, int nfds);
    void req_open(Client* c, velo_sim_msg& m);
    void req_grant(Client* c, velo_sim_msg& m);
    void req_ioctl(Client* c, velo_sim_msg& m);
    int rma_pin(Client* c, unsigned region, unsigned key, uint64_t addr, uint64_t len, unsigned access);
    bool mapped(int pid, uint64_t addr, uint64_t len, bool writable);
    void on_rma_write(unsigned node, const Tlp& t);
    bool rma_read(unsigned node, uint64_t a, uint8_t* p, size_t n);
    void rma_fault(const Frame& f, bool write, uint64_t addr, int err);
    void on_cycle();
    bool take_store(Endpoint* e, Tlp& t, uint16_t& tid);
    void post(unsigned node, const Tlp& t);
    void on_dma(unsigned node, const Tlp& t);
    bool any_store_ready() const;
    bool any_deferred() const;
    bool reacting_done();
    void update_info();

    Options opt_;
    std::unique_ptr<System> sys_;
    std::vector<velo_core*> core_;
    std::vector<NodeCtx> ctx_;
    velo_core_ops ops_{};
    std::vector<std::map<uint64_t, Alloc*>> allocs_;  // per node, by DMA address
    std::vector<uint64_t> next_dma_;
    std::vector<std::vector<Endpoint*>> node_eps_;  // per node, round robin
    std::vector<size_t> rr_;
    std::map<int, std::unique_ptr<Client>> clients_;  // by fd
    std::set<Endpoint*> reacting_;
    std::vector<std::unique_ptr<HostReader>> readers_;  // per node: answers the NIC's DMA reads
    std::unordered_map<uint64_t, Frame> frames_;        // RMA frame number -> client page
    uint64_t next_frame_ = kFrameBase >> 12;
    std::set<uint64_t> fault_logged_;  // clients whose RMA DMA faults were logged (once each)
    int64_t freeze_start_ = 0;
    std::mt19937_64 rng_;
    std::string sock_path_, lock_path_;
    int lock_fd_ = -1, listen_fd_ = -1, epfd_ = -1, doorbell_ = -1, sigfd_ = -1, info_fd_ = -1;
    velo_sim_info* info_ = nullptr;
    bool stop_ = false;
    uint64_t next_client_ = 1;
    Stats st_;
    static constexpr size_t kQueue = 2;  // TLPs queued at a node's CPU port at once
};

// ============================================================================ driver core ops
namespace {
uint32_t op_rd(void* c, uint32_t off) {
    auto* x = static_cast<NodeCtx*>(c);
    return x->f->reg_read(x->node, off);
}
void op_wr(void* c, uint32_t off, uint32_t v) {
    auto* x = static_cast<NodeCtx*>(c);
    x->f->reg_write(x->node, off, v);
}
void* op_alloc(void* c, size_t size, uint64_t* dma, void** cookie) {
    auto* x = static_cast<NodeCtx*>(c);
    return x->f->dma_alloc(x->node, size, dma, cookie);
}
void op_free(void* c, void*, size_t, uint64_t, void* cookie) {
    static_cast<NodeCtx*>(c)->f->dma_free(static_cast<Alloc*>(cookie));
}
void* op_zalloc(void*, size_t size) {
    return std::calloc(1, size);
}
void op_kfree(void*, void* p) {
    std::free(p);
}
void op_unpin(void* c, void* pin) {
    static_cast<NodeCtx*>(c)->f->unpin(static_cast<Pin*>(pin));
}
void op_log(void* c, int level, const char* msg) {
    if (level <= VELO_CORE_LOG_WARN || g_verbose) logf("node %u: %s", static_cast<NodeCtx*>(c)->node, msg);
}
}  // namespace

uint32_t Fabric::reg_read(unsigned node, uint32_t off) {
    try {
        return sys_->reg_read(node, off);
    } catch (const std::exception& e) {
        logf("%s", e.what());
        return 0xFFFFFFFFu;
    }
}

void Fabric::reg_write(unsigned node, uint32_t off, uint32_t v) {
    sys_->reg_write(node, off, v);
}

void* Fabric::dma_alloc(unsigned node, size_t size, uint64_t* dma, void** cookie) {
    void* p = nullptr;
    int fd = make_memfd("velo-ring", size, &p);
    if (fd < 0) return nullptr;
    auto* a = new Alloc;
    a->node = node;
    a->size = size;
    a->fd = fd;
    a->p = static_cast<uint8_t*>(p);
    // node memory addresses: above 4 GiB (64-bit DMA), aligned to the size
    uint64_t al = size < 4096 ? 4096 : size;
    uint64_t d = (next_dma_[node] + al - 1) & ~(al - 1);
    next_dma_[node] = d + al;
    a->dma = d;
    allocs_[node][d] = a;
    *dma = d;
    *cookie = a;
    return p;
}

// The core quiesced a region (deregistration, invalidation, endpoint close): no DMA uses its
// frames any more; they are forgotten (never handed out again).
void Fabric::unpin(Pin* p) {
    for (uint64_t f : p->frames) frames_.erase(f);
    delete p;
}

void Fabric::dma_free(Alloc* a) {
    allocs_[a->node].erase(a->dma);
    munmap(a->p, a->size);
    close(a->fd);
    delete a;
}

// ============================================================================ setup
Fabric::~Fabric() {
    for (auto& [fd, c] : clients_) {
        if (c->ep) teardown(c.get(), false);
        close(fd);
    }
    clients_.clear();
    for (auto* c : core_)
        if (c) velo_core_remove(c);
    if (info_) munmap(info_, 4096);
    for (int fd : {info_fd_, doorbell_, sigfd_, epfd_, listen_fd_})
        if (fd >= 0) close(fd);
    if (!sock_path_.empty() && listen_fd_ >= 0) unlink(sock_path_.c_str());
    if (lock_fd_ >= 0) {
        unlink(lock_path_.c_str());
        close(lock_fd_);
    }
}

bool Fabric::setup_socket() {
    char def[256];
    if (opt_.socket.empty()) {
        if (velo_sim_default_socket(def, sizeof def)) {
            logf("socket path too long");
            return false;
        }
        sock_path_ = def;
    } else {
        sock_path_ = opt_.socket;
    }
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (sock_path_.size() >= sizeof sa.sun_path) {
        logf("socket path too long: %s", sock_path_.c_str());
        return false;
    }
    std::strcpy(sa.sun_path, sock_path_.c_str());
    // one fabric per socket path: a lock file decides, and a live socket is never taken over
    lock_path_ = sock_path_ + ".lock";
    lock_fd_ = open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock_fd_ < 0) {
        logf("cannot create %s: %s", lock_path_.c_str(), std::strerror(errno));
        return false;
    }
    if (flock(lock_fd_, LOCK_EX | LOCK_NB) < 0) {
        logf("another fabric serves %s (refusing to start a second one)", sock_path_.c_str());
        close(lock_fd_);
        lock_fd_ = -1;
        return false;
    }
    int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (probe >= 0 && connect(probe, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
        close(probe);
        logf("another fabric serves %s (refusing to start a second one)", sock_path_.c_str());
        close(lock_fd_);
        lock_fd_ = -1;
        return false;
    }
    if (probe >= 0) close(probe);
    unlink(sock_path_.c_str());  // a stale socket of a fabric that died
    listen_fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0 ||
        listen(listen_fd_, 64) < 0) {
        logf("cannot listen on %s: %s", sock_path_.c_str(), std::strerror(errno));
        if (listen_fd_ >= 0) close(listen_fd_);
        listen_fd_ = -1;
        return false;
    }
    chmod(sock_path_.c_str(), 0600);
    return true;
}

bool Fabric::setup_system() {
    SystemConfig sc;
    if (!opt_.topology.empty())
        sc.topology = opt_.topology;
    else if (opt_.nodes == 0 || opt_.nodes == 2)
        sc.topology = "pair";
    else
        sc.topology = "ring:" + std::to_string(opt_.nodes);
    sc.wide = opt_.wide;
    sc.seed = opt_.seed;
    try {
        sys_.reset(new System(sc));
    } catch (const std::exception& e) {
        logf("%s", e.what());
        return false;
    }
    const unsigned n = sys_->nodes();
    if (opt_.nodes && opt_.nodes != n) {
        logf("--nodes %u disagrees with topology %s (%u nodes)", opt_.nodes, sc.topology.c_str(), n);
        return false;
    }
    if (!sys_->init()) {
        logf("links of %s did not come up", sc.topology.c_str());
        return false;
    }
    ops_ = velo_core_ops{op_rd, op_wr, op_alloc, op_free, op_zalloc, op_kfree, op_log, nullptr};
    ctx_.resize(n);
    core_.assign(n, nullptr);
    allocs_.resize(n);
    next_dma_.assign(n, 0x1000000000ull);
    node_eps_.resize(n);
    rr_.assign(n, 0);
    for (unsigned i = 0; i < n; ++i) {
        ctx_[i] = NodeCtx{this, i};
        int r = velo_core_probe(&ops_, &ctx_[i], &core_[i]);
        if (r < 0) {
            logf("node %u: the driver core refuses the NIC (%d)", i, r);
            return false;
        }
        velo_core_refresh(core_[i]);
        velo_core_set_rma_unpin(core_[i], op_unpin);
        if (velo_core_caps(core_[i])->rma_base && velo_core_rma_enable(core_[i], 1) < 0)
            logf("node %u: the RMA unit does not enable", i);
        if (velo_core_caps(core_[i])->node_id != i) {
            logf("node %u: NODE_ID reads %u", i, velo_core_caps(core_[i])->node_id);
            return false;
        }
    }
    sys_->on_cycle = [this] { on_cycle(); };
    sys_->on_dma_write = [this](unsigned node, const Tlp& t) { on_dma(node, t); };
    // the NIC's DMA reads (RMA): answered by the host model's reader (20 cycles, completions
    // split at RCB boundaries, interleaved) from the clients' memory
    readers_.resize(n);
    for (unsigned i = 0; i < n; ++i) {
        readers_[i].reset(new HostReader(opt_.seed * 37 + i));
        readers_[i]->source = [this, i](uint64_t a, uint8_t* p, size_t len) { return rma_read(i, a, p, len); };
        readers_[i]->source_fault = HostReader::Fault::UR;
    }
    sys_->on_dma_read = [this](unsigned node, const Tlp& t) {
        if (!readers_[node]->request(t, sys_->cycle()) && opt_.verbose)
            logf("node %u: malformed DMA read %s", node, t.str().c_str());
    };
    // the info page
    void* p = nullptr;
    info_fd_ = make_memfd("velo-info", 4096, &p);
    if (info_fd_ < 0) return false;
    info_ = static_cast<velo_sim_info*>(p);
    info_->magic = VELO_SIM_MAGIC;
    info_->version = VELO_SIM_VERSION;
    info_->nodes = n;
    info_->node_bits = velo_core_caps(core_[0])->node_bits;
    info_->vpid_bits = velo_core_caps(core_[0])->vpid_bits;
    info_->tlp_bits = sys_->tlp_bits();
    info_->link_bits = sys_->link_bits();
    info_->pid = static_cast<uint32_t>(getpid());
    std::snprintf(info_->topology, sizeof info_->topology, "%s", sc.topology.c_str());
    seal_readonly(info_fd_);
    update_info();
    return true;
}

void Fabric::update_info() {
    __atomic_store_n(&info_->cycle, sys_->cycle(), __ATOMIC_RELEASE);
}

// ============================================================================ stores -> TLPs
bool Fabric::take_store(Endpoint* e, Tlp& t, uint16_t& tid) {
    if (!e->slot_ready()) return false;
    velo_sim_slot& s = e->slots[e->head & (e->nslots - 1)];
    const uint32_t page = s.page;
    const unsigned off = s.off, bytes = s.bytes;
    tid = s.tid;
    std::vector<uint8_t> data(s.data, s.data + (bytes <= 64 ? bytes : 64));
    // hand the slot back for the producer of (head + nslots)
    __atomic_store_n(&s.seq, e->head + e->nslots, __ATOMIC_RELEASE);
    ++e->head;
    __atomic_store_n(&e->chan->head, e->head, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&e->chan->prod_waiters, __ATOMIC_SEQ_CST)) {
        __atomic_store_n(&e->chan->prod_waiters, 0, __ATOMIC_RELAXED);
        futex_wake(&e->chan->head);
    }
    ++st_.stores;
    // what a CPU's write-combining buffer can emit: up to one line, inside a mapped page
    if (bytes == 0 || bytes > 64 || (off & 63) + bytes > 64 || off >= 4096) {
        ++st_.bad_stores;
        return false;
    }
    uint64_t addr;
    uint8_t bar;
    if (page == VELO_SIM_PAGE_RMA) {
        // an RMA command into the vpid's own BAR4 page (mapped once RMA_SETUP succeeded)
        if (!e->nq) {
            ++st_.bad_stores;
            return false;
        }
        addr = System::kBar4 + e->rma_page + off;
        bar = VELO_BAR_RMA;
    } else if (page & VELO_SIM_PAGE_USER) {
        const unsigned k = page & ~VELO_SIM_PAGE_USER;
        if (k > 1) {
            ++st_.bad_stores;
            return false;
        }
        addr = System::kBar0 + (k ? e->core->ctl_user_page_off : e->core->user_page_off) + off;
        bar = VELO_BAR_REGS;
    } else {
        const velo_core_grant_ent* g = velo_core_grant_get(core_[e->node], e->vpid, page);
        if (!g) {
            // a store to a page the process never got mapped: a real CPU would fault
            ++st_.bad_stores;
            if (opt_.verbose) logf("client %d: store to an unmapped page %u dropped", e->client->pid, page);
            return false;
        }
        addr = System::kBar2 + g->window_off + off;
        bar = VELO_BAR_SEND;
    }
    t = Tlp::mwr(addr, data, bar);
    // a partial flush on purpose, as an interrupted thread's write-combining buffer makes it:
    // cut between two of the sender's quadword stores; the first piece now, the rest after up to
    // three other stores
    if (bar == VELO_BAR_SEND && opt_.split_rate > 0 && !e->deferred.live) {
        const unsigned len = ((off >> 6) & 63) + 1, o = off & 63;
        const unsigned k = o < len ? std::min(bytes, len - o) : 0;
        const unsigned g = opt_.split_bytes ? 1 : 8;    // byte stores or quadword stores
        const unsigned ncut = k > g ? (k - 1) / g : 0;  // store boundaries inside the message
        if (ncut && std::uniform_real_distribution<double>(0, 1)(rng_) < opt_.split_rate) {
            const unsigned cut = g * (1 + static_cast<unsigned>(rng_() % ncut));
            t = Tlp::mwr(addr, std::vector<uint8_t>(data.begin(), data.begin() + cut), bar);
            e->deferred.live = true;
            e->deferred.tid = tid;
            e->deferred.countdown = static_cast<int>(rng_() % 4);
            e->deferred.tlp = Tlp::mwr(addr + cut, std::vector<uint8_t>(data.begin() + cut, data.end()), bar);
            ++st_.splits;
            if (opt_.verbose)
                logf("split: message of %u bytes, store at %u of %u bytes, cut at +%u", len, o, bytes, cut);
        }
    }
    return true;
}

void Fabric::post(unsigned node, const Tlp& t) {
    sys_->cpu_post(node, t);
    // other stores passing a deferred piece
    for (Endpoint* e : node_eps_[node])
        if (e->deferred.live && e->deferred.countdown > 0) --e->deferred.countdown;
}

// Start of every simulated cycle: the CPUs of the nodes issue the clients' stores.
void Fabric::on_cycle() {
    // the root complex answers the NICs' reads (completions go down in order with the stores)
    for (unsigned n = 0; n < readers_.size(); ++n) {
        Tlp c;
        while (readers_[n]->pop(sys_->cycle(), c)) sys_->cpu_post(n, c);
    }
    for (unsigned n = 0; n < node_eps_.size(); ++n) {
        auto& eps = node_eps_[n];
        if (eps.empty()) continue;
        while (sys_->cpu_queued(n) < kQueue) {
            bool any = false;
            for (size_t k = 0; k < eps.size() && sys_->cpu_queued(n) < kQueue; ++k) {
                Endpoint* e = eps[(rr_[n] + k) % eps.size()];
                Deferred& d = e->deferred;
                // the deferred piece goes before its own thread's next store, when enough other
                // stores passed, or when its channel has nothing else
                if (d.live) {
                    const bool own_next = e->slot_ready() && e->slots[e->head & (e->nslots - 1)].tid == d.tid;
                    if (d.countdown == 0 || own_next || !e->slot_ready()) {
                        d.live = false;
                        post(n, d.tlp);
                        any = true;
                        continue;
                    }
                }
                Tlp t;
                uint16_t tid;
                if (take_store(e, t, tid)) {
                    post(n, t);
                    any = true;
                }
            }
            rr_[n] = (rr_[n] + 1) % eps.size();
            if (!any) break;
        }
    }
    __atomic_store_n(&info_->cycle, sys_->cycle(), __ATOMIC_RELAXED);
}

bool Fabric::any_store_ready() const {
    for (auto& eps : node_eps_)
        for (Endpoint* e : eps)
            if (e->slot_ready()) return true;
    return false;
}

bool Fabric::any_deferred() const {
    for (auto& eps : node_eps_)
        for (Endpoint* e : eps)
            if (e->deferred.live) return true;
    return false;
}

// ============================================================================ DMA -> shared memory
void Fabric::on_dma(unsigned node, const Tlp& t) {
    ++st_.dma_writes;
    if (t.addr >= kFrameBase) return on_rma_write(node, t);
    const auto bytes = velo::sim::mwr_bytes(t);
    if (bytes.empty()) return;
    auto& m = allocs_[node];
    auto it = m.upper_bound(bytes.front().first);
    if (it == m.begin()) {
        ++st_.dma_unknown;
        return;
    }
    --it;
    Alloc* a = it->second;
    if (bytes.front().first < a->dma || bytes.back().first >= a->dma + a->size) {
        ++st_.dma_unknown;
        if (opt_.verbose) logf("node %u: DMA write outside node memory dropped (%s)", node, t.str().c_str());
        return;
    }
    // lines in descending order (a two-line entry's second line first); in each line the bytes
    // after the header word first, then the header word with release semantics, so a reader
    // that acquires the header sees the whole line. A notification queue's entries are 32 bytes,
    // each with its own header word: the same per entry.
    const uint64_t unit = a->nq ? VELO_RMA_NQ_ENTRY_BYTES : 64;
    size_t i = bytes.size();
    while (i > 0) {
        const uint64_t line = bytes[i - 1].first & ~(unit - 1);
        size_t j = i;
        while (j > 0 && (bytes[j - 1].first & ~(unit - 1)) == line) --j;
        uint8_t* lp = a->p + (line - a->dma);
        bool hdr = false;
        uint8_t word[8];
        std::memcpy(word, lp, 8);
        for (size_t k = j; k < i; ++k) {
            const unsigned o = static_cast<unsigned>(bytes[k].first - line);
            if (o < 8) {
                word[o] = bytes[k].second;
                hdr = true;
            } else {
                lp[o] = bytes[k].second;
            }
        }
        if (hdr) {
            uint64_t w;
            std::memcpy(&w, word, 8);
            __atomic_store_n(reinterpret_cast<uint64_t*>(lp), w, __ATOMIC_RELEASE);
        }
        i = j;
    }
    Endpoint* e = a->ep;
    if (!e) return;
    velo_sim_chan_hdr* ch = e->chan;
    // (rx_seq counts writes into the rings and the notification queue: both wake velo_*wait)
    if (a->data_ring) __atomic_store_n(&ch->rx_cycle, sys_->cycle(), __ATOMIC_RELEASE);
    __atomic_add_fetch(&ch->rx_seq, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&ch->rx_waiters, __ATOMIC_SEQ_CST)) {
        __atomic_store_n(&ch->rx_waiters, 0, __ATOMIC_RELAXED);
        futex_wake(&ch->rx_seq);
        ++st_.wakeups;
        // the woken client reacts in no simulated time: hold the clock until it stores or
        // waits again (bounded by sync_timeout_ms)
        if (opt_.sync_timeout_ms > 0) {
            if (reacting_.empty()) freeze_start_ = now_ms();
            reacting_.insert(e);
        }
    }
}

// ============================================================================ RMA DMA -> client memory
void Fabric::rma_fault(const Frame& f, bool write, uint64_t addr, int err) {
    ++st_.rma_faults;
    if (fault_logged_.insert(f.client).second)
        logf(
            "node %u: RMA DMA %s of pid %d's registered memory at 0x%llx failed (%s): %s; further faults of "
            "this client are only counted",
            f.node, write ? "write" : "read", f.pid, static_cast<unsigned long long>(addr),
            f.pid ? std::strerror(err) : "client gone",
            write ? "the write is dropped" : "the read is answered with UR");
}

// A NIC's DMA write into registered memory (put target, get destination): one TLP never crosses
// a page (the NIC splits at page ends), so it goes to one page of one client.
void Fabric::on_rma_write(unsigned node, const Tlp& t) {
    ++st_.rma_dma_writes;
    const auto bytes = velo::sim::mwr_bytes(t);
    if (bytes.empty()) return;
    size_t i = 0;
    while (i < bytes.size()) {
        const uint64_t a0 = bytes[i].first;
        std::vector<uint8_t> run;
        size_t j = i;
        while (j < bytes.size() && bytes[j].first == a0 + run.size() && (bytes[j].first >> 12) == (a0 >> 12))
            run.push_back(bytes[j++].second);
        i = j;
        auto it = frames_.find(a0 >> 12);
        if (it == frames_.end() || it->second.node != node) {
            ++st_.rma_unknown;
            if (opt_.verbose) logf("node %u: DMA write to an unknown frame dropped (%s)", node, t.str().c_str());
            continue;
        }
        const Frame& f = it->second;
        const uint64_t va = f.vpage + (a0 & 4095);
        if (!f.pid) {
            rma_fault(f, true, va, 0);
            continue;
        }
        iovec l{run.data(), run.size()};
        iovec r{reinterpret_cast<void*>(va), run.size()};
        if (process_vm_writev(f.pid, &l, 1, &r, 1, 0) != static_cast<ssize_t>(run.size()))
            rma_fault(f, true, va, errno);
    }
}

// The data of a NIC's DMA read (put source, get source at the target): registered memory of a
// client, or node memory (rings). false: nothing there (the reader answers UR).
bool Fabric::rma_read(unsigned node, uint64_t a, uint8_t* p, size_t n) {
    ++st_.rma_dma_reads;
    if (a >= kFrameBase) {
        auto it = frames_.find(a >> 12);
        if (it == frames_.end() || it->second.node != node || (a & 4095) + n > 4096) {
            ++st_.rma_unknown;
            if (opt_.verbose) logf("node %u: DMA read of an unknown frame at 0x%llx", node, (unsigned long long)a);
            return false;
        }
        const Frame& f = it->second;
        const uint64_t va = f.vpage + (a & 4095);
        if (!f.pid) {
            rma_fault(f, false, va, 0);
            return false;
        }
        iovec l{p, n};
        iovec r{reinterpret_cast<void*>(va), n};
        if (process_vm_readv(f.pid, &l, 1, &r, 1, 0) != static_cast<ssize_t>(n)) {
            rma_fault(f, false, va, errno);
            return false;
        }
        return true;
    }
    auto& m = allocs_[node];
    auto it = m.upper_bound(a);
    if (it == m.begin()) return false;
    --it;
    Alloc* al = it->second;
    if (a < al->dma || a + n > al->dma + al->size) return false;
    std::memcpy(p, al->p + (a - al->dma), n);
    return true;
}

bool Fabric::reacting_done() {
    for (auto it = reacting_.begin(); it != reacting_.end();) {
        Endpoint* e = *it;
        if (e->slot_ready() || __atomic_load_n(&e->chan->rx_waiters, __ATOMIC_SEQ_CST))
            it = reacting_.erase(it);
        else
            ++it;
    }
    return reacting_.empty();
}

// ============================================================================ control plane
void Fabric::reply(Client* c, velo_sim_msg& m, const int* fds, int nfds) {
    m.magic = VELO_SIM_MAGIC;
    m.version = VELO_SIM_VERSION;
    iovec iov{&m, sizeof m};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    char cbuf[CMSG_SPACE(sizeof(int) * VELO_SIM_OPEN_NFDS)];
    if (nfds > 0) {
        std::memset(cbuf, 0, sizeof cbuf);
        mh.msg_control = cbuf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * static_cast<size_t>(nfds));
        cmsghdr* cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * static_cast<size_t>(nfds));
        std::memcpy(CMSG_DATA(cm), fds, sizeof(int) * static_cast<size_t>(nfds));
    }
    if (sendmsg(c->fd, &mh, MSG_NOSIGNAL) < 0 && opt_.verbose) logf("reply to %d: %s", c->pid, std::strerror(errno));
}

void Fabric::req_open(Client* c, velo_sim_msg& m) {
    if (c->ep) {
        m.status = -EBUSY;
        std::snprintf(m.text, sizeof m.text, "this connection has an endpoint already");
        return reply(c, m, nullptr, 0);
    }
    const int64_t node = m.arg[0], vpid = m.arg[1], log2 = m.arg[2], ctl_log2 = m.arg[3];
    c->pid = static_cast<int>(m.arg[4]);
    if (node < 0 || node >= static_cast<int64_t>(core_.size())) {
        m.status = -EADDRNOTAVAIL;
        std::snprintf(m.text, sizeof m.text, "no node %lld (the fabric has %zu)", static_cast<long long>(node),
                      core_.size());
        return reply(c, m, nullptr, 0);
    }
    if (log2 < VELO_RING_LOG2_MIN || log2 > VELO_MBOX_LOG2_MAX || ctl_log2 < VELO_RING_LOG2_MIN ||
        ctl_log2 > VELO_MBOX_LOG2_MAX || vpid < -1 || vpid > 255) {
        m.status = -EINVAL;
        return reply(c, m, nullptr, 0);
    }
    velo_core_ep_params p{};
    p.vpid = static_cast<int>(vpid);
    p.log2_lines = static_cast<unsigned>(log2);
    p.ctl_log2_lines = static_cast<unsigned>(ctl_log2);
    p.owner = c->id;
    const velo_core_ep* ce = nullptr;
    int r = velo_core_ep_open(core_[node], &p, &ce);
    if (r < 0) {
        m.status = r;
        return reply(c, m, nullptr, 0);
    }
    auto e = std::make_unique<Endpoint>();
    e->id = c->id;
    e->client = c;
    e->node = static_cast<unsigned>(node);
    e->vpid = ce->vpid;
    e->ctl_vpid = ce->ctl_vpid;
    e->core = ce;
    e->ring = static_cast<Alloc*>(ce->ring_cookie);
    e->ctl_ring = static_cast<Alloc*>(ce->ctl_ring_cookie);
    e->ring->ep = e.get();
    e->ring->data_ring = true;
    e->ctl_ring->ep = e.get();
    e->nslots = VELO_SIM_CHAN_NSLOTS;
    e->chan_bytes = VELO_SIM_CHAN_BYTES(e->nslots);
    void* cp = nullptr;
    e->chan_fd = make_memfd("velo-chan", e->chan_bytes, &cp);
    if (e->chan_fd < 0) {
        velo_core_ep_close(core_[node], ce->vpid);
        m.status = -ENOMEM;
        return reply(c, m, nullptr, 0);
    }
    e->chan = static_cast<velo_sim_chan_hdr*>(cp);
    e->chan->magic = VELO_SIM_MAGIC;
    e->chan->nslots = e->nslots;
    e->chan->endpoint = static_cast<uint32_t>(e->id);
    e->slots = reinterpret_cast<velo_sim_slot*>(static_cast<uint8_t*>(cp) + VELO_SIM_CHAN_SLOTS_OFF);
    for (uint32_t i = 0; i < e->nslots; ++i) e->slots[i].seq = i;
    seal_readonly(e->ring->fd);
    seal_readonly(e->ctl_ring->fd);
    m.status = 0;
    m.arg[0] = node;
    m.arg[1] = ce->vpid;
    m.arg[2] = ce->ctl_vpid;
    m.arg[3] = velo_core_caps(core_[node])->node_bits;
    m.arg[4] = velo_core_caps(core_[node])->vpid_bits;
    m.arg[5] = static_cast<int64_t>(core_.size());
    m.arg[6] = e->nslots;
    m.arg[7] = ce->log2_lines;
    m.arg[8] = ce->ctl_log2_lines;
    const int fds[VELO_SIM_OPEN_NFDS] = {info_fd_, doorbell_, e->chan_fd, e->ring->fd, e->ctl_ring->fd};
    node_eps_[node].push_back(e.get());
    c->cl.vpid = static_cast<int>(ce->vpid);
    if (opt_.verbose) logf("pid %d: endpoint node %lld vpid %u", c->pid, static_cast<long long>(node), ce->vpid);
    c->ep = std::move(e);
    reply(c, m, fds, VELO_SIM_OPEN_NFDS);
}

void Fabric::req_grant(Client* c, velo_sim_msg& m) {
    if (!c->ep) {
        m.status = -EBADF;
        return reply(c, m, nullptr, 0);
    }
    const int64_t from = m.arg[0], dnode = m.arg[1], dvpid = m.arg[2];
    if (dnode < 0 || dnode >= static_cast<int64_t>(core_.size())) {
        m.status = dnode < 256 && dnode >= 0 ? -EADDRNOTAVAIL : -EINVAL;
        std::snprintf(m.text, sizeof m.text, "no node %lld", static_cast<long long>(dnode));
        return reply(c, m, nullptr, 0);
    }
    if (dvpid < 0 || dvpid > 255 || from < 0 || from > 1) {
        m.status = -EINVAL;
        return reply(c, m, nullptr, 0);
    }
    // the fabric sees the whole cluster: refuse destinations where nobody listens (a real
    // driver cannot know; there the connection request times out)
    const unsigned vb = velo_core_caps(core_[dnode])->vpid_bits;
    const unsigned data_vpid = static_cast<unsigned>(dvpid) & ~VELO_CTL_VPID_BIT(vb);
    if (!velo_core_ep_find(core_[dnode], data_vpid)) {
        m.status = -ECONNREFUSED;
        std::snprintf(m.text, sizeof m.text, "no endpoint at node %lld vpid %u", static_cast<long long>(dnode),
                      data_vpid);
        return reply(c, m, nullptr, 0);
    }
    uint64_t off = 0;
    int r = velo_core_grant(core_[c->ep->node], c->ep->vpid, static_cast<unsigned>(from), static_cast<unsigned>(dnode),
                            static_cast<unsigned>(dvpid), &off);
    m.status = r < 0 ? r : 0;
    if (r >= 0) {
        m.arg[0] = r;
        m.arg[1] = static_cast<int64_t>(off & 0xFFFFFFFFu);
        m.arg[2] = static_cast<int64_t>(off >> 32);
    }
    reply(c, m, nullptr, 0);
}

// ============================================================================ RMA control
// Are the pages of [addr, addr + len) mapped in process pid, readable (and writable)? What
// pinning them would find (a real driver's pin_user_pages); from /proc/<pid>/maps.
bool Fabric::mapped(int pid, uint64_t addr, uint64_t len, bool writable) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/maps", pid);
    FILE* fp = std::fopen(path, "re");
    if (!fp) return false;
    uint64_t cur = addr & ~4095ull;
    const uint64_t end = (addr + len + 4095) & ~4095ull;
    char line[512];
    while (cur < end && std::fgets(line, sizeof line, fp)) {
        unsigned long long lo = 0, hi = 0;
        char perms[8] = {0};
        if (std::sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) != 3) continue;
        if (hi <= cur) continue;
        if (lo > cur) break;  // a hole
        if (perms[0] != 'r' || (writable && perms[1] != 'w')) break;
        cur = hi;
    }
    std::fclose(fp);
    return cur >= end;
}

// "Pin" region `region` (key) of client c: check the pages are there, give each a frame, and make
// the region valid through the driver core (velo_core_rma_map), as the Linux driver does after
// pin_user_pages. On error nothing is kept.
int Fabric::rma_pin(Client* c, unsigned region, unsigned key, uint64_t addr, uint64_t len, unsigned access) {
    const bool writable = access & (VELO_REG_LOCAL_WRITE | VELO_REG_REMOTE_WRITE);
    if (!c->peer_pid || !mapped(c->peer_pid, addr, len, writable)) return -EFAULT;
    const uint64_t npages = velo_core_rma_pages(addr, len);
    auto* p = new Pin;
    p->client = c->id;
    p->frames.reserve(npages);
    for (uint64_t i = 0; i < npages; ++i) {
        const uint64_t f = next_frame_++;
        frames_[f] = Frame{c->ep->node, c->id, c->peer_pid, (addr & ~4095ull) + i * 4096};
        p->frames.push_back(f);
    }
    const int r = velo_core_rma_map(core_[c->ep->node], region, key, p->frames.data(), npages, p);
    if (r < 0) unpin(p);
    return r;
}

// VELO_SIM_IOCTL: the driver ABI's RMA requests, carried out by the driver core as the Linux
// driver's ioctls are (docs/simulator.md "RMA").
void Fabric::req_ioctl(Client* c, velo_sim_msg& m) {
    if (!c->ep) {
        m.status = -EBADF;
        return reply(c, m, nullptr, 0);
    }
    const int64_t nr = m.arg[0];
    uint32_t minsz = 0, ksz = 0;
    union {
        velo_uapi_rma_setup st;
        velo_uapi_register rg;
        velo_uapi_deregister dr;
        velo_uapi_repin rp;
    } u;
    std::memset(&u, 0, sizeof u);
    uint32_t argsz;
    std::memcpy(&argsz, m.text, 4);
    if ((nr != VELO_IOC_NR_RMA_SETUP && nr != VELO_IOC_NR_REGISTER && nr != VELO_IOC_NR_DEREGISTER &&
         nr != VELO_IOC_NR_REPIN) ||
        velo_core_uapi_size(static_cast<unsigned>(nr), &minsz, &ksz) < 0 || ksz > sizeof u || argsz < minsz) {
        m.status = -EINVAL;
        return reply(c, m, nullptr, 0);
    }
    std::memcpy(&u, m.text, std::min<size_t>(ksz, sizeof m.text));
    u.st.argsz = ksz;
    Endpoint* e = c->ep.get();
    velo_core* core = core_[e->node];
    int r = velo_core_ioctl(core, &c->cl, static_cast<unsigned>(nr), &u);
    int fd = -1;
    if (r == 0 && nr == VELO_IOC_NR_RMA_SETUP) {
        // the queue: node memory from the core's dma_alloc, which the NIC writes and the client
        // maps read-only; the command page: the vpid's BAR4 page, as the core's mmap check says
        velo_core_map map{};
        r = velo_core_mmap_check(core, &c->cl, VELO_MMAP_RMA_CMD, 4096, VELO_CORE_MAP_WRITE | VELO_CORE_MAP_SHARED,
                                 &map);
        if (r == 0) {
            e->nq = static_cast<Alloc*>(e->core->nq_cookie);
            e->nq->ep = e;
            e->nq->nq = true;
            e->rma_page = map.bar_off;
            seal_readonly(e->nq->fd);
            fd = e->nq->fd;
        }
    } else if (r == 0 && nr == VELO_IOC_NR_REGISTER) {
        ++st_.registers;
        r = rma_pin(c, u.rg.region, u.rg.key, u.rg.addr, u.rg.len, u.rg.flags);
        if (r < 0) {  // undo the declaration
            velo_uapi_deregister d{};
            d.argsz = sizeof d;
            d.nla = u.rg.nla;
            velo_core_ioctl(core, &c->cl, VELO_IOC_NR_DEREGISTER, &d);
        }
    } else if (r == 0 && nr == VELO_IOC_NR_REPIN && u.rp.out_repinned) {
        const unsigned idx = static_cast<unsigned>(VELO_FIELD_GET(VELO_RMA_NLA_REGION, u.rp.nla));
        const velo_core_region* g = velo_core_rma_region(core, idx);
        r = g ? rma_pin(c, idx, g->key, g->addr, g->len, g->access) : -ENOENT;
    }
    m.status = r < 0 ? r : 0;
    if (r == 0) std::memcpy(m.text, &u, std::min<size_t>(ksz, sizeof m.text));
    reply(c, m, fd >= 0 ? &fd : nullptr, fd >= 0 ? 1 : 0);
}

// Close a client's endpoint: it leaves the round robin, its vpids are disabled and quiesced by
// the driver core before the ring memory is freed.
void Fabric::teardown(Client* c, bool dead) {
    Endpoint* e = c->ep.get();
    if (!e) return;
    auto& v = node_eps_[e->node];
    v.erase(std::remove(v.begin(), v.end(), e), v.end());
    rr_[e->node] = 0;
    reacting_.erase(e);
    e->ring->ep = nullptr;
    e->ctl_ring->ep = nullptr;
    if (e->nq) e->nq->ep = nullptr;
    // the core releases the endpoint's regions (invalidate, quiesce, unpin: their frames are
    // forgotten) and closes both vpids with the quiesce barrier; the NIC keeps running meanwhile
    // (DMA of transfers in flight into the client's memory still lands, or faults if it is gone)
    int r = velo_core_ep_close(core_[e->node], e->vpid);
    if (r < 0) logf("node %u vpid %u: close failed (%d); its memory is not reused", e->node, e->vpid, r);
    // frames of regions the NIC never quiesced stay (so no other DMA gets them), but reach nobody
    for (auto& [fn, f] : frames_)
        if (f.client == c->id) f.pid = 0;
    munmap(e->chan, e->chan_bytes);
    close(e->chan_fd);
    if (opt_.verbose || dead)
        logf("pid %d: endpoint node %u vpid %u %s", c->pid, e->node, e->vpid,
             dead ? "torn down (client gone)" : "closed");
    c->ep.reset();
}

void Fabric::drop_client(Client* c, const char* why) {
    ++st_.client_deaths;
    (void)why;
    teardown(c, true);
    epoll_ctl(epfd_, EPOLL_CTL_DEL, c->fd, nullptr);
    close(c->fd);
    clients_.erase(c->fd);
}

void Fabric::accept_clients() {
    for (;;) {
        int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) return;
        auto c = std::make_unique<Client>();
        c->id = next_client_++;
        c->fd = fd;
        ucred uc{};
        socklen_t ul = sizeof uc;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &ul) == 0) c->peer_pid = uc.pid;
        velo_core_client_init(&c->cl, c->id, static_cast<uint32_t>(c->peer_pid), 0, 0);
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLRDHUP;
        ev.data.fd = fd;
        epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
        clients_[fd] = std::move(c);
        ++st_.clients;
    }
}

void Fabric::on_client(Client* c) {
    for (;;) {
        velo_sim_msg m;
        ssize_t n = recv(c->fd, &m, sizeof m, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
        if (n <= 0) {
            if (c->ep) {
                drop_client(c, "gone");
            } else {
                epoll_ctl(epfd_, EPOLL_CTL_DEL, c->fd, nullptr);
                close(c->fd);
                clients_.erase(c->fd);
            }
            return;
        }
        if (static_cast<size_t>(n) != sizeof m || m.magic != VELO_SIM_MAGIC || m.version != VELO_SIM_VERSION) {
            // another protocol version: say so once, then hang up
            velo_sim_msg r{};
            r.type = static_cast<size_t>(n) >= 8 ? m.type : 0;
            r.seq = static_cast<size_t>(n) >= 12 ? m.seq : 0;
            r.status = -EPROTO;
            std::snprintf(r.text, sizeof r.text, "fabric protocol %d expected", VELO_SIM_VERSION);
            reply(c, r, nullptr, 0);
            drop_client(c, "protocol");
            return;
        }
        if (m.type != VELO_SIM_IOCTL) std::memset(m.text, 0, sizeof m.text);  // (IOCTL: its structure)
        switch (m.type) {
            case VELO_SIM_OPEN:
                req_open(c, m);
                break;
            case VELO_SIM_GRANT:
                req_grant(c, m);
                break;
            case VELO_SIM_REVOKE:
                m.status =
                    c->ep ? velo_core_revoke(core_[c->ep->node], c->ep->vpid, static_cast<unsigned>(m.arg[0])) : -EBADF;
                reply(c, m, nullptr, 0);
                break;
            case VELO_SIM_CLOSE: {
                // the client's last stores are taken already (it waited for its channel to drain);
                // let them out of the CPU port before the quiesce
                if (c->ep) {
                    Endpoint* e = c->ep.get();
                    for (int k = 0; k < 1000000 && (e->deferred.live || e->slot_ready()); ++k) sys_->step(1);
                }
                teardown(c, false);
                m.status = 0;
                reply(c, m, nullptr, 0);
                break;
            }
            case VELO_SIM_INFO: {
                size_t eps = 0;
                for (auto& v : node_eps_) eps += v.size();
                m.status = 0;
                m.arg[0] = static_cast<int64_t>(core_.size());
                m.arg[1] = info_->node_bits;
                m.arg[2] = info_->vpid_bits;
                m.arg[3] = info_->tlp_bits;
                m.arg[4] = info_->link_bits;
                m.arg[5] = static_cast<int64_t>(clients_.size());
                m.arg[6] = static_cast<int64_t>(eps);
                m.arg[7] = static_cast<int64_t>(sys_->cycle() & 0xFFFFFFFFu);
                m.arg[8] = static_cast<int64_t>(sys_->cycle() >> 32);
                m.arg[9] = static_cast<int64_t>(st_.stores);
                m.arg[10] = static_cast<int64_t>(st_.splits);
                m.arg[11] = static_cast<int64_t>(st_.bad_stores);
                std::snprintf(m.text, sizeof m.text, "%s", info_->topology);
                reply(c, m, nullptr, 0);
                break;
            }
            case VELO_SIM_IOCTL:
                req_ioctl(c, m);
                break;
            case VELO_SIM_SHUTDOWN:
                m.status = 0;
                reply(c, m, nullptr, 0);
                stop_ = true;
                break;
            default:
                m.status = -EINVAL;
                reply(c, m, nullptr, 0);
        }
        if (clients_.find(c->fd) == clients_.end()) return;
    }
}

void Fabric::handle_events(int timeout_ms) {
    epoll_event ev[32];
    int n = epoll_wait(epfd_, ev, 32, timeout_ms);
    for (int i = 0; i < n; ++i) {
        const int fd = ev[i].data.fd;
        if (fd == listen_fd_) {
            accept_clients();
        } else if (fd == doorbell_) {
            uint64_t v;
            while (read(doorbell_, &v, sizeof v) > 0) {
            }
        } else if (fd == sigfd_) {
            signalfd_siginfo si;
            while (read(sigfd_, &si, sizeof si) > 0) {
                if (opt_.verbose) logf("signal %u: exiting", si.ssi_signo);
                stop_ = true;
            }
        } else {
            auto it = clients_.find(fd);
            if (it != clients_.end()) on_client(it->second.get());
        }
    }
}

// ============================================================================ main loop
int Fabric::run() {
    g_verbose = opt_.verbose;
    // signals first, so that a SIGTERM during start-up is not lost
    sigset_t ss;
    sigemptyset(&ss);
    sigaddset(&ss, SIGINT);
    sigaddset(&ss, SIGTERM);
    sigprocmask(SIG_BLOCK, &ss, nullptr);
    sigfd_ = signalfd(-1, &ss, SFD_CLOEXEC | SFD_NONBLOCK);
    signal(SIGPIPE, SIG_IGN);
    if (!setup_socket()) return 2;
    if (!setup_system()) return 1;
    doorbell_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    for (int fd : {listen_fd_, doorbell_, sigfd_}) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = fd;
        epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
    }
    logf("%u nodes (%s, TLP %u bits, link %u bits) at %s", sys_->nodes(), info_->topology, sys_->tlp_bits(),
         sys_->link_bits(), sock_path_.c_str());
    if (opt_.ready_fd >= 0) {
        if (write(opt_.ready_fd, "ready\n", 6) < 0) {
        }
        close(opt_.ready_fd);
    }
    uint64_t iter = 0;
    while (!stop_) {
        if ((++iter & 255) == 0) handle_events(0);
        if (stop_) break;
        if (!reacting_.empty()) {
            if (!reacting_done()) {
                const int64_t left = opt_.sync_timeout_ms - (now_ms() - freeze_start_);
                if (left > 0) {
                    ++st_.freezes;
                    __atomic_store_n(&info_->frozen, 1, __ATOMIC_SEQ_CST);
                    __atomic_store_n(&info_->sleeping, 1, __ATOMIC_SEQ_CST);
                    if (!reacting_done()) handle_events(static_cast<int>(std::min<int64_t>(left, 10)));
                    __atomic_store_n(&info_->sleeping, 0, __ATOMIC_SEQ_CST);
                    continue;
                }
                ++st_.freeze_timeouts;
                reacting_.clear();
            }
            __atomic_store_n(&info_->frozen, 0, __ATOMIC_SEQ_CST);
        }
        if (sys_->quiet() && !any_deferred() && !any_store_ready() &&
            std::all_of(readers_.begin(), readers_.end(), [](const auto& r) { return r->idle(); })) {
            // nothing moves: sleep until a store, a request or a signal
            __atomic_store_n(&info_->sleeping, 1, __ATOMIC_SEQ_CST);
            if (!any_store_ready()) handle_events(-1);
            __atomic_store_n(&info_->sleeping, 0, __ATOMIC_SEQ_CST);
            continue;
        }
        sys_->step(1);
    }
    update_info();
    for (auto& e : sys_->errors()) logf("TLP protocol: %s", e.c_str());
    for (auto& r : readers_)
        for (auto& e : r->errors) logf("DMA read: %s", e.c_str());
    if (st_.registers || st_.rma_faults || st_.rma_unknown)
        logf(
            "RMA: %llu registrations, %llu DMA writes and %llu reads of registered memory, %llu faults, %llu to "
            "unknown frames",
            static_cast<unsigned long long>(st_.registers), static_cast<unsigned long long>(st_.rma_dma_writes),
            static_cast<unsigned long long>(st_.rma_dma_reads), static_cast<unsigned long long>(st_.rma_faults),
            static_cast<unsigned long long>(st_.rma_unknown));
    if (opt_.verbose) {
        // what the NICs counted (drops by reason)
        for (unsigned n = 0; n < core_.size(); ++n) {
            const uint32_t base = velo_core_caps(core_[n])->counters_base - VELO_BLK_COUNTERS_BASE;
            for (unsigned i = 0; i < VELO_CNT_NUM; ++i) {
                uint32_t v = reg_read(n, VELO_REG_COUNTERS_COUNTER_BASE + base + 4 * i);
                if (v) logf("node %u: %s = %u", n, velo_counter_names[i], v);
            }
            for (unsigned i = 0; i < VELO_RMA_CNT_NUM; ++i) {
                const uint32_t v = velo_core_rma_counter(core_[n], i);
                if (v) logf("node %u: rma %s = %u", n, velo_rma_counter_names[i], v);
            }
        }
    }
    logf("exit after %llu cycles: %llu stores (%llu split, %llu refused), %llu DMA writes, %llu clients (%llu died)",
         static_cast<unsigned long long>(sys_->cycle()), static_cast<unsigned long long>(st_.stores),
         static_cast<unsigned long long>(st_.splits), static_cast<unsigned long long>(st_.bad_stores),
         static_cast<unsigned long long>(st_.dma_writes), static_cast<unsigned long long>(st_.clients),
         static_cast<unsigned long long>(st_.client_deaths));
    return 0;
}

// ============================================================================ options
const char* usage() {
    return "usage: velo-fabric [--nodes N] [--topology pair|ring:N|torus:XxY] [--socket PATH]\n"
           "                   [--split-rate P [--split-bytes]] [--seed S] [--sync-timeout-ms MS] [--wide]\n"
           "                   [--ready-fd FD] [--verbose]\n"
           "Serves a simulated VELO cluster (Verilated NICs) to programs using libvelo:\n"
           "  VELO_DEVICE=sim:PATH VELO_NODE=<node> ./program\n"
           "Default socket: $XDG_RUNTIME_DIR/velo-fabric.sock, else /tmp/velo-fabric-<uid>.sock.\n"
           "  --split-rate P        flush that fraction of stores as two pieces (fragments), cut\n"
           "                        between two quadword stores (--split-bytes: at any byte)\n"
           "  --sync-timeout-ms MS  simulated time stands while a woken client reacts (0: off)\n";
}

bool parse_options(int argc, char** argv, Options& o, std::string& err) {
    for (int i = 0; i < argc; ++i) {
        std::string a = argv[i];
        auto val = [&](const char* name) -> const char* {
            if (i + 1 >= argc) {
                err = std::string(name) + " needs a value";
                return nullptr;
            }
            return argv[++i];
        };
        auto num = [&](const char* s, double lo, double hi, double& out) {
            char* end = nullptr;
            out = std::strtod(s, &end);
            if (!*s || *end || out < lo || out > hi) {
                err = "bad value for " + a + ": " + s;
                return false;
            }
            return true;
        };
        double d;
        const char* v;
        if (a == "--nodes" || a == "-n") {
            if (!(v = val("--nodes")) || !num(v, 2, 256, d)) return false;
            o.nodes = static_cast<unsigned>(d);
        } else if (a == "--topology" || a == "-t") {
            if (!(v = val("--topology"))) return false;
            o.topology = v;
        } else if (a == "--socket" || a == "-s") {
            if (!(v = val("--socket"))) return false;
            o.socket = v;
        } else if (a == "--split-rate") {
            if (!(v = val("--split-rate")) || !num(v, 0, 1, d)) return false;
            o.split_rate = d;
        } else if (a == "--seed") {
            if (!(v = val("--seed")) || !num(v, 0, 1e18, d)) return false;
            o.seed = static_cast<uint64_t>(d);
        } else if (a == "--sync-timeout-ms") {
            if (!(v = val("--sync-timeout-ms")) || !num(v, 0, 600000, d)) return false;
            o.sync_timeout_ms = static_cast<int>(d);
        } else if (a == "--ready-fd") {
            if (!(v = val("--ready-fd")) || !num(v, 0, 1 << 20, d)) return false;
            o.ready_fd = static_cast<int>(d);
        } else if (a == "--split-bytes") {
            o.split_bytes = true;
        } else if (a == "--wide") {
            o.wide = true;
        } else if (a == "--verbose" || a == "-v") {
            o.verbose = true;
        } else {
            err = "unknown option: " + a;
            return false;
        }
    }
    return true;
}

int run(const Options& o) {
    Fabric f(o);
    return f.run();
}

}  // namespace velo::fabric
