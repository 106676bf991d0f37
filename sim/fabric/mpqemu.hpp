// QEMU 7.2's multi-process device channel (`-device x-pci-proxy-dev,fd=N`), as the device side
// speaks it: a stream socket carrying messages of a 16-byte header {int cmd; size_t size} and
// `size` bytes of data, with file descriptors as SCM_RIGHTS on the header. Commands (QEMU's
// include/hw/remote/mpqemu-link.h; the layout is that of QEMU's C structures on x86-64 Linux):
//   SYNC_SYSMEM   guest RAM as up to 8 (fd, offset, size, guest address) regions; replaces the
//                 whole previous set; no reply
//   PCI_CFGWRITE / PCI_CFGREAD   configuration space {addr, val, len}; reply RET (read: value)
//   BAR_WRITE / BAR_READ         {guest physical address, val, size 1..8, memory}; reply RET
//   SET_IRQFD     two eventfds (interrupt, resample) for KVM's irqfd; no reply
//   DEVICE_RESET  reply RET
// Every vCPU access is a blocking round trip: QEMU waits for the RET.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace velo::fabric::mpqemu {

enum Cmd : int32_t {
    kSyncSysmem = 0,
    kRet = 1,
    kCfgWrite = 2,
    kCfgRead = 3,
    kBarWrite = 4,
    kBarRead = 5,
    kSetIrqfd = 6,
    kDeviceReset = 7,
    kCmdMax = 8,
};
constexpr unsigned kMaxFds = 8;

struct SyncSysmem {
    uint64_t gpas[kMaxFds];
    uint64_t sizes[kMaxFds];
    int64_t offsets[kMaxFds];
};
struct CfgData {
    uint32_t addr;
    uint32_t val;
    int32_t len;
};
struct BarAccess {
    uint64_t addr;
    uint64_t val;
    uint32_t size;
    bool memory;
};
union Data {
    uint64_t u64;
    CfgData cfg;
    SyncSysmem sysmem;
    BarAccess bar;
};
struct Header {
    int32_t cmd;
    uint64_t size;  // size_t on x86-64
};
static_assert(sizeof(Header) == 16 && sizeof(SyncSysmem) == 192 && sizeof(CfgData) == 12 && sizeof(BarAccess) == 24 &&
                  sizeof(Data) == 192,
              "QEMU's MPQemuMsg layout is that of x86-64 Linux");

struct Msg {
    Header h{};
    Data d{};
    int fds[kMaxFds];
    unsigned nfds = 0;
};

// Reads one message's bytes as they come from a non-blocking socket.
class Reader {
  public:
    enum class Result { Incomplete, Message, Closed, Error };
    // Reads what is there; Message when `out` holds a whole message (its fds are the caller's
    // to close), Error with `err` set on a malformed message (the channel cannot recover).
    Result read(int fd, Msg& out, std::string& err);
    void reset() {  // forget a partial message (a new connection)
        drop_fds();
        have_ = 0;
    }
    ~Reader();

  private:
    void drop_fds();
    unsigned char buf_[sizeof(Header) + sizeof(Data)];
    size_t have_ = 0;
    int fds_[kMaxFds];
    unsigned nfds_ = 0;
};

// The expected data size of a command, or -1 if it varies / is not accepted from QEMU.
long data_size(int32_t cmd);
// Sends a RET carrying v (blocking, the whole message). False if the socket failed.
bool send_ret(int fd, uint64_t v);
const char* cmd_name(int32_t cmd);

}  // namespace velo::fabric::mpqemu
