// velo_open without a device: every way of asking for one that is not there gives its
// documented error (fabric absent, stale socket, unknown device strings, bad attributes).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "velo/velo.h"

namespace {

struct TmpDir {
    std::string path;
    TmpDir() {
        char t[] = "/tmp/velo-nodev-XXXXXX";
        path = mkdtemp(t);
    }
    ~TmpDir() { std::system(("rm -rf " + path).c_str()); }
};

int open_with(const char* device) {
    velo_open_attr_t a;
    velo_open_attr_init(&a);
    a.device = device;
    velo_ep_t* ep = reinterpret_cast<velo_ep_t*>(1);
    int r = velo_open(&a, &ep);
    EXPECT_EQ(ep, nullptr);
    return r;
}

}  // namespace

TEST(NoDevice, UnknownDeviceStrings) {
    EXPECT_EQ(open_with("bogus"), -EINVAL);
    EXPECT_EQ(open_with("hw:"), -EINVAL);
    EXPECT_EQ(open_with("sim:"), -EINVAL);
    EXPECT_EQ(open_with("tcp:host:1"), -EINVAL);
    setenv("VELO_DEVICE", "nonsense", 1);
    velo_ep_t* ep = nullptr;
    EXPECT_EQ(velo_open(nullptr, &ep), -EINVAL);
    unsetenv("VELO_DEVICE");
}

TEST(NoDevice, FabricAbsent) {
    TmpDir d;
    EXPECT_EQ(open_with(("sim:" + d.path + "/nothing.sock").c_str()), -ENODEV);
    EXPECT_EQ(open_with("sim:/nonexistent-dir/velo.sock"), -ENODEV);
    EXPECT_EQ(open_with("hw:/dev/velo-does-not-exist"), -ENODEV);
    EXPECT_EQ(open_with("hw:/dev/null"), -ENODEV) << "a file that is not a VELO device";
    // automatic: no /dev/velo0 on this machine, no fabric at the default socket
    if (access("/dev/velo0", F_OK) == 0) GTEST_SKIP() << "a VELO board is present";
    setenv("XDG_RUNTIME_DIR", d.path.c_str(), 1);
    velo_ep_t* ep = nullptr;
    int r = velo_open(nullptr, &ep);
    EXPECT_EQ(r, -ENODEV);
    std::string msg = velo_strerror(r);
    EXPECT_NE(msg.find("velo-fabric"), std::string::npos) << msg;
    EXPECT_NE(msg.find("velo-run"), std::string::npos) << msg;
}

TEST(NoDevice, StaleSocket) {
    TmpDir d;
    std::string p = d.path + "/stale.sock";
    int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    ASSERT_GE(s, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", p.c_str());
    ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    close(s);  // the file stays, nobody listens
    EXPECT_EQ(open_with(("sim:" + p).c_str()), -ECONNREFUSED);
}

TEST(NoDevice, BadAttributes) {
    velo_open_attr_t a;
    velo_open_attr_init(&a);
    velo_ep_t* ep = nullptr;
    a.device = "sim:/nonexistent/x";
    a.ring_log2 = 3;
    EXPECT_EQ(velo_open(&a, &ep), -EINVAL);
    a.ring_log2 = 17;
    EXPECT_EQ(velo_open(&a, &ep), -EINVAL);
    a.ring_log2 = 0;
    a.flags = 4;
    EXPECT_EQ(velo_open(&a, &ep), -EINVAL);
    a.flags = 0;
    a.node = -5;
    EXPECT_EQ(velo_open(&a, &ep), -EINVAL);
    a.node = -1;
    setenv("VELO_NODE", "abc", 1);
    EXPECT_EQ(velo_open(&a, &ep), -EINVAL);
    unsetenv("VELO_NODE");
    a.device = "hw:/dev/null";
    a.node = 1;
    EXPECT_EQ(velo_open(&a, &ep), -EINVAL) << "hw: the node is the board's";
}
