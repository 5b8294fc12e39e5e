#include "sw_threads.h"
#include <errno.h>
// Placeholder; implemented in its own change.
