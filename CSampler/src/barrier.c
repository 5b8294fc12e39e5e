// The expedited process-wide barrier (see sw_barrier.h). Never on a signal handler's path.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_barrier.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

static int g_registered = -ENOSYS;
static pthread_once_t g_register_once = PTHREAD_ONCE_INIT;

static void register_once(void) {
    long rc = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);
    g_registered = rc == 0 ? 0 : -errno;
}

int sw_barrier_register(void) {
    pthread_once(&g_register_once, register_once);
    return g_registered;
}

int sw_barrier_all_threads(void) {
    if (sw_barrier_register() != 0) return g_registered;
    return syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0 ? 0 : -errno;
}

#endif // SW_PLATFORM_SAMPLES
