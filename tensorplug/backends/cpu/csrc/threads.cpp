// How many threads the kernels run on right now.
//
// g_num_threads is the user's setting (tp.set_num_threads; by default every core). On a machine
// where other processes keep cores busy, a parallel region runs at the pace of its descheduled
// thread, and OpenBLAS splits each GEMM into equal shares, one per thread: with one of two cores
// taken, 2-thread kernels ran 4-13x slower than alone, where one thread loses only its share
// (issue 16). active_threads() lowers the count while others are busy. At most every
// kSampleNanos it compares the CPU time the whole machine spent (/proc/stat) with this process's
// own (CLOCK_PROCESS_CPUTIME_ID) over the last window (50 ms for the first): the difference is the other processes'
// load, in cores, and the cores left over are what the kernels use.
//
// Only the number of threads follows the load, never the chunking of the work: chunk boundaries
// depend on g_num_threads alone, so results do not change with the machine's load.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

#include <cblas.h>
#include <unistd.h>

#include "common.h"

namespace tp {

namespace {

// 50 ms: a longer window lagged behind the machine; a benchmark alternating two libraries (or a
// burst of data-loading work) left a quiet machine looking busy for the next 200 ms, and conv2d
// ran on one thread at twice PyTorch's time. /proc/stat counts 10 ms ticks, so shorter windows
// would be too coarse.
constexpr int64_t kSampleNanos = 50'000'000;
// The first window is shorter, so that a short program does not finish before the first answer
// (its estimate is coarser: /proc/stat counts in 10 ms ticks).
constexpr int64_t kFirstSampleNanos = 50'000'000;

int64_t monotonic_nanos() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

int64_t process_cpu_nanos() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// CPU time every core spent not idle (user, nice, system, irq, softirq, steal), in nanoseconds,
// or -1 where /proc/stat cannot be read (then the count stays at the user's setting).
int64_t machine_busy_nanos() {
    FILE* f = std::fopen("/proc/stat", "r");
    if (!f) return -1;
    unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    const int got = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system, &idle, &iowait,
                                &irq, &softirq, &steal);
    std::fclose(f);
    if (got < 4) return -1;
    static const long ticks_per_second = sysconf(_SC_CLK_TCK);
    const unsigned long long busy = user + nice + system + irq + softirq + steal;
    return int64_t(busy) * (1'000'000'000 / (ticks_per_second > 0 ? ticks_per_second : 100));
}

struct LoadMonitor {
    std::mutex sampling;  // one thread samples; the others use the last answer
    std::atomic<int64_t> next_sample{0};
    std::atomic<int> threads{0};  // 0: not decided yet (use g_num_threads)
    int64_t last_wall = 0, last_self = 0, last_busy = -1;
    int cores = 1;
    bool enabled = true;

    LoadMonitor() {
        const long online = sysconf(_SC_NPROCESSORS_ONLN);
        cores = online > 0 ? int(online) : 1;
        const char* env = std::getenv("TENSORPLUG_ADAPTIVE_THREADS");
        enabled = !(env && env[0] == '0');
    }

    void sample(int64_t now) {
        const int64_t busy = machine_busy_nanos(), self = process_cpu_nanos();
        if (last_busy >= 0 && now - last_wall > 2 * kSampleNanos) {
            // No kernel asked for a while: the window would mostly tell what other processes did
            // while this one waited (a benchmark's other library, a data-loading worker), not
            // what competes now. Start afresh with every thread and a short first window.
            threads.store(0, std::memory_order_relaxed);
            last_wall = now, last_self = self, last_busy = busy;
            next_sample.store(now + kFirstSampleNanos, std::memory_order_relaxed);
            return;
        }
        if (busy >= 0 && last_busy >= 0 && now > last_wall) {
            const double others = double((busy - last_busy) - (self - last_self)) / double(now - last_wall);
            // Round the free cores to the nearest whole one: a competitor using one core of two
            // leaves one; noise of a few ticks leaves both.
            const int free_cores = int(double(cores) - (others > 0 ? others : 0.0) + 0.5);
            threads.store(free_cores < 1 ? 1 : free_cores, std::memory_order_relaxed);
        }
        const bool first = last_busy < 0;
        last_wall = now, last_self = self, last_busy = busy;
        next_sample.store(now + (first ? kFirstSampleNanos : kSampleNanos), std::memory_order_relaxed);
    }
};

LoadMonitor& monitor() {
    static LoadMonitor m;
    return m;
}

std::atomic<int> g_blas_threads{0};

}  // namespace

int active_threads() {
    const int setting = g_num_threads;
    if (setting <= 1) return setting;
    LoadMonitor& m = monitor();
    if (!m.enabled) return setting;
    const int64_t now = monotonic_nanos();
    if (now >= m.next_sample.load(std::memory_order_relaxed)) {
        std::unique_lock<std::mutex> lock(m.sampling, std::try_to_lock);
        if (lock.owns_lock() && now >= m.next_sample.load(std::memory_order_relaxed)) m.sample(now);
    }
    const int allowed = m.threads.load(std::memory_order_relaxed);
    return allowed == 0 || allowed >= setting ? setting : allowed;
}

void sync_blas_threads() {
    const int n = active_threads();
    if (g_blas_threads.exchange(n, std::memory_order_relaxed) != n) scipy_openblas_set_num_threads(n);
}

void serial_blas() {
    if (g_blas_threads.exchange(1, std::memory_order_relaxed) != 1) scipy_openblas_set_num_threads(1);
}

void reset_thread_monitor() {
    g_blas_threads.store(0, std::memory_order_relaxed);
    monitor().next_sample.store(0, std::memory_order_relaxed);
}

bool adaptive_threads_enabled() { return monitor().enabled; }

}  // namespace tp
