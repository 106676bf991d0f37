// QEMU's multi-process device channel, device side (mpqemu.hpp).
#include "mpqemu.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace velo::fabric::mpqemu {

long data_size(int32_t cmd) {
    switch (cmd) {
        case kSyncSysmem:
            return sizeof(SyncSysmem);
        case kCfgWrite:
        case kCfgRead:
            return sizeof(CfgData);
        case kBarWrite:
        case kBarRead:
            return sizeof(BarAccess);
        case kSetIrqfd:
        case kDeviceReset:
            return 0;
        default:
            return -1;
    }
}

const char* cmd_name(int32_t cmd) {
    static const char* const n[] = {"SYNC_SYSMEM", "RET",      "PCI_CFGWRITE", "PCI_CFGREAD",
                                    "BAR_WRITE",   "BAR_READ", "SET_IRQFD",    "DEVICE_RESET"};
    return cmd >= 0 && cmd < kCmdMax ? n[cmd] : "unknown";
}

Reader::~Reader() {
    drop_fds();
}

void Reader::drop_fds() {
    for (unsigned i = 0; i < nfds_; ++i) close(fds_[i]);
    nfds_ = 0;
}

Reader::Result Reader::read(int fd, Msg& out, std::string& err) {
    for (;;) {
        size_t want = sizeof(Header);
        if (have_ >= sizeof(Header)) {
            Header h;
            std::memcpy(&h, buf_, sizeof h);
            const long ds = data_size(h.cmd);
            if (ds < 0 || h.size != static_cast<uint64_t>(ds)) {
                err = std::string("malformed message: command ") + std::to_string(h.cmd) + " (" + cmd_name(h.cmd) +
                      ") with " + std::to_string(h.size) + " bytes of data";
                drop_fds();
                return Result::Error;
            }
            want += static_cast<size_t>(ds);
        }
        if (have_ == want) {
            std::memcpy(&out.h, buf_, sizeof(Header));
            std::memset(&out.d, 0, sizeof out.d);
            std::memcpy(&out.d, buf_ + sizeof(Header), want - sizeof(Header));
            out.nfds = nfds_;
            std::memcpy(out.fds, fds_, sizeof(int) * nfds_);
            nfds_ = 0;
            have_ = 0;
            return Result::Message;
        }
        iovec iov{buf_ + have_, want - have_};
        alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * kMaxFds)];
        msghdr mh{};
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        mh.msg_control = cbuf;
        mh.msg_controllen = sizeof cbuf;
        const ssize_t r = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return Result::Incomplete;
            if (errno == EINTR) continue;
            err = std::string("recvmsg: ") + std::strerror(errno);
            drop_fds();
            return Result::Error;
        }
        for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
            const size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < n; ++i) {
                int f;
                std::memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof f);
                if (nfds_ < kMaxFds)
                    fds_[nfds_++] = f;
                else
                    close(f);
            }
        }
        if (mh.msg_flags & MSG_CTRUNC) {
            err = "more file descriptors than a message may carry";
            drop_fds();
            return Result::Error;
        }
        if (r == 0) {
            drop_fds();
            return have_ ? Result::Error : Result::Closed;
        }
        have_ += static_cast<size_t>(r);
    }
}

bool send_ret(int fd, uint64_t v) {
    unsigned char b[sizeof(Header) + sizeof(uint64_t)];
    Header h{};
    h.cmd = kRet;
    h.size = sizeof(uint64_t);
    std::memcpy(b, &h, sizeof h);
    std::memcpy(b + sizeof h, &v, sizeof v);
    size_t off = 0;
    while (off < sizeof b) {
        const ssize_t r = send(fd, b + off, sizeof b - off, MSG_NOSIGNAL);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            pollfd p{fd, POLLOUT, 0};
            poll(&p, 1, 1000);
            continue;
        }
        if (r <= 0) return false;
        off += static_cast<size_t>(r);
    }
    return true;
}

}  // namespace velo::fabric::mpqemu
