// velo-fabric's private declarations, shared by its files (see fabric.hpp, docs/simulator.md):
// the node memory and RMA frames the fabric hands out, the clients and their endpoints, and the
// Fabric itself. Which file does what:
//   fabric.cpp   setup (socket, System, driver cores, info page), the run loop, the driver core's ops
//   clients.cpp  the control protocol on the Unix socket: requests, fd passing, client lifetime
//   stores.cpp   the clients' store channels: stores -> TLPs into the send windows, split injection
//   dma.cpp      node memory (the core's dma_alloc) and the NICs' DMA writes into it
//   rma.cpp      RMA: pinning registered memory, the NICs' DMA to and from clients' memory
//   options.cpp  the command line
//   guest.cpp    nodes served to QEMU guests: the device channel, BAR accesses, guest RAM
//                (pci_config.cpp: their configuration space; mpqemu.cpp: the channel's messages;
//                sim/model/wc_buffer.cpp: the CPU's write combining)
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "fabric.hpp"
#include "host.hpp"
#include "mpqemu.hpp"
#include "pci_config.hpp"
#include "system.hpp"
#include "tlp.hpp"
#include "velo/velo_hw.h"
#include "velo/velo_sim_proto.h"
#include "velo_core.h"
#include "wc_buffer.hpp"

namespace velo::fabric {

using velo::sim::HostReader;
using velo::sim::System;
using velo::sim::SystemConfig;
using velo::sim::Tlp;

class Fabric;

extern volatile bool g_verbose;

void logf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
int64_t now_ns();
int64_t now_ms();
void cpu_relax();
void futex_wake(volatile uint32_t* a);
int make_memfd(const char* name, size_t bytes, void** map);
// Clients may map it, but not writable (the fabric's own mapping stays writable).
void seal_readonly(int fd);

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
    // the node driver's secret for the core's PRF (region keys): from getrandom() at init
    unsigned char secret[16];
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

// A node whose NIC a QEMU guest drives (--qemu): its device channel, its configuration space,
// the guest's RAM as QEMU shared it, the CPU's write-combining buffers and the BAR read the
// guest's vCPU waits for.
struct GuestRam {
    uint64_t gpa = 0, size = 0;
    uint8_t* p = nullptr;  // guest address gpa
    void* map = nullptr;   // the mapping (from the page below p)
    size_t map_len = 0;
};
struct Guest {
    unsigned node = 0;
    std::string path;
    int listen_fd = -1, fd = -1;
    mpqemu::Reader rd;
    std::unique_ptr<PciConfig> cfg;
    std::unique_ptr<velo::sim::WcBuffers> wc;
    std::vector<GuestRam> ram;
    int irq_fd = -1, resample_fd = -1;
    // the BAR read in flight (the vCPU waits): one or two DW reads
    bool reading = false;
    unsigned parts = 0, got = 0, shift = 0, size = 0;
    uint8_t tags[2] = {};
    uint32_t vals[2] = {};
    uint64_t bar_writes = 0, bar_reads = 0, cfg_accesses = 0, unclaimed = 0, dma_dropped = 0, resets = 0;
};

struct Stats {
    uint64_t stores = 0, bad_stores = 0, splits = 0, dma_writes = 0, dma_unknown = 0, wakeups = 0, freezes = 0,
             freeze_timeouts = 0, clients = 0, client_deaths = 0;
    uint64_t rma_dma_writes = 0, rma_dma_reads = 0, rma_faults = 0, rma_unknown = 0, registers = 0;
};

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
    bool setup_jobs();
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
    template <class Done>
    bool spin_until(Done done);
    void update_info();
    // guest.cpp
    Guest* guest_of(unsigned node) const;
    bool setup_guests();
    bool guest_fd(int fd);  // an event on a guest's socket: true if fd was one
    void guest_msg(Guest& g, mpqemu::Msg& m);
    void guest_close(Guest& g, const char* why);
    void guest_sysmem(Guest& g, mpqemu::Msg& m);
    void guest_bar_write(Guest& g, uint64_t addr, uint64_t val, unsigned size);
    void guest_bar_read(Guest& g, uint64_t addr, unsigned size);
    void guest_cycle();  // at the start of every cycle: BAR reads answered, WC timeouts
    bool guests_busy() const;
    int guest_sleep_ms() const;  // how long the loop may sleep for the guests (-1: for ever)
    uint8_t* guest_ram(Guest& g, uint64_t a, size_t n);
    void guest_dma_write(Guest& g, const Tlp& t);
    bool guest_dma_read(Guest& g, uint64_t a, uint8_t* p, size_t n);

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
    int64_t spin_ns_ = 0;  // --spin-us
    std::mt19937_64 rng_;
    std::string sock_path_, lock_path_;
    int lock_fd_ = -1, listen_fd_ = -1, epfd_ = -1, doorbell_ = -1, sigfd_ = -1, info_fd_ = -1;
    velo_sim_info* info_ = nullptr;
    bool stop_ = false;
    uint64_t next_client_ = 1;
    Stats st_;
    std::vector<std::unique_ptr<Guest>> guests_;
    unsigned node_bits_ = 0, vpid_bits_ = 0;  // ID.CAPS of the NICs
    static constexpr size_t kQueue = 2;       // TLPs queued at a node's CPU port at once
};

}  // namespace velo::fabric
