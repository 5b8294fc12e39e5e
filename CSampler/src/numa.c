#include "sw_numa.h"
#include <errno.h>
// Placeholder; implemented in its own change.
