// SPDX-License-Identifier: MIT
// velo-tap: Ethernet over VELO in user space (docs/ethernet.md). Joins a TAP device to a VELO
// network through libvelo, on any backend (the fabric, a board): frames the kernel sends on the
// TAP device go to the peer node's velo-tap as VELO messages (velo_eth_proto.h), frames from
// peers are written to the TAP device. IP, ARP, IPv6 neighbour discovery, bridges and VLANs work
// over it unchanged.
//
//   velo-tap [--dev NAME] [--instance I] [--mtu N] [--nodes N] [--up] [--stats-file F]
//
// Two threads: one reads the TAP device and sends (velo_send may be called from any thread), one
// receives (velo_wait) and writes the TAP device. Counters (frames, bytes, drops by reason) go to
// stdout on SIGUSR1 and at exit, and to --stats-file (rewritten every second) if given.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <net/if_arp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "velo/velo.h"
#include "velo_eth_proto.h"

#define MAX_NODES 256

static velo_ep_t* ep;
static velo_conn_t* conns[MAX_NODES];
static unsigned self, nodes, instance, mtu, vpid_bits;
static int tapfd = -1;
static volatile sig_atomic_t stop, dump;
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static struct velo_eth_stats st;
static const char* stats_file;
static uint64_t eagain_waits;

static void count_drop(enum velo_eth_drop d) {
    pthread_mutex_lock(&stats_lock);
    ++st.drops[d];
    pthread_mutex_unlock(&stats_lock);
}

static void print_stats(FILE* f) {
    pthread_mutex_lock(&stats_lock);
    fprintf(f,
            "tx_frames %llu\ntx_bytes %llu\ntx_flooded %llu\nrx_frames %llu\nrx_bytes %llu\nrx_csum_ok %llu\n"
            "tx_credit_waits %llu\n",
            (unsigned long long)st.tx_frames, (unsigned long long)st.tx_bytes, (unsigned long long)st.tx_flooded,
            (unsigned long long)st.rx_frames, (unsigned long long)st.rx_bytes, (unsigned long long)st.rx_csum_ok,
            (unsigned long long)eagain_waits);
    for (unsigned i = 0; i < VELO_ETH_DROP_NUM; ++i)
        fprintf(f, "drop_%s %llu\n", velo_eth_drop_names[i], (unsigned long long)st.drops[i]);
    pthread_mutex_unlock(&stats_lock);
    fflush(f);
}

static void write_stats_file(void) {
    if (!stats_file) return;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", stats_file);
    FILE* f = fopen(tmp, "w");
    if (!f) return;
    print_stats(f);
    fclose(f);
    rename(tmp, stats_file);
}

static void on_signal(int sig) {
    if (sig == SIGUSR1)
        dump = 1;
    else
        stop = 1;
}

// The connection to node n's interface endpoint, made on first use (NOWAIT: the receiving
// thread takes the answer; sends return -EAGAIN until then).
static velo_conn_t* conn_to(unsigned n) {
    if (conns[n]) return conns[n];
    velo_addr_t a = {n, VELO_ETH_VPID(vpid_bits, instance)};
    velo_conn_t* c = NULL;
    int r = velo_connect(ep, a, VELO_CONNECT_NOWAIT, &c);
    if (r) return NULL;
    conns[n] = c;
    return c;
}

// Send one message to node n; waits while the receiver has no room (credits: a full receiver
// slows the sender, nothing is lost). A node without an interface (refused, reset) loses the
// frame, as a cable to a switch port with nothing behind it does.
static int send_to(unsigned n, const uint8_t* b, size_t len) {
    velo_conn_t* c = conn_to(n);
    if (!c) return -ENOTCONN;
    for (int tries = 0;; ++tries) {
        int r = velo_send(c, b, len);
        if (r != -EAGAIN) {
            if (r == -ENOTCONN || r == -ECONNRESET) {
                // refused or the peer restarted: connect again next time
                velo_disconnect(c);
                conns[n] = NULL;
            }
            return r;
        }
        if (stop || tries > 200000) return -EAGAIN;  // ~ seconds without credit: the peer is gone
        __atomic_add_fetch(&eagain_waits, 1, __ATOMIC_RELAXED);
        if (tries > 100)
            usleep(tries > 1000 ? 1000 : 10);
        else
            sched_yield();
    }
}

static void* tx_thread(void* arg) {
    (void)arg;
    const size_t maxf = velo_eth_max_frame(mtu);
    uint8_t* buf = malloc(VELO_ETH_HDR_BYTES + maxf + 1);
    if (!buf) return NULL;
    while (!stop) {
        const ssize_t n = read(tapfd, buf + VELO_ETH_HDR_BYTES, maxf + 1);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            fprintf(stderr, "velo-tap: read %s\n", strerror(errno));
            stop = 1;
            break;
        }
        unsigned node = 0;
        enum velo_eth_drop drop = VELO_ETH_DROP_LONG;
        const enum velo_eth_dest d =
            velo_eth_tx(buf + VELO_ETH_HDR_BYTES, (size_t)n, instance, mtu, nodes, 0, buf, &node, &drop);
        if (d == VELO_ETH_TO_NONE) {
            count_drop(drop);
            continue;
        }
        const size_t len = VELO_ETH_HDR_BYTES + (size_t)n;
        int sent = 0, failed = 0;
        if (d == VELO_ETH_TO_NODE) {
            if (node == self) continue;  // to our own MAC: the kernel loops it back itself
            if (send_to(node, buf, len) == 0)
                ++sent;
            else
                ++failed;
        } else {
            for (unsigned k = 0; k < nodes; ++k) {
                if (k == self) continue;
                if (send_to(k, buf, len) == 0)
                    ++sent;
                else
                    ++failed;
            }
        }
        pthread_mutex_lock(&stats_lock);
        if (sent) {
            ++st.tx_frames;
            st.tx_bytes += (uint64_t)n;
            if (d == VELO_ETH_TO_ALL) ++st.tx_flooded;
        }
        if (failed && d == VELO_ETH_TO_NODE) ++st.drops[VELO_ETH_DROP_SEND_FAILED];
        pthread_mutex_unlock(&stats_lock);
    }
    free(buf);
    return NULL;
}

static int tap_open(const char* name, char* out_name) {
    int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "velo-tap: /dev/net/tun: %s (needs the tun module and CAP_NET_ADMIN)\n", strerror(errno));
        return -1;
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
        fprintf(stderr, "velo-tap: TUNSETIFF %s: %s\n", name, strerror(errno));
        close(fd);
        return -1;
    }
    snprintf(out_name, IFNAMSIZ, "%s", ifr.ifr_name);
    return fd;
}

static int tap_config(const char* name, int up) {
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) return -errno;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
    ifr.ifr_hwaddr.sa_family = ARPHRD_ETHER;
    velo_eth_mac((uint8_t*)ifr.ifr_hwaddr.sa_data, self, instance);
    int r = 0;
    if (ioctl(s, SIOCSIFHWADDR, &ifr) < 0) r = -errno;
    ifr.ifr_mtu = (int)mtu;
    if (!r && ioctl(s, SIOCSIFMTU, &ifr) < 0) r = -errno;
    if (!r && up) {
        if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0) r = -errno;
        ifr.ifr_flags |= IFF_UP;
        if (!r && ioctl(s, SIOCSIFFLAGS, &ifr) < 0) r = -errno;
    }
    close(s);
    return r;
}

static void usage(FILE* f) {
    fprintf(f,
            "usage: velo-tap [--dev NAME] [--instance I] [--mtu N] [--nodes N] [--up] [--stats-file F]\n"
            "  --dev NAME      the TAP device (default velo%%d: the kernel picks the number)\n"
            "  --instance I    interface instance 0..%u: its MAC 02:56:45:II:00:<node>, its vpid on every node\n"
            "  --mtu N         %u..%u (default %u; at most what velo_send carries)\n"
            "  --nodes N       nodes of the network (default: the fabric's; required on hardware)\n"
            "  --up            bring the device up (addresses: ip addr add ... dev NAME)\n"
            "  --stats-file F  write the counters to F every second\n"
            "  the VELO endpoint: VELO_DEVICE / VELO_NODE as for every libvelo program\n",
            VELO_ETH_INSTANCES - 1, VELO_ETH_MTU_MIN, VELO_ETH_MTU_MAX, VELO_ETH_MTU_DEFAULT);
}

int main(int argc, char** argv) {
    const char* dev = "velo%d";
    int up = 0;
    long opt_nodes = 0;
    mtu = VELO_ETH_MTU_DEFAULT;
    for (int i = 1; i < argc; ++i) {
        const char* a = argv[i];
        const int has = i + 1 < argc;
        char* end = NULL;
        if (!strcmp(a, "--dev") && has) {
            dev = argv[++i];
        } else if (!strcmp(a, "--instance") && has) {
            instance = (unsigned)strtoul(argv[++i], &end, 10);
            if (*end || instance >= VELO_ETH_INSTANCES) {
                fprintf(stderr, "velo-tap: --instance is 0..%u\n", VELO_ETH_INSTANCES - 1);
                return 2;
            }
        } else if (!strcmp(a, "--mtu") && has) {
            mtu = (unsigned)strtoul(argv[++i], &end, 10);
            if (*end || mtu < VELO_ETH_MTU_MIN || mtu > VELO_ETH_MTU_MAX) {
                fprintf(stderr, "velo-tap: --mtu is %u..%u\n", VELO_ETH_MTU_MIN, VELO_ETH_MTU_MAX);
                return 2;
            }
        } else if (!strcmp(a, "--nodes") && has) {
            opt_nodes = strtol(argv[++i], &end, 10);
            if (*end || opt_nodes < 2 || opt_nodes > MAX_NODES) {
                fprintf(stderr, "velo-tap: --nodes is 2..%d\n", MAX_NODES);
                return 2;
            }
        } else if (!strcmp(a, "--up")) {
            up = 1;
        } else if (!strcmp(a, "--stats-file") && has) {
            stats_file = argv[++i];
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "velo-tap: unknown option %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    // the endpoint first: its vpid depends on the NIC's vpid bits
    velo_open_attr_t at;
    velo_open_attr_init(&at);
    at.ring_log2 = 12;  // 4096 lines: room for a burst of frames from every peer
    velo_ep_t* probe = NULL;
    int r = velo_open(&at, &probe);
    if (r) {
        fprintf(stderr, "velo-tap: velo_open: %s\n", velo_strerror(r));
        return 1;
    }
    velo_info_t info;
    velo_info(probe, &info);
    vpid_bits = info.vpid_bits;
    velo_close(probe);
    at.vpid = (int)VELO_ETH_VPID(vpid_bits, instance);
    r = velo_open(&at, &ep);
    if (r) {
        fprintf(stderr, "velo-tap: velo_open of vpid %d (instance %u): %s\n", at.vpid, instance, velo_strerror(r));
        return 1;
    }
    velo_info(ep, &info);
    velo_addr_t me;
    velo_addr(ep, &me);
    self = me.node;
    nodes = opt_nodes ? (unsigned)opt_nodes : info.nodes;
    if (nodes < 2 || nodes > MAX_NODES) {
        fprintf(stderr, "velo-tap: how many nodes? (--nodes N: the %s backend does not know)\n", info.backend);
        return 2;
    }
    const size_t need = VELO_ETH_HDR_BYTES + velo_eth_max_frame(mtu);
    if (need > info.send_max) {
        fprintf(stderr, "velo-tap: MTU %u needs messages of %zu bytes; this endpoint sends at most %u (MTU <= %zu)\n",
                mtu, need, info.send_max,
                info.send_max > VELO_ETH_HDR_BYTES + VELO_ETH_HLEN + VELO_ETH_VLAN_HLEN
                    ? (size_t)info.send_max - VELO_ETH_HDR_BYTES - VELO_ETH_HLEN - VELO_ETH_VLAN_HLEN
                    : 0);
        return 2;
    }
    char name[IFNAMSIZ];
    tapfd = tap_open(dev, name);
    if (tapfd < 0) return 1;
    if ((r = tap_config(name, up)) < 0) {
        fprintf(stderr, "velo-tap: configuring %s: %s\n", name, strerror(-r));
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    uint8_t mac[6];
    velo_eth_mac(mac, self, instance);
    printf(
        "velo-tap: %s is node %u instance %u (MAC %02x:%02x:%02x:%02x:%02x:%02x, vpid %u), %u nodes, MTU %u, %s "
        "backend\n",
        name, self, instance, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5], me.vpid, nodes, mtu, info.backend);
    fflush(stdout);
    pthread_t tx;
    if (pthread_create(&tx, NULL, tx_thread, NULL)) {
        fprintf(stderr, "velo-tap: no thread\n");
        return 1;
    }
    // receive: this thread
    time_t last = time(NULL);
    while (!stop) {
        velo_msg_t m;
        r = velo_wait(ep, &m, 200);
        if (dump) {
            dump = 0;
            print_stats(stdout);
        }
        if (time(NULL) != last) {
            last = time(NULL);
            write_stats_file();
        }
        if (r == -ETIMEDOUT || r == -EAGAIN || r == -EINTR) continue;
        if (r < 0) {
            fprintf(stderr, "velo-tap: velo_wait: %s\n", velo_strerror(r));
            break;
        }
        const uint8_t* b = velo_msg_bytes(&m);
        const size_t len = velo_msg_size(&m);
        size_t off = 0;
        unsigned flags = 0;
        enum velo_eth_drop drop;
        if (velo_eth_rx(b, len, m.src_node, m.src_vpid, self, instance, mtu, vpid_bits, &off, &flags, &drop)) {
            count_drop(drop);
            continue;
        }
        if (write(tapfd, b + off, len - off) < 0) {
            // the device is down or the queue full: the kernel drops it, as a NIC's RX ring would
            count_drop(VELO_ETH_DROP_SEND_FAILED);
            continue;
        }
        pthread_mutex_lock(&stats_lock);
        ++st.rx_frames;
        st.rx_bytes += len - off;
        if (flags & VELO_ETH_F_CSUM_OK) ++st.rx_csum_ok;
        pthread_mutex_unlock(&stats_lock);
    }
    stop = 1;
    pthread_kill(tx, SIGTERM);  // out of its read()
    pthread_join(tx, NULL);
    print_stats(stdout);
    write_stats_file();
    close(tapfd);
    velo_close(ep);
    return 0;
}
