#include "sw_cpuclock.h"
#include <errno.h>
// Placeholder; implemented in its own change.
