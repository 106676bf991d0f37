// SPDX-License-Identifier: MIT
// velo-run: start N processes bound to the nodes of a VELO cluster (by default a simulated one:
// a velo-fabric of its own), forward their output with a rank prefix, return the worst exit
// status, stop the fabric. See docs/simulator.md.
//
//   velo-run -n 2 -- ./velo-pingpong
//   velo-run -n 4 --nodes 2 --split-rate 0.01 -- ./my_program arg
//   velo-run --mpi -n 4 -- ./mpi_app          # one mpirun, ranks over the VELO BTL (docs/mpi.md)
//
// Each process gets VELO_DEVICE, VELO_NODE (= rank % nodes), VELO_RANK, VELO_SIZE, VELO_NODES.
// With --mpi, velo-run starts `mpirun -n N` instead (VELO_DEVICE and VELO_NODES exported; the BTL
// puts MPI rank r on node r % VELO_NODES).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef VELO_FABRIC_PATH
#define VELO_FABRIC_PATH ""
#endif
#ifndef VELO_BTL_BUILD_DIR
#define VELO_BTL_BUILD_DIR ""
#endif
// Open MPI 4.1's own component directory, kept in mca_base_component_path next to ours
#define VELO_OMPI_SYS_COMPONENTS "SYS_DEFAULT"

#define MAXRANK 1024

static void usage(FILE* f) {
    fprintf(f,
            "usage: velo-run -n N [options] -- program [args...]\n"
            "  -n N                 number of processes (ranks)\n"
            "  --nodes M            nodes of the started fabric (default: N, at least 2); rank r runs on\n"
            "                       node r %% M\n"
            "  --topology T         topology of the started fabric (pair, ring:M, torus:XxY)\n"
            "  --split-rate P       started fabric: flush that fraction of stores in two pieces\n"
            "  --fabric-arg ARG     pass ARG to the started velo-fabric (repeatable)\n"
            "  --device DEV         use this device instead of starting a fabric (sim:<socket>, hw:/dev/velo0);\n"
            "                       VELO_DEVICE in the environment does the same\n"
            "  --timeout SEC        kill everything after SEC seconds (exit status 124)\n"
            "  --keep-going         do not stop the other ranks when one fails\n"
            "  -q                   no rank prefixes\n"
            "  --mpi                run one `mpirun -n N` (ranks over the VELO BTL: OMPI_MCA_pml=ob1,\n"
            "                       OMPI_MCA_btl=self,velo unless set) instead of N processes; no rank prefixes\n"
            "  --mpirun PATH        mpirun to use (default: $VELO_MPIRUN, else mpirun in PATH)\n"
            "  --btl-path DIR       directory of mca_btl_velo.so (default: $VELO_BTL_PATH, else the build tree,\n"
            "                       else where Open MPI finds components by itself)\n"
            "  --mpi-arg ARG        pass ARG to mpirun (repeatable)\n"
            "Finds velo-fabric in $VELO_FABRIC, next to velo-run, in the build tree, or in PATH.\n");
}

static volatile sig_atomic_t got_signal;
static void on_signal(int s) {
    got_signal = s;
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char* find_fabric(char* buf, size_t n) {
    const char* e = getenv("VELO_FABRIC");
    if (e && *e) return e;
    char self[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k > 0) {
        self[k] = 0;
        char* slash = strrchr(self, '/');
        if (slash && (size_t)(slash - self) + sizeof "/velo-fabric" <= n) {
            memcpy(buf, self, (size_t)(slash - self));
            memcpy(buf + (slash - self), "/velo-fabric", sizeof "/velo-fabric");
            if (access(buf, X_OK) == 0) return buf;
        }
    }
    if (VELO_FABRIC_PATH[0] && access(VELO_FABRIC_PATH, X_OK) == 0) return VELO_FABRIC_PATH;
    return "velo-fabric";  // PATH
}

struct out {
    int fd;
    int rank;
    int err;  // stderr stream
    char buf[4096];
    size_t len;
};

static void emit(struct out* o, const char* s, size_t n, int quiet) {
    FILE* f = o->err ? stderr : stdout;
    if (quiet)
        fprintf(f, "%.*s\n", (int)n, s);
    else
        fprintf(f, "[%d] %.*s\n", o->rank, (int)n, s);
    fflush(f);
}

// Read what is there; print whole lines with the rank prefix. Returns 0 at EOF.
static int pump(struct out* o, int quiet) {
    ssize_t r = read(o->fd, o->buf + o->len, sizeof o->buf - o->len);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) return 1;
    if (r <= 0) {
        if (o->len) emit(o, o->buf, o->len, quiet);
        o->len = 0;
        return 0;
    }
    o->len += (size_t)r;
    size_t start = 0;
    for (size_t i = 0; i < o->len; ++i) {
        if (o->buf[i] == '\n') {
            emit(o, o->buf + start, i - start, quiet);
            start = i + 1;
        }
    }
    if (start == 0 && o->len == sizeof o->buf) {  // a line longer than the buffer
        emit(o, o->buf, o->len, quiet);
        start = o->len;
    }
    memmove(o->buf, o->buf + start, o->len - start);
    o->len -= start;
    return 1;
}

static pid_t start_fabric(const char* bin, const char* sock, unsigned nodes, const char* topology, const char* split,
                          char** extra, int nextra) {
    int p[2];
    if (pipe(p) < 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        char fdbuf[16], nbuf[16];
        snprintf(fdbuf, sizeof fdbuf, "%d", p[1]);
        snprintf(nbuf, sizeof nbuf, "%u", nodes);
        const char* av[64];
        int k = 0;
        av[k++] = bin;
        av[k++] = "--socket";
        av[k++] = sock;
        av[k++] = "--ready-fd";
        av[k++] = fdbuf;
        if (topology) {
            av[k++] = "--topology";
            av[k++] = topology;
        } else {
            av[k++] = "--nodes";
            av[k++] = nbuf;
        }
        if (split) {
            av[k++] = "--split-rate";
            av[k++] = split;
        }
        for (int i = 0; i < nextra && k < 62; ++i) av[k++] = extra[i];
        av[k] = NULL;
        execvp(bin, (char* const*)av);
        fprintf(stderr, "velo-run: cannot run %s: %s\n", bin, strerror(errno));
        _exit(127);
    }
    close(p[1]);
    char buf[16] = {0};
    struct pollfd pf = {p[0], POLLIN, 0};
    poll(&pf, 1, 300000);
    ssize_t n = read(p[0], buf, sizeof buf - 1);
    close(p[0]);
    if (n <= 0 || strcmp(buf, "ready\n") != 0) {
        int st;
        waitpid(pid, &st, 0);
        return -1;
    }
    return pid;
}

// The mpirun command line of --mpi: argv for execvp (static storage, NULL-terminated). The MCA
// settings go into the environment (mpirun passes OMPI_MCA_* on to the ranks), so that --mpi-arg
// --mca ... or the caller's own OMPI_MCA_* variables can override them: mpirun refuses an MCA
// parameter given twice on its command line.
static char** mpirun_argv(const char* mpirun, int n, char** mpi_args, int nmpi, char** prog) {
    static char* av[256];
    static char nbuf[16];
    int k = 0;
    av[k++] = (char*)mpirun;
    av[k++] = "-n";
    snprintf(nbuf, sizeof nbuf, "%d", n);
    av[k++] = nbuf;
    av[k++] = "--oversubscribe";  // simulated nodes, not cores: N ranks on this machine
    if (geteuid() == 0) av[k++] = "--allow-run-as-root";
    av[k++] = "-x";
    av[k++] = "VELO_DEVICE";
    av[k++] = "-x";
    av[k++] = "VELO_NODES";
    for (int i = 0; i < nmpi && k < 200; ++i) av[k++] = mpi_args[i];
    for (int i = 0; prog[i] && k < 254; ++i) av[k++] = prog[i];
    av[k] = NULL;
    return av;
}

// In the child that becomes mpirun: the MCA defaults of --mpi, unless already set.
static void mpi_env(const char* btl_dir) {
    setenv("OMPI_MCA_pml", "ob1", 0);
    setenv("OMPI_MCA_btl", "self,velo", 0);
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);  // ranks share the cores with the fabric
    if (btl_dir && *btl_dir) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s:%s", VELO_OMPI_SYS_COMPONENTS, btl_dir);
        setenv("OMPI_MCA_mca_base_component_path", path, 0);
    }
    unsetenv("VELO_NODE");  // the BTL places MPI rank r on node r % VELO_NODES
    unsetenv("VELO_RANK");
    unsetenv("VELO_SIZE");
}

static const char* find_btl_dir(const char* opt) {
    if (opt) return opt;
    const char* e = getenv("VELO_BTL_PATH");
    if (e && *e) return e;
    static char buf[PATH_MAX];
    if (VELO_BTL_BUILD_DIR[0]) {
        snprintf(buf, sizeof buf, "%s/mca_btl_velo.so", VELO_BTL_BUILD_DIR);
        if (access(buf, R_OK) == 0) return VELO_BTL_BUILD_DIR;
    }
    return NULL;  // installed where Open MPI looks (e.g. ~/.openmpi/components)
}

int main(int argc, char** argv) {
    int n = 0, quiet = 0, keep_going = 0, timeout_s = 0, mpi = 0;
    const char *mpirun = NULL, *btl_dir_opt = NULL;
    char* mpi_args[32];
    int nmpi = 0;
    unsigned nodes = 0;
    const char *topology = NULL, *split = NULL, *device = NULL;
    char* extra[32];
    int nextra = 0;
    int i = 1;
    for (; i < argc; ++i) {
        const char* a = argv[i];
        if (!strcmp(a, "--")) {
            ++i;
            break;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        int has = i + 1 < argc;
        if (!strcmp(a, "-n") && has) {
            n = atoi(argv[++i]);
        } else if (!strcmp(a, "--nodes") && has) {
            nodes = (unsigned)atoi(argv[++i]);
        } else if (!strcmp(a, "--topology") && has) {
            topology = argv[++i];
        } else if (!strcmp(a, "--split-rate") && has) {
            split = argv[++i];
        } else if (!strcmp(a, "--fabric-arg") && has && nextra < 32) {
            extra[nextra++] = argv[++i];
        } else if (!strcmp(a, "--device") && has) {
            device = argv[++i];
        } else if (!strcmp(a, "--timeout") && has) {
            timeout_s = atoi(argv[++i]);
        } else if (!strcmp(a, "--keep-going")) {
            keep_going = 1;
        } else if (!strcmp(a, "-q")) {
            quiet = 1;
        } else if (!strcmp(a, "--mpi")) {
            mpi = 1;
        } else if (!strcmp(a, "--mpirun") && has) {
            mpirun = argv[++i];
        } else if (!strcmp(a, "--btl-path") && has) {
            btl_dir_opt = argv[++i];
        } else if (!strcmp(a, "--mpi-arg") && has && nmpi < 32) {
            mpi_args[nmpi++] = argv[++i];
        } else {
            fprintf(stderr, "velo-run: unknown option %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (n < 1 || n > MAXRANK || i >= argc) {
        usage(stderr);
        return 2;
    }
    if (!nodes) nodes = n < 2 ? 2 : (unsigned)n;
    if (!device) device = getenv("VELO_DEVICE");
    if (device && !*device) device = NULL;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    char dir[] = "/tmp/velo-run-XXXXXX";
    char sock[PATH_MAX], devbuf[PATH_MAX + 8];
    pid_t fabric = -1;
    int own_dir = 0;
    if (!device) {
        own_dir = 1;
        if (!mkdtemp(dir)) {
            perror("velo-run: mkdtemp");
            return 1;
        }
        snprintf(sock, sizeof sock, "%s/fabric.sock", dir);
        char fb[PATH_MAX];
        const char* bin = find_fabric(fb, sizeof fb);
        fabric = start_fabric(bin, sock, nodes, topology, split, extra, nextra);
        if (fabric < 0) {
            fprintf(stderr, "velo-run: the fabric did not start (%s)\n", bin);
            rmdir(dir);
            return 1;
        }
        snprintf(devbuf, sizeof devbuf, "sim:%s", sock);
        device = devbuf;
    }

    // --mpi: one process (mpirun), which starts the n ranks itself
    const int nproc = mpi ? 1 : n;
    char** mpi_av = NULL;
    if (mpi) {
        quiet = 1;
        if (!mpirun) mpirun = getenv("VELO_MPIRUN");
        if (!mpirun || !*mpirun) mpirun = "mpirun";
        mpi_av = mpirun_argv(mpirun, n, mpi_args, nmpi, argv + i);
    }

    pid_t pids[MAXRANK];
    static struct out outs[2 * MAXRANK];  // 8 MB: not on the stack
    int nout = 0;
    int status[MAXRANK];
    int stopped[MAXRANK];  // stopped by velo-run: its signal status does not count
    for (int r = 0; r < nproc; ++r) {
        int po[2], pe[2];
        if (pipe(po) < 0 || pipe(pe) < 0) {
            perror("velo-run: pipe");
            return 1;
        }
        fflush(NULL);
        pid_t p = fork();
        if (p == 0) {
            char v[32];
            setpgid(0, 0);  // its own process group: velo-run stops the rank with all its children
            setenv("VELO_DEVICE", device, 1);
            snprintf(v, sizeof v, "%u", (unsigned)r % nodes);
            setenv("VELO_NODE", v, 1);
            snprintf(v, sizeof v, "%d", r);
            setenv("VELO_RANK", v, 1);
            snprintf(v, sizeof v, "%d", n);
            setenv("VELO_SIZE", v, 1);
            snprintf(v, sizeof v, "%u", nodes);
            setenv("VELO_NODES", v, 1);
            if (mpi) mpi_env(find_btl_dir(btl_dir_opt));
            dup2(po[1], 1);
            dup2(pe[1], 2);
            close(po[0]);
            close(po[1]);
            close(pe[0]);
            close(pe[1]);
            signal(SIGINT, SIG_DFL);
            signal(SIGTERM, SIG_DFL);
            signal(SIGPIPE, SIG_DFL);
            if (mpi) {
                execvp(mpi_av[0], mpi_av);
                fprintf(stderr, "velo-run: cannot run %s: %s (Debian: apt-get install openmpi-bin)\n", mpi_av[0],
                        strerror(errno));
                _exit(127);
            }
            execvp(argv[i], argv + i);
            fprintf(stderr, "velo-run: cannot run %s: %s\n", argv[i], strerror(errno));
            _exit(127);
        }
        close(po[1]);
        close(pe[1]);
        setpgid(p, p);
        pids[r] = p;
        status[r] = -1;
        stopped[r] = 0;
        outs[nout++] = (struct out){.fd = po[0], .rank = r, .err = 0, .len = 0};
        outs[nout++] = (struct out){.fd = pe[0], .rank = r, .err = 1, .len = 0};
    }

    const int64_t deadline = timeout_s > 0 ? now_ms() + (int64_t)timeout_s * 1000 : 0;
    int live_out = nout, running = nproc, worst = 0, killed = 0;
    int64_t hard_kill = 0;   // --mpi: SIGKILL this long after the SIGTERM of a timeout
    int64_t all_exited = 0;  // when the last process exited (its output may still be open)
    while (live_out > 0 || running > 0) {
        struct pollfd pf[2 * MAXRANK];
        int map[2 * MAXRANK], k = 0;
        for (int j = 0; j < nout; ++j)
            if (outs[j].fd >= 0) {
                pf[k] = (struct pollfd){outs[j].fd, POLLIN, 0};
                map[k++] = j;
            }
        poll(pf, (nfds_t)k, 100);
        for (int j = 0; j < k; ++j)
            if (pf[j].revents && !pump(&outs[map[j]], quiet)) {
                close(outs[map[j]].fd);
                outs[map[j]].fd = -1;
                --live_out;
            }
        int st;
        pid_t p;
        while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
            for (int r = 0; r < nproc; ++r) {
                if (pids[r] != p) continue;
                status[r] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                --running;
                if (status[r] > worst && !(stopped[r] && WIFSIGNALED(st))) worst = status[r];
                if (status[r] && !keep_going && !killed) {
                    if (!mpi)
                        fprintf(stderr, "velo-run: rank %d exited with status %d; stopping the others\n", r, status[r]);
                    for (int q = 0; q < nproc; ++q)
                        if (status[q] < 0) {
                            stopped[q] = 1;
                            kill(-pids[q], SIGTERM);
                        }
                    killed = 1;
                }
            }
            if (p == fabric) {
                fprintf(stderr, "velo-run: the fabric exited\n");
                fabric = -1;
            }
        }
        if (got_signal && !killed) {
            for (int q = 0; q < nproc; ++q)
                if (status[q] < 0) kill(-pids[q], (int)got_signal);
            killed = 1;
        }
        if (deadline && now_ms() > deadline && !killed) {
            fprintf(stderr, "velo-run: timeout after %d s\n", timeout_s);
            // mpirun stops its ranks on SIGTERM (it cannot on SIGKILL): that first, SIGKILL later
            for (int q = 0; q < nproc; ++q)
                if (status[q] < 0) kill(-pids[q], mpi ? SIGTERM : SIGKILL);
            if (mpi) hard_kill = now_ms() + 10000;
            killed = 1;
            worst = 124;
        }
        if (hard_kill && now_ms() > hard_kill) {
            for (int q = 0; q < nproc; ++q)
                if (status[q] < 0) kill(-pids[q], SIGKILL);
            hard_kill = 0;
        }
        // --mpi: ranks that outlive mpirun keep its output open; stopping the fabric ends them
        // (their VELO endpoints fail), and after that velo-run stops waiting for them
        if (mpi && running == 0 && live_out > 0) {
            if (!all_exited) {
                all_exited = now_ms();
            } else if (fabric > 0 && now_ms() - all_exited > 10000) {
                fprintf(stderr, "velo-run: processes left behind hold the output open; stopping the fabric\n");
                kill(fabric, SIGTERM);
                waitpid(fabric, NULL, 0);
                fabric = -1;
            } else if (now_ms() - all_exited > 20000) {
                for (int j = 0; j < nout; ++j)
                    if (outs[j].fd >= 0) {
                        close(outs[j].fd);
                        outs[j].fd = -1;
                    }
                live_out = 0;
            }
        }
    }
    if (fabric > 0) {
        kill(fabric, SIGTERM);
        int st;
        waitpid(fabric, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fprintf(stderr, "velo-run: the fabric did not exit cleanly\n");
    }
    if (own_dir) rmdir(dir);
    if (got_signal && worst == 0) worst = 128 + (int)got_signal;
    return worst;
}
